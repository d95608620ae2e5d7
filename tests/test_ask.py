"""`pipeline ask` end to end: real retrieval on the corpus, the answer model played by a loopback stand-in.

Retrieval embeds with the stand-in embedding model (tests/embedding_stand_in.py); only the refusal
calibrated for the real model runs on the real model's corpus (slow).
"""
from __future__ import annotations

import json
import re
import socket

import pytest
from support.cli import run_cli

from pipeline.answering.answer import EXTRACTIVE_NOTE, NOT_FOUND, REWRITE_PROMPT, SYSTEM_PROMPT

try:
    from chat_stand_in import ChatStandIn
except ImportError:  # tests/ imported as a package
    from tests.chat_stand_in import ChatStandIn

KEY = "sk-test-ask-0123456789abcdef"
QUESTION = "Ile dni urlopu na żądanie mogę wziąć w ciągu roku?"
REPLY = ("Możesz wziąć nie więcej niż 4 dni urlopu na żądanie w roku kalendarzowym [DU/2025/277, art. 167^2]. "
         "Zgłaszasz go najpóźniej w dniu rozpoczęcia urlopu [DU/2025/277, art. 167^2].")
OFF_TOPIC = "Jakie jest ograniczenie prędkości na autostradzie?"
PRICE_IN, PRICE_OUT = 0.15, 0.6  # USD per 1M tokens


@pytest.fixture(scope="module")
def corpus(stand_in_corpus_url, embedding_stand_in) -> dict:
    """The environment of `pipeline ask` on the stand-in corpus, with no answer model configured."""
    return {"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()}


def model_env(corpus: dict, server: ChatStandIn, **extra: str) -> dict:
    return {**corpus, "ANSWER_BASE_URL": server.base_url, "ANSWER_MODEL": "test-model",
            "ANSWER_API_KEY": KEY, "ANSWER_PRICE_IN": str(PRICE_IN), "ANSWER_PRICE_OUT": str(PRICE_OUT), **extra}


def test_request_carries_rules_fragments_and_headers(corpus):
    with ChatStandIn(REPLY) as server:
        result = run_cli("ask", QUESTION, env=model_env(corpus, server))
    assert result.returncode == 0, result.stderr
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["model"] == "test-model" and body["temperature"] == 0
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert "[DU/2025/277, art. 154]" in system["content"] and NOT_FOUND in system["content"]
    content = user["content"]
    headers = re.findall(r"^Fragment (\d+): \[(DU/\d{4}/\d+), art\. ([^\]]+)\]", content, re.MULTILINE)
    assert [int(n) for n, _, _ in headers] == [1, 2, 3, 4, 5]
    assert ("DU/2025/277", "167^2") in [(a, n) for _, a, n in headers]
    # The fragment's own text travels with its header, and the question comes last.
    assert "nie więcej niż 4 dni urlopu w każdym roku kalendarzowym" in content
    assert content.rstrip().endswith(f"Pytanie: {QUESTION}")


def test_printed_answer_keeps_citations_tokens_and_cost(corpus):
    with ChatStandIn(REPLY) as server:
        result = run_cli("ask", QUESTION, env=model_env(corpus, server))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == REPLY
    usage = server.usage
    cost = (usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT) / 1e6
    assert f"tokens {usage['prompt_tokens']} in / {usage['completion_tokens']} out, cost ${cost:.6f}" in result.stderr
    assert "[DU/2025/277, art. 167^2]" in result.stderr  # the fragments list
    assert "Traceback" not in result.stderr and KEY not in result.stderr + result.stdout


def test_json_answer(corpus):
    with ChatStandIn(REPLY) as server:
        result = run_cli("ask", QUESTION, "--json", env=model_env(corpus, server))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    usage = server.usage
    assert out["answer"] == REPLY
    assert out["citations"] == [{"citation": "[DU/2025/277, art. 167^2]", "act": "DU/2025/277", "article": "167^2",
                                 "official": True}]
    assert all(f["citation"] == f"[{f['act']}, art. {f['article']}]" for f in out["fragments"])
    assert out["prompt_tokens"] == usage["prompt_tokens"] and out["completion_tokens"] == usage["completion_tokens"]
    assert out["cost_usd"] == pytest.approx((usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT) / 1e6)
    assert out["refused"] is False and out["model"] == "test-model"
    assert {"act": "DU/2025/277", "article": "167^2"} in [{"act": f["act"], "article": f["article"]} for f in out["fragments"]]
    assert out["top_similarity"] >= out["threshold"]
    # A well-cited answer: no citation is foreign, and no warning about citations.
    assert out["foreign_citations"] == [] and not any(w.startswith("Uwaga") for w in out["warnings"])


def test_made_up_and_missing_citations_are_warnings_in_json_and_on_stderr(corpus):
    made_up = "Przysługują 4 dni [DU/2025/277, art. 167^2, 999] oraz [Dz.U. 2020 poz. 1, art. 5]."
    with ChatStandIn(made_up) as server:
        as_json = run_cli("ask", QUESTION, "--json", env=model_env(corpus, server))
        printed = run_cli("ask", QUESTION, env=model_env(corpus, server))
    assert as_json.returncode == 0 and printed.returncode == 0, as_json.stderr + printed.stderr
    out = json.loads(as_json.stdout)
    assert [c["citation"] for c in out["foreign_citations"]] == ["[DU/2025/277, art. 999]", "[DU/2020/1, art. 5]"]
    (warning,) = [w for w in out["warnings"] if "spoza podanych fragmentów" in w]
    assert "[DU/2025/277, art. 999]" in warning and "[DU/2020/1, art. 5]" in warning
    assert "167^2" not in warning  # a fragment's article is not foreign
    assert warning in printed.stderr
    with ChatStandIn("Przysługują Ci 4 dni urlopu na żądanie.") as server:
        uncited = json.loads(run_cli("ask", QUESTION, "--json", env=model_env(corpus, server)).stdout)
    assert uncited["citations"] == [] and uncited["foreign_citations"] == [] and uncited["refused"] is False
    assert any("nie cytuje żadnego przepisu" in w for w in uncited["warnings"])


def test_doctor_reaches_the_answer_model(corpus):
    with ChatStandIn(REPLY) as server:  # it has no model list (GET is not served): it answered, so ok
        up = run_cli("doctor", "--json", env=model_env(corpus, server))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = run_cli("doctor", "--json", env={**corpus, "ANSWER_BASE_URL": f"http://127.0.0.1:{closed}/v1"})
    check = lambda done: next(c for c in json.loads(done.stdout) if c["name"] == "answer model")  # noqa: E731
    assert check(up)["status"] == "ok", up.stdout
    assert down.returncode == 1 and check(down)["status"] == "fail"
    assert f"cannot connect to http://127.0.0.1:{closed}/v1" in check(down)["detail"]


def test_a_stream_that_breaks_off_is_an_error_on_its_own_line(corpus):
    with ChatStandIn(REPLY, chunk_chars=5, stall_after=3, delay=5) as server:
        result = run_cli("ask", QUESTION, env=model_env(corpus, server, ANSWER_TIMEOUT="1"))
    assert result.returncode == 1
    assert result.stdout == REPLY[:15] + "\n"  # what arrived, then the line ended
    (error,) = [ln for ln in result.stderr.splitlines() if ln.startswith("Error:")]
    assert error.startswith("Error: the answer was cut off after 15 characters: no answer from"), error
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "stand_in, flags, words",
    [
        ({"fail": (500, "upstream exploded")}, [], "failed with 500: upstream exploded"),
        ({"api_key": "sk-the-right-key-000000"}, ["--no-stream"], "rejected the API key (401): check ANSWER_API_KEY"),
        ({"api_key": "sk-the-right-key-000000"}, ["--json"], "rejected the API key (401): check ANSWER_API_KEY"),
    ],
)
def test_model_errors_are_one_line_without_the_key(corpus, stand_in, flags, words):
    with ChatStandIn(REPLY, **stand_in) as server:
        result = run_cli("ask", QUESTION, *flags, env=model_env(corpus, server))
    assert result.returncode == 1
    assert server.requests  # the model was reached
    assert "Traceback" not in result.stderr
    error_lines = [ln for ln in result.stderr.splitlines() if ln.startswith("Error:")]
    assert len(error_lines) == 1 and words in error_lines[0], result.stderr
    assert KEY not in result.stderr + result.stdout  # the 401 body echoes the key sent; it must be scrubbed


def test_below_the_similarity_threshold_no_model_is_asked(corpus):
    # No best similarity on this corpus reaches 0.99 (e5's are about 0.80-0.90, the stand-in's lower);
    # a threshold above all of them must refuse before any request.
    with ChatStandIn(REPLY) as server:
        result = run_cli("ask", QUESTION, "--json", env=model_env(corpus, server, ANSWER_MIN_SIMILARITY="0.99"))
    assert result.returncode == 0, result.stderr
    assert server.requests == []
    out = json.loads(result.stdout)
    assert out["refused"] is True and out["answer"] == NOT_FOUND and out["model"] is None
    assert out["threshold"] == 0.99 and out["top_similarity"] < 0.99
    assert "no model was asked" in out["note"]


@pytest.mark.slow  # the threshold calibrated for the real model, on its corpus
def test_off_topic_question_is_refused_by_the_calibrated_threshold(corpus_url):
    with ChatStandIn(REPLY) as server:
        result = run_cli("ask", OFF_TOPIC, env=model_env({"DATABASE_URL": corpus_url}, server))
    assert result.returncode == 0, result.stderr
    assert server.requests == []
    assert result.stdout.strip() == NOT_FOUND
    assert "no model was asked" in result.stderr
    # search shows the nearest articles all the same, and says that ask would refuse
    found = run_cli("search", OFF_TOPIC, env={"DATABASE_URL": corpus_url})
    assert found.returncode == 0 and found.stdout.startswith(" 1. "), found.stderr
    assert "Warning: none of these articles looks like an answer (best similarity " in found.stderr
    assert "asked, pipeline would say the documents do not hold one" in found.stderr
    on_topic = run_cli("search", QUESTION, env={"DATABASE_URL": corpus_url})
    assert on_topic.returncode == 0 and "Warning" not in on_topic.stderr


def test_offline_answer_is_extractive_and_cited(corpus):
    result = run_cli("ask", QUESTION, env=corpus)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == EXTRACTIVE_NOTE
    assert any("4 dni urlopu" in ln and ln.endswith("[DU/2025/277, art. 167²]") for ln in lines)  # as a reader writes it
    assert "no model configured" in result.stderr

    as_json = run_cli("ask", QUESTION, "--json", env=corpus)
    assert as_json.returncode == 0, as_json.stderr
    out = json.loads(as_json.stdout)
    assert out["model"] is None and out["prompt_tokens"] is None and out["cost_usd"] is None
    assert {"citation": "[DU/2025/277, art. 167^2]", "act": "DU/2025/277", "article": "167^2", "official": True} in out["citations"]


def test_offline_flag_never_calls_the_configured_model(corpus):
    with ChatStandIn(REPLY) as server:
        result = run_cli("ask", QUESTION, "--offline", env=model_env(corpus, server))
    assert result.returncode == 0, result.stderr
    assert server.requests == []
    assert result.stdout.startswith(EXTRACTIVE_NOTE)
    # A model is configured: the note says it was not asked, not that there is none.
    assert "(offline: no model asked; extractive answer)" in result.stderr and "no model configured" not in result.stderr


REWRITTEN = "wymiar urlopu na żądanie w roku kalendarzowym"


def _reply(body: dict) -> str:
    return REWRITTEN if body["messages"][0]["content"] == REWRITE_PROMPT else REPLY


def test_rewrite_sends_a_rewrite_request_first(corpus):
    with ChatStandIn(_reply) as server:
        result = run_cli("ask", QUESTION, "--rewrite", "--json", env=model_env(corpus, server))
    assert result.returncode == 0, result.stderr
    rewrite, answer = server.requests
    assert rewrite.body["messages"] == [{"role": "system", "content": REWRITE_PROMPT},
                                        {"role": "user", "content": QUESTION}]
    # Retrieval used the rewritten query; the model is still asked the user's own question.
    assert answer.body["messages"][0]["content"] == SYSTEM_PROMPT
    assert answer.body["messages"][1]["content"].rstrip().endswith(f"Pytanie: {QUESTION}")
    out = json.loads(result.stdout)
    assert out["searched"] == REWRITTEN and out["question"] == QUESTION
    assert out["answer"] == REPLY


def test_rewrite_without_a_model_is_a_usage_error(corpus):
    result = run_cli("ask", QUESTION, "--rewrite", env=corpus)
    assert result.returncode == 2
    assert "--rewrite needs a model" in result.stderr and "Traceback" not in result.stderr
