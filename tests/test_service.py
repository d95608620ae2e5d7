"""pipeline.Service, the object behind every face: its records have the keys docs/results.md lists,
its limits are core.limits', and it shares its connections between threads. Real PostgreSQL, the
two-act corpus embedded with the stand-in model."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import get_type_hints

import pytest
from embedding_stand_in import StandInEmbedder

import pipeline
from pipeline import Service
from pipeline.core.errors import ArticleNotFound, UsageError
from pipeline.core.limits import MAX_K
from pipeline.service.results import ActRecord, ArticleRecord, HitRecord

KP = "DU/2025/277"
QUESTION = "Ile dni urlopu wypoczynkowego przysługuje po 10 latach pracy?"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "results.md"


@pytest.fixture(scope="module")
def law(stand_in_corpus_url):
    with Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=2) as service:
        yield service


def keys(record_type: type) -> list[str]:
    return list(get_type_hints(record_type))


def test_records_have_the_documented_keys(law):
    found = law.search(QUESTION, k=3)
    assert found.hits and found.hits[0].act == KP
    records = found.records()
    assert [r["rank"] for r in records] == [1, 2, 3]
    assert all(list(r) == keys(HitRecord) for r in records)
    assert records[0]["citation"] == f"[{KP}, art. {records[0]['article']}]"
    assert records[0]["currency"]["eli"] == KP and records[0]["currency_note"] == records[0]["currency"]["note"]
    # The envelope MCP search_law returns, made by the same object.
    assert set(found.to_dict()) == {"query", "mode", "as_of", "acts", "hits", "warnings"}

    article = law.show(KP, "151^1")
    assert list(article) == keys(ArticleRecord)
    assert article["citation"] == f"[{KP}, art. 151^1]" and article["text"].startswith("Art. 151")

    acts = law.acts()
    assert {a["act"] for a in acts} == {KP, "DU/2024/581"}
    assert all(list(a) == keys(ActRecord) for a in acts)
    kp = next(a for a in acts if a["act"] == KP)
    assert kp["base_act"] == "DU/1974/141" and kp["article_count"] > 500 and kp["versions"][0]["act"] == KP

    # docs/results.md names every key of every record, so a key added here must be documented there.
    text = DOCS.read_text(encoding="utf-8")
    for record in (HitRecord, ArticleRecord, ActRecord):
        missing = [k for k in keys(record) if f"`{k}`" not in text]
        assert missing == [], (record.__name__, missing)
    json.dumps(found.to_dict(), default=pipeline.json_default)  # serialisable as the faces write it


def test_limits_and_errors_are_the_same_as_on_every_face(law):
    with pytest.raises(UsageError, match=f"k must be a whole number from 1 to {MAX_K}"):
        law.search(QUESTION, k=MAX_K + 1)
    with pytest.raises(UsageError, match="the question is empty"):
        law.search("\u200b ")
    with pytest.raises(ArticleNotFound):
        law.show(KP, "9999")
    with pytest.raises(UsageError, match="not an article number"):
        law.show(KP, "art. x")
    assert law.search(QUESTION, k=MAX_K, mode="text").hits  # the limit itself is allowed


def test_threads_share_the_pool(law):
    """Each call takes a connection of its own from the pool: concurrent callers all get answers."""
    results: list[str] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            results.append(law.show(KP, "154")["article"])
        except BaseException as exc:  # a failure in a thread must reach the test
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == ["154"] * 6


def test_ask_offline_quotes_the_article_named(law):
    """(The stand-in model's similarities are below the refusal floor: a named article is answered anyway.)"""
    asked = law.ask("Co stanowi art. 154 kp?", offline=True)
    assert asked.answer.model is None and not asked.answer.refused
    assert asked.answer.citations[0] == (KP, "154")
    assert asked.to_dict()["citations"][0]["citation"] == f"[{KP}, art. 154]"
