"""Issue 10: the dev-set split of `pipeline eval`, per-arm reports, and the one refusal rule of ask and eval."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import EVAL_DIR

from pipeline.retrieval.evaluate import EvalError, Question, recall_ks, select_ids
from pipeline.retrieval.refusal import decide, min_similarity
from pipeline.retrieval.search import Hit, ModelProfile, profile

SEED_FILE = EVAL_DIR / "seed_questions.pl.jsonl"
OFF_TOPIC = "Jak zrobić dobrą pizzę neapolitańską w domowym piekarniku?"


def _q(qid: str) -> Question:
    return Question(qid, "pytanie", [("DU/2025/277", "154")], True)


def _hit(similarity: float | None, vector_rank: int | None, text_rank: int | None, best: float | None) -> Hit:
    return Hit(1, "DU/2025/277", None, "154", 1, "tekst", similarity, 1.0 if text_rank else None, 0.1,
               vector_rank, text_rank, best)


# --- the split ---------------------------------------------------------------------------------


def test_ids_split_by_their_last_number():
    qs = [_q(i) for i in ("dev-001", "dev-002", "dev-010", "dev-011", "seed-08")]
    assert [q.id for q in select_ids(qs, "odd")] == ["dev-001", "dev-011"]
    assert [q.id for q in select_ids(qs, "even")] == ["dev-002", "dev-010", "seed-08"]
    assert select_ids(qs, "all") == qs
    with pytest.raises(EvalError, match="has no number"):
        select_ids([_q("abc")], "odd")
    with pytest.raises(EvalError, match="no question has an even id"):
        select_ids([_q("dev-001")], "even")


def test_recall_is_reported_at_the_k_asked_for():
    assert recall_ks(10) == [1, 5, 10]
    assert recall_ks(3) == [1, 3]
    assert recall_ks(20) == [1, 5, 10, 20]
    assert recall_ks(1) == [1]


def test_eval_ids_option_checks_its_value(tmp_path, scratch_url):
    result = run_cli("eval", str(tmp_path / "x.jsonl"), "--ids", "third", env={"DATABASE_URL": scratch_url})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--ids" in result.stderr


# --- the refusal rule --------------------------------------------------------------------------


def test_refusal_rule_signals():
    model = "multilingual-e5-small"
    floor = profile(model).min_similarity
    assert decide([], model).refused
    # No vector similarity among the candidates: nothing shows that the question is covered.
    assert decide([_hit(None, None, 1, None)], model).refused
    below = decide([_hit(floor - 0.01, 1, 1, floor - 0.01)], model)
    assert below.refused and "best similarity" in below.reason and below.min_similarity == floor
    above = decide([_hit(0.99, 1, 1, 0.99)], model)
    assert not above.refused and above.agreement is True


def test_arms_that_disagree_refuse_below_the_confident_similarity(monkeypatch):
    prof = ModelProfile(min_similarity=0.80, confident_similarity=0.90, agree_top=3, agree_depth=5)
    monkeypatch.setitem(__import__("pipeline.retrieval.search", fromlist=["MODEL_PROFILES"]).MODEL_PROFILES, "m", prof)
    apart = [_hit(0.88, 1, None, 0.88), _hit(None, None, 1, 0.88), _hit(0.87, 9, 40, 0.88)]
    verdict = decide(apart, "m")
    assert verdict.refused and verdict.agreement is False and "agree on no article" in verdict.reason
    # Above the confident similarity disagreement alone does not refuse.
    sure = [_hit(0.93, 1, None, 0.93), _hit(None, None, 1, 0.93)]
    assert not decide(sure, "m").refused
    # The arms agree on the second hit: answered.
    together = [_hit(0.88, 1, None, 0.88), _hit(0.87, 2, 3, 0.88)]
    assert not decide(together, "m").refused


def test_min_similarity_can_be_overridden_and_checked():
    assert min_similarity("multilingual-e5-small", {"ANSWER_MIN_SIMILARITY": "0.9"}) == 0.9
    assert min_similarity("no-such-model", {}) == profile(None).min_similarity
    with pytest.raises(ValueError, match="ANSWER_MIN_SIMILARITY must be a number"):
        min_similarity("bge-m3", {"ANSWER_MIN_SIMILARITY": "high"})


# --- on real data (Kodeks pracy + patient rights, real e5 vectors) -----------------------------


@pytest.fixture(scope="module")
def seed_file() -> Path:
    if not SEED_FILE.is_file():
        pytest.skip(f"development questions not found at {SEED_FILE}")
    return SEED_FILE


def test_eval_reports_each_arm_and_fused_on_one_half(corpus_url, seed_file):
    result = run_cli("eval", str(seed_file), "--ids", "odd", "-k", "7", "--json", env={"DATABASE_URL": corpus_url})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ids"] == "odd"
    assert [q["id"] for q in report["questions"]] == ["seed-01", "seed-03", "seed-05", "seed-07", "seed-09",
                                                      "seed-11"]
    # The local model has a sparse head: its arm is reported too.
    assert report["modes"] == ["hybrid", "vector", "text", "sparse"]
    for mode in report["modes"]:
        assert set(report["metrics"][mode]) == {"recall@1", "recall@5", "recall@7", "mrr"}
    human = run_cli("eval", str(seed_file), "--ids", "even", "-k", "7", env={"DATABASE_URL": corpus_url})
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[0].startswith("5 questions (even ids); 3 answerable")
    assert lines[1].split() == ["mode", "R@1", "R@5", "R@7", "MRR"]
    assert [ln.split()[0] for ln in lines[2:6]] == ["hybrid", "vector", "text", "sparse"]


def test_eval_scores_a_question_when_any_gold_act_is_stored_and_records_its_overrides(corpus_url, tmp_path):
    questions = tmp_path / "q.jsonl"
    row = {"id": "q-1", "question": "Ile dni urlopu na żądanie mogę wziąć w ciągu roku?", "answerable": True,
           "expect": [{"act": "DU/2025/277", "art": "167^2"}, {"act": "DU/1999/1", "art": "1"}]}  # 1 of 2 stored
    questions.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    env = {"DATABASE_URL": corpus_url}
    result = run_cli("eval", str(questions), "--mode", "text", "--text-weight", "0.5", "--json", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["metrics"]["answerable_scored"] == 1 and report["questions"][0]["in_corpus"] is True
    assert report["settings"] == {"text_weight": 0.5} and report["warnings"] == []
    human = run_cli("eval", str(questions), "--mode", "text", "--fetch-k", "60", env=env)
    assert human.returncode == 0 and human.stdout.splitlines()[0] == "overrides: fetch_k 60", human.stderr
    nothing = run_cli("eval", str(questions), "--mode", "hybrid", "--vector-weight", "0", "--text-weight", "0",
                      "--sparse-weight", "0", env=env)
    assert nothing.returncode == 2
    assert nothing.stderr.strip().splitlines()[-1] == (
        "Error: the arms' weights cannot all be 0: nothing would rank the hits")


def test_ask_and_eval_refuse_by_the_same_rule(corpus_url, tmp_path):
    questions = tmp_path / "q.jsonl"
    rows = [{"id": "q-1", "question": OFF_TOPIC, "expect": [], "answerable": False},
            {"id": "q-2", "question": "Ile dni urlopu na żądanie mogę wziąć w ciągu roku?",
             "expect": [{"act": "DU/2025/277", "art": "167^2"}], "answerable": True}]
    questions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = run_cli("eval", str(questions), "--mode", "text", "--json", env={"DATABASE_URL": corpus_url})
    assert result.returncode == 0, result.stderr
    judged = {q["id"]: q for q in json.loads(result.stdout)["questions"]}
    assert judged["q-1"]["refused"] is True and judged["q-2"]["refused"] is False
    for row in rows:
        asked = run_cli("ask", row["question"], "--offline", "--json", env={"DATABASE_URL": corpus_url})
        assert asked.returncode == 0, asked.stderr
        out = json.loads(asked.stdout)
        assert out["refused"] is judged[row["id"]]["refused"]
        assert out["refusal"]["reason"] == judged[row["id"]]["refusal_reason"]
        assert out["top_similarity"] == pytest.approx(judged[row["id"]]["top_similarity"])
