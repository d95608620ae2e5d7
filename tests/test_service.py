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


def _in_threads(n: int, fn) -> list[BaseException]:
    """``fn()`` in ``n`` threads at once; what they raised (a failure in a thread must reach the test)."""
    errors: list[BaseException] = []

    def call() -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_threads_share_the_pool(law):
    """Each call takes a connection of its own from the pool: as many callers as the pool holds are inside
    their calls at once (each waits there for the others: calls run one after another would never meet),
    and more callers than that wait their turn and all get answers."""
    met: list[int] = []
    barrier = threading.Barrier(2, timeout=20)  # the fixture's pool holds 2

    def inside(conn) -> None:
        met.append(conn.info.backend_pid)
        barrier.wait()  # BrokenBarrierError if the other caller cannot be inside at the same time

    assert _in_threads(2, lambda: law.pool.run(inside)) == [] and len(set(met)) == 2  # two connections at once
    results: list[str] = []
    assert _in_threads(6, lambda: results.append(law.show(KP, "154")["article"])) == []
    assert results == ["154"] * 6


def test_ask_offline_quotes_the_article_named(law):
    """(The stand-in model's similarities are below the refusal floor: a named article is answered anyway.)"""
    asked = law.ask("Co stanowi art. 154 kp?", offline=True)
    assert asked.answer.model is None and not asked.answer.refused
    assert asked.answer.citations[0] == (KP, "154")
    assert asked.to_dict()["citations"][0]["citation"] == f"[{KP}, art. 154]"


def test_status_and_doctor_check_the_services_own_database_and_embedder(stand_in_corpus_url, monkeypatch):
    """A Service given a URL and an embedder is checked against them, not against the environment (which
    here names neither a database nor a working embedder)."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("EMBED_BACKEND", "no-such-backend")
    with Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=1, warm=False) as own:
        info = own.status()
        checks = {c["name"]: c for c in own.doctor()}
    assert info["embedder"]["model"] == StandInEmbedder().name and info["server"] == "external"
    assert info["rows"]["acts"] == 2 and info["migration_state"] == "current"
    assert checks["embedder"]["status"] == "ok" and StandInEmbedder().name in checks["embedder"]["detail"]
    assert checks["data"]["detail"] == "2 texts of 2 acts"  # the corpus, not the embedded server's database
    assert checks["vectors"]["status"] == "ok" and StandInEmbedder().name in checks["vectors"]["detail"]
    assert checks["database"]["detail"].startswith("external PostgreSQL")


def test_a_check_that_cannot_run_fails_alone_and_leaves_no_connection(server_url):
    """The embedding queue's table is gone (a damaged database): doctor says so as one failed check, the
    others still run, and its connection is closed, not left to the garbage collector."""
    import psycopg

    from support.database import create_database

    url = create_database(server_url, "doctor_damaged")
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("DROP TABLE embedding_queue CASCADE")
    with Service(url, embedder=StandInEmbedder(), pool_size=1, warm=False) as own:
        checks = own.doctor()
        with psycopg.connect(server_url, autocommit=True) as admin:
            left = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'doctor_damaged'").fetchone()[0]
    by_name = {c["name"]: c for c in checks}
    assert by_name["database"]["status"] == "ok" and by_name["database checks"]["status"] == "fail"
    assert 'relation "embedding_queue" does not exist' in by_name["database checks"]["detail"]
    assert by_name["embedder"]["status"] == "ok"  # the checks after it still ran
    assert left == 0


def test_an_ingest_request_is_checked_once_before_anything_runs(scratch_url, tmp_path):
    """Every rule of an ingest call is the request's (pipeline.indexing.request), checked before any work:
    a chunk size the chunker cannot use is a usage error, not an act failed at each of its acts."""
    import psycopg

    from pipeline import IngestRequest  # noqa: F401 (also the package's own name for it)
    from pipeline.service import IngestRequest as Request
    from support.paths import require_mirror

    mirror = require_mirror()
    with Service(scratch_url, embedder=StandInEmbedder(), pool_size=1, warm=False) as own:
        for request, message in (
            (Request(acts=("DU/2026/548",), source=mirror, chunk_chars=50), "chunk size must be a whole number"),
            (Request(acts=("DU/2026/548",), source=mirror, jobs=0), "jobs must be a whole number"),
            (Request(acts=("DU/2026/548",), title="Kodeks pracy"), "--title/--year find acts in the ELI API"),
            (Request(acts=("DU/2026/548",), source=mirror, act_type="Ustawa"), "go with --title"),
            (Request(all_acts=True), "--all needs --source"),
            (Request(acts=("DU/2026/548",), latest=True, source=mirror), "--latest asks the ELI API"),
            (Request(source=tmp_path / "none", acts=("DU/2026/548",)), "is not a folder"),
            (Request(), "nothing to ingest"),
        ):
            with pytest.raises(UsageError, match=message):
                own.ingest(request)
    with psycopg.connect(scratch_url) as c:
        assert c.execute("SELECT count(*) FROM ingest_runs").fetchone()[0] == 0


def test_a_page_searches_the_text_when_no_vector_exists_yet(server_url):
    """Acts stored with --no-embed: a hybrid search cannot rank (the CLI says to embed), but a reader of the page
    cannot run `pipeline embed`: asked to, the service searches the text alone and says so."""
    import psycopg
    from support.corpus import store_mirror_act
    from support.database import create_database
    from support.paths import require_mirror

    from pipeline.core.errors import NoVectors

    require_mirror()
    url = create_database(server_url, "no_vectors")
    with psycopg.connect(url) as c:
        store_mirror_act(c, "DU/2024/581")
        c.commit()
    with Service(url, embedder=StandInEmbedder(), pool_size=1, warm=False) as law:
        with pytest.raises(NoVectors, match="run pipeline embed, or search with --mode text"):
            law.search("prawo pacjenta do informacji")
        found = law.search("prawo pacjenta do informacji", text_if_no_vectors=True)
        assert found.mode == "text" and found.hits and found.hits[0].act == "DU/2024/581"
        assert found.warnings[0].endswith("searched the text alone")
