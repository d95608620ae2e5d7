"""`pipeline eval` on the development questions (shared/eval) against the corpus database.

The report's logic is checked on the stand-in model's corpus (and again, slow, on the real model's);
whether the gold articles rank high is a property of the real model, so that runs on its corpus only.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import CORPUS_ACTS, EVAL_DIR
from embedding_stand_in import MODEL as STAND_IN_MODEL

from pipeline.retrieval.evaluate import EvalError, load_questions

SEED_FILE = EVAL_DIR / "seed_questions.pl.jsonl"
MODES = ("hybrid", "vector", "text")


def _seed_rows() -> list[dict]:
    if not SEED_FILE.is_file():
        return []
    return [json.loads(line) for line in SEED_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def require_seed() -> Path:
    if not SEED_FILE.is_file():
        if os.environ.get("PIPELINE_SHARED"):
            pytest.fail(f"PIPELINE_SHARED is set but {SEED_FILE} is missing")
        pytest.skip(f"development questions not found at {SEED_FILE}")
    return SEED_FILE


def _report(env: dict) -> dict:
    result = run_cli("eval", str(require_seed()), "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def report(corpus_url) -> dict:
    """The report of the real model (multilingual-e5-small) on its corpus."""
    return _report({"DATABASE_URL": corpus_url})


@pytest.fixture(scope="module", params=["stand-in", pytest.param("e5", marks=pytest.mark.slow)])
def any_report(request) -> tuple[str, dict]:
    """(model, report): the stand-in model's report, and the real model's (slow)."""
    if request.param == "e5":
        return "multilingual-e5-small", request.getfixturevalue("report")
    env = {"DATABASE_URL": request.getfixturevalue("stand_in_corpus_url"),
           **request.getfixturevalue("embedding_stand_in").env()}
    return STAND_IN_MODEL, _report(env)


def test_report_has_metrics_for_every_mode(any_report):
    model, report = any_report
    assert report["k"] == 10 and report["model"] == model
    m = report["metrics"]
    assert (m["answerable_scored"], m["answerable_not_in_corpus"], m["unanswerable"]) == (7, 3, 1)
    scored = [q for q in report["questions"] if q["answerable"] and q["in_corpus"]]
    for mode in MODES:
        ranks = [q["ranks"][mode] for q in scored]
        # The metrics are what the per-question ranks say.
        assert m[mode]["recall@1"] == pytest.approx(sum(1 for r in ranks if r == 1) / 7)
        assert m[mode]["recall@5"] == pytest.approx(sum(1 for r in ranks if r and r <= 5) / 7)
        assert m[mode]["recall@10"] == pytest.approx(sum(1 for r in ranks if r and r <= 10) / 7)
        assert m[mode]["mrr"] == pytest.approx(sum(1 / r for r in ranks if r) / 7)
        assert 0 < m[mode]["recall@10"] <= 1
    # The refusal rates are what the per-question refusals say (each question judged, none skipped).
    unanswerable = [q for q in report["questions"] if not q["answerable"]]
    answerable = [q for q in scored if q["refused"] is not None]
    assert len(answerable) == len(scored) and all(q["refused"] is not None for q in unanswerable)
    assert m["refusal_rate_unanswerable"] == pytest.approx(sum(q["refused"] for q in unanswerable) / len(unanswerable))
    assert m["false_refusal_rate"] == pytest.approx(sum(q["refused"] for q in answerable) / len(answerable))


def test_questions_of_missing_acts_are_not_in_corpus(any_report):
    _, report = any_report
    by_id = {q["id"]: q for q in report["questions"]}
    assert list(by_id) == [row["id"] for row in _seed_rows()]
    for qid in ("seed-09", "seed-10", "seed-11"):  # the tenant protection act DU/2023/725 is not ingested
        assert by_id[qid]["answerable"] is True and by_id[qid]["in_corpus"] is False
    assert by_id["seed-08"]["answerable"] is False
    assert all(by_id[f"seed-0{i}"]["in_corpus"] for i in range(1, 8))
    # Every question has a hybrid similarity to judge refusals by.
    assert all(0 < q["top_similarity"] <= 1 for q in report["questions"])


def _answerable_in_corpus() -> list:
    params = []
    for row in _seed_rows():
        acts = {e["act"] for e in row.get("expect", [])}
        if row.get("answerable") and acts and acts <= set(CORPUS_ACTS):
            params.append(pytest.param(row["id"], id=row["id"]))
    return params


@pytest.mark.slow
@pytest.mark.parametrize("qid", _answerable_in_corpus())
def test_gold_article_is_in_the_hybrid_top_5(report, qid):
    (q,) = [q for q in report["questions"] if q["id"] == qid]
    assert q["in_corpus"]
    rank = q["ranks"]["hybrid"]
    assert rank is not None and rank <= 5, f"{qid}: hybrid rank {rank}, ranks {q['ranks']}"


def test_human_table_lists_every_question(stand_in_corpus_url, embedding_stand_in):
    result = run_cli("eval", str(require_seed()),
                     env={"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("11 questions (all ids); 7 answerable with their act in the database, "
                        "3 whose act is not ingested (not scored), 1 unanswerable")
    assert [ln.split()[0] for ln in lines[2:5]] == list(MODES)
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.startswith("seed-")}
    assert list(rows) == [row["id"] for row in _seed_rows()]
    assert rows["seed-08"][1:4] == ["n/a"] * 3
    for qid in ("seed-09", "seed-10", "seed-11"):
        assert rows[qid][1:7] == ["no", "act"] * 3
    assert rows["seed-03"][1:4] != [">10"] * 3


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [
        (('{"id": "a", "question": "Ile dni urlopu?", "expect": [{"act": "DU/2025/277", "art": "154"}]}\n'
          '{"id": "b", "question": "Ile\n'), "bad.jsonl:2: not a question record (JSONDecodeError"),
        ('{"id": "a", "expect": [{"act": "DU/2025/277", "art": "154"}]}\n',
         "bad.jsonl:1: not a question record (KeyError: 'question')"),
        ('{"id": "a", "question": "x", "expect": [{"act": "DU/2025/277; DROP", "art": "154"}]}\n',
         "bad.jsonl:1: not a question record (InvalidActId"),
        ('{"id": "a", "question": "x", "answerable": true}\n',
         "bad.jsonl:1: answerable question with no expected article"),
        ('["just", "a", "list"]\n', "bad.jsonl:1: not a question record"),
        # Each of these used to be scored silently, changing what the figures mean.
        ('{"id": "a", "question": "Ile dni urlopu?"}\n', "bad.jsonl:1: neither expect nor answerable"),
        ('{"id": "a", "question": "x", "answerable": false, "expect": [{"act": "DU/2025/277", "art": "154"}]}\n',
         "bad.jsonl:1: an unanswerable question with expected articles"),
        ('{"id": "a", "question": "x", "answerable": false}\n{"id": "a", "question": "y", "answerable": false}\n',
         "bad.jsonl:2: id 'a' is used on line 1 too"),
        ('{"id": "a", "question": "  ", "answerable": false}\n', "bad.jsonl:1: the question is empty"),
    ],
)
def test_malformed_file_is_a_usage_error(tmp_path, scratch_url, content, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(EvalError) as info:
        load_questions(bad)
    assert str(info.value).startswith(message)
    result = run_cli("eval", str(bad), env={"DATABASE_URL": scratch_url})
    assert result.returncode == 2  # click's UsageError
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"Error: {info.value}"


@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_empty_file_is_an_error(tmp_path, scratch_url, content):
    empty = tmp_path / "empty.jsonl"
    empty.write_text(content, encoding="utf-8")
    result = run_cli("eval", str(empty), env={"DATABASE_URL": scratch_url})
    assert result.returncode == 2
    assert "holds no questions" in result.stderr and "Traceback" not in result.stderr


def test_missing_file_is_an_error(tmp_path, scratch_url):
    result = run_cli("eval", str(tmp_path / "nope.jsonl"), env={"DATABASE_URL": scratch_url})
    assert result.returncode == 2
    assert "nope.jsonl" in result.stderr and "Traceback" not in result.stderr


def test_a_gold_article_its_act_lacks_is_a_warning_and_no_figure_without_scored_questions(
        tmp_path, stand_in_corpus_url, embedding_stand_in):
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"id": "q1", "question": "Ile dni urlopu?", "expect": [{"act": "DU/2025/277", "art": "99999"}]}\n'
        '{"id": "q2", "question": "Ile kosztuje paszport?", "answerable": false}\n', encoding="utf-8")
    env = {"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()}
    report = json.loads(run_cli("eval", str(questions), "--json", "--mode", "text", env=env).stdout)
    assert "q1: DU/2025/277 has no art. 99999" in report["warnings"]
    only_unanswerable = tmp_path / "u.jsonl"
    only_unanswerable.write_text('{"id": "u1", "question": "Ile kosztuje paszport?", "answerable": false}\n',
                                 encoding="utf-8")
    done = run_cli("eval", str(only_unanswerable), "--json", "--mode", "text", env=env)
    text = run_cli("eval", str(only_unanswerable), "--mode", "text", env=env)
    assert done.returncode == 0 and text.returncode == 0, done.stderr + text.stderr
    figures = json.loads(done.stdout)["metrics"]["text"]
    assert figures["mrr"] is None and all(v is None for v in figures.values())  # no question scored: no figure
    assert re.search(r"^text\s+-\s+-\s+-\s+-$", text.stdout, re.MULTILINE), text.stdout
