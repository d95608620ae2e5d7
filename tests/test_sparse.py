"""The sparse arm (revision 0008): one learned sparse term vector per chunk text, idf-weighted queries.

A real act from the mirror in the real database; the sparse head is the stand-in's
(tests/embedding_stand_in.py: hashed words, 1 + ln(count)), so every expected figure is computed
here from the texts, independently of the SQL that keeps them. The real model's head is exercised
by the e5 parameters of tests/test_search.py and tests/test_retrieval.py.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections import Counter

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import parsed_act, store_text
from support.database import WORKER, create_database, EMBEDDED_UNITS
from support.paths import mirror_text, require_mirror
from embedding_stand_in import SPARSE_DIMENSIONS, StandInEmbedder, stand_in_sparse

from pipeline.storage import db, schema
from pipeline.indexing import embed
from pipeline.storage.db import sparsevec_literal
from pipeline.core.errors import DatabaseError, UsageError
from pipeline.retrieval.search import SearchSettings, profile, search, vector_gap

PATIENT = "DU/2024/581"  # patient rights, consolidated 2024
QUESTION = "Czy szpital może odmówić mi wglądu do dokumentacji medycznej mojego ojca?"


def _store(conn: psycopg.Connection, act: str = PATIENT) -> None:
    meta = json.loads((require_mirror() / "acts" / act / "meta.json").read_bytes())
    _, data = mirror_text(act)
    stored = store_text(conn, meta, parsed_act(act), source_sha256=hashlib.sha256(data).hexdigest(), model=None)
    assert stored.status == "new"


def _chunk_texts(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT DISTINCT content_sha256, embed_text FROM chunks").fetchall())


def _document_frequencies(texts) -> Counter:
    """Per feature (1-based, as stored), in how many of ``texts`` the stand-in's head activates it."""
    return Counter(int(i) + 1 for t in texts for i in stand_in_sparse(t)[0])


def _stored_counts(conn: psycopg.Connection, model: str) -> tuple[dict[int, int], int]:
    features = dict(conn.execute("SELECT feature, ndoc FROM sparse_features WHERE model = %s", (model,)).fetchall())
    vectors = conn.execute("SELECT vectors FROM sparse_models WHERE model = %s", (model,)).fetchone()[0]
    return features, vectors


def _embedded(conn: psycopg.Connection, model: StandInEmbedder) -> None:
    embed.register(conn, model)
    embed.enqueue_missing(conn, model.name)
    embed.drain(conn, model, batch_size=64)
    assert embed.queued(conn, model.name) == 0


@pytest.fixture(scope="module")
def _starts(server_url):
    """The states a test here starts from, each built once for the module (by name, on first use): the
    act stored ("stored"), then embedded by the stand-in model without its sparse head ("dense") or
    with it ("head")."""
    built: dict[str, str] = {}

    def start(state: str) -> str:
        if state not in built:
            require_mirror()
            url = create_database(server_url, f"sparse_{state}", copy_of=None if state == "stored" else start("stored"))
            with db.connect(url) as c:
                if state == "stored":
                    _store(c)
                else:
                    _embedded(c, StandInEmbedder(sparse=state == "head"))
            built[state] = url
        return built[state]

    return start


@pytest.fixture()
def scratch_url(request, server_url, _starts) -> str:
    """This module's scratch database (``conn`` connects to it): a copy of the state the test starts from,
    the act embedded with the sparse head for a test that asks for ``embedded_with_head``, without it
    for one that asks for ``dense_only``, else only stored. Storing and embedding the act again cost
    each test ~2-4 s of the server's CPU; a copy ~0.2 s."""
    names = request.fixturenames
    start = "head" if "embedded_with_head" in names else "dense" if "dense_only" in names else "stored"
    return create_database(server_url, f"sparse_{WORKER}", copy_of=_starts(start))


@pytest.fixture()
def embedded_with_head() -> StandInEmbedder:
    """The stand-in model with its sparse head, which the test's database is embedded by (scratch_url)."""
    return StandInEmbedder(sparse=True)


@pytest.fixture()
def dense_only() -> StandInEmbedder:
    """The stand-in model without a sparse head, which the test's database is embedded by (scratch_url)."""
    return StandInEmbedder()


def test_sparsevec_literal_numbers_features_from_one_and_sorts_them():
    import numpy as np

    assert sparsevec_literal((np.array([7, 0, 3]), np.array([0.5, 2.0, 0.0])), 10) == "{1:2.0,8:0.5}/10"
    assert sparsevec_literal((np.array([], dtype=int), np.array([])), 4) == "{}/4"


def test_the_worker_gives_each_chunk_text_one_sparse_vector_and_counts_its_features(conn, embedded_with_head):
    model = embedded_with_head
    texts = _chunk_texts(conn)
    stored = dict(conn.execute("SELECT content_sha256, embedding::text FROM sparse_embeddings WHERE model = %s",
                               (model.name,)).fetchall())
    # Chunk texts only: a piece's text (the vector arm's finer unit) gets no sparse vector.
    assert stored.keys() == texts.keys() and len(texts) > 100
    piece_only = {h for (h,) in conn.execute("SELECT content_sha256 FROM chunk_pieces")} - texts.keys()
    assert piece_only and not piece_only & stored.keys()
    assert all(_same_sparse(conn, stored[h], stand_in_sparse(texts[h])) for h in list(texts)[:20])
    # The idf's counts, kept by the triggers, are what the texts give.
    assert _stored_counts(conn, model.name) == (dict(_document_frequencies(texts.values())), len(texts))
    assert embed.enqueue_missing(conn, model.name) == 0  # nothing is missing: nothing queued again


def _same_sparse(conn: psycopg.Connection, stored: str, vector) -> bool:
    entries = dict(conn.execute("SELECT feature, value FROM sparsevec_entries(%s::sparsevec)", (stored,)).fetchall())
    want = {int(i) + 1: float(v) for i, v in zip(*vector)}
    return entries.keys() == want.keys() and all(abs(entries[f] - want[f]) < 1e-6 for f in want)


def test_a_database_embedded_without_a_sparse_head_is_back_filled_without_embedding_again(conn, dense_only):
    assert conn.execute("SELECT count(*) FROM sparse_models").fetchone()[0] == 0
    texts = _chunk_texts(conn)

    with_head = StandInEmbedder(sparse=True)
    passages: list[int] = []
    original = with_head.embed_passages
    with_head.embed_passages = lambda batch: (passages.append(len(batch)), original(batch))[1]  # type: ignore[method-assign]
    embed.register(conn, with_head)  # a new head queues the chunk texts it lacks, and only those
    assert embed.queued(conn, with_head.name) == len(texts)
    # Until the back-fill, searches say which arm cannot see them (their dense vectors are there).
    assert vector_gap(conn, with_head.name) == (
        f"{len(texts)} stored texts have no {with_head.name} sparse vector yet: the sparse arm cannot find their "
        "articles (run: pipeline embed)")
    assert embed.drain(conn, with_head, batch_size=64) == len(texts)
    assert sum(passages) == 0 and sum(with_head.sparse_calls) == len(texts)  # dense vectors were there
    assert _stored_counts(conn, with_head.name)[1] == len(texts)

    # A worker without the head drops a row that lacks only the sparse vector (it cannot compute it;
    # it would claim it again forever), and the next run with the head queues it again.
    h = next(iter(texts))
    conn.execute("DELETE FROM sparse_embeddings WHERE content_sha256 = %s", (h,))
    conn.commit()
    assert embed.enqueue_missing(conn, with_head.name) == 1
    assert embed.drain(conn, dense_only) == 0 and embed.queued(conn, dense_only.name) == 0
    assert embed.enqueue_missing(conn, with_head.name) == 1
    assert embed.drain(conn, with_head) == 1


def test_feature_counts_follow_deletes_and_truncate_and_vectors_are_never_updated(conn, embedded_with_head):
    model = embedded_with_head
    texts = _chunk_texts(conn)
    gone = sorted(texts)[::3]
    conn.execute("DELETE FROM sparse_embeddings WHERE content_sha256 = ANY (%s)", (gone,))
    left = [t for h, t in texts.items() if h not in set(gone)]
    assert _stored_counts(conn, model.name) == (dict(_document_frequencies(left)), len(left))
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="not updated"):
        conn.execute("UPDATE sparse_embeddings SET created_at = now()")
    conn.rollback()
    conn.execute("TRUNCATE sparse_embeddings")
    assert _stored_counts(conn, model.name) == ({}, 0)
    conn.rollback()


def test_the_query_is_weighted_by_each_features_idf(conn, embedded_with_head):
    model = embedded_with_head
    texts = _chunk_texts(conn)
    df, n = _document_frequencies(texts.values()), len(texts)
    query = stand_in_sparse(QUESTION + " xyzzyplugh")  # a word no chunk has: its feature is left out
    weighted = dict(conn.execute(
        "SELECT feature, value FROM sparsevec_entries(sparse_query(%s, %s::sparsevec))",
        (model.name, sparsevec_literal(query, SPARSE_DIMENSIONS))).fetchall())
    want = {int(i) + 1: float(v) * math.log(1 + (n - df[int(i) + 1] + 0.5) / (df[int(i) + 1] + 0.5))
            for i, v in zip(*query) if df[int(i) + 1]}
    assert weighted.keys() == want.keys() and len(want) < len(query[0])
    assert all(weighted[f] == pytest.approx(want[f], rel=1e-5) for f in want)
    # A rarer feature weighs more than a common one of the same raw value.
    common, rare = max(want, key=lambda f: df[f]), min(want, key=lambda f: df[f])
    assert df[common] > df[rare]


def test_the_sparse_arm_ranks_by_inner_product_and_takes_part_in_hybrid_search(conn, embedded_with_head):
    model = embedded_with_head
    hits = search(conn, QUESTION, model, settings=SearchSettings(k=10, mode="sparse"))
    assert len(hits) == 10 and all(h.similarity is None and h.text_score is None for h in hits)
    assert [h.sparse_score for h in hits] == sorted((h.sparse_score for h in hits), reverse=True)
    # The best hit's score is the inner product of its stored vector with the idf-weighted query.
    q = dict(conn.execute("SELECT feature, value FROM sparsevec_entries(sparse_query(%s, %s::sparsevec))",
                          (model.name, sparsevec_literal(stand_in_sparse(QUESTION), SPARSE_DIMENSIONS))).fetchall())
    text = conn.execute("SELECT embed_text FROM chunks WHERE chunk_id = %s", (hits[0].chunk_id,)).fetchone()[0]
    doc = {int(i) + 1: float(v) for i, v in zip(*stand_in_sparse(text))}
    assert hits[0].sparse_score == pytest.approx(sum(v * doc.get(f, 0.0) for f, v in q.items()), rel=1e-5)

    fused = search(conn, QUESTION, model, settings=SearchSettings(k=20, fusion=profile(model.name).fusion.overridden({"fusion": "rrf", "vector_weight": 1, "text_weight": 1, "sparse_weight": 1})))
    assert any(h.sparse_rank for h in fused)
    for h in fused:
        parts = [r for r in (h.vector_rank, h.text_rank, h.sparse_rank) if r]
        assert h.score == pytest.approx(sum(1 / (60 + r) for r in parts), rel=1e-12)
    # Its weight at 0 takes it out of the score, not out of the columns.
    without = search(conn, QUESTION, model, settings=SearchSettings(k=20, fusion=profile(model.name).fusion.overridden({"fusion": "rrf", "vector_weight": 1, "text_weight": 1, "sparse_weight": 0})))
    assert all(h.score == pytest.approx(sum(1 / (60 + r) for r in (h.vector_rank, h.text_rank) if r))
               for h in without)


def test_without_a_head_or_without_stored_vectors_there_is_no_sparse_arm(conn, dense_only):
    with pytest.raises(UsageError, match="sparse search needs an embedder with a sparse head"):
        search(conn, QUESTION, dense_only, settings=SearchSettings(mode="sparse"))
    hits = search(conn, QUESTION, dense_only, settings=SearchSettings(k=5))
    assert hits and all(h.sparse_rank is None for h in hits)
    # A head whose vectors are not stored yet (a database not back-filled): hybrid works without the
    # arm, the arm alone says what to run.
    with_head = StandInEmbedder(sparse=True)
    assert [h.chunk_id for h in search(conn, QUESTION, with_head, settings=SearchSettings(k=5))] == [h.chunk_id for h in hits]
    with pytest.raises(DatabaseError, match="no stored text has a .* sparse vector yet: run pipeline embed"):
        search(conn, QUESTION, with_head, settings=SearchSettings(mode="sparse"))


def test_downgrade_from_0008_drops_the_sparse_vectors_and_upgrade_queues_them_again(server_url, _starts):
    url = create_database(server_url, "migrate_0008", copy_of=_starts("head"))
    model = StandInEmbedder(sparse=True)
    with db.connect(url) as c:
        texts = len(_chunk_texts(c))
    schema.downgrade(url, "0007")
    with db.connect(url) as c:
        assert c.execute("SELECT to_regclass('sparse_embeddings') IS NULL").fetchone()[0]
        assert c.execute("SELECT count(*) FROM embedding_queue").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM pg_proc WHERE proname = 'search_chunks'").fetchone()[0] == 0
    schema.upgrade(url)
    with db.connect(url) as c:
        assert c.execute("SELECT count(*) FROM pg_proc WHERE proname = 'search_chunks'").fetchone()[0] == 1
        embed.register(c, model)
        assert embed.queued(c, model.name) == texts


def test_the_sparse_arm_checks_what_sql_callers_give_it(conn, embedded_with_head):
    model = embedded_with_head
    with pytest.raises(UsageError, match="must be finite numbers, 0 or more"):
        search(conn, QUESTION, model, settings=SearchSettings(fusion=profile(model.name).fusion.overridden({"sparse_weight": -1})))
    # A chunk that shares no feature with the question is no candidate (the index scan returned chunks
    # at 0); a question with no feature any stored vector has finds nothing.
    df = _document_frequencies(_chunk_texts(conn).values())
    unknown = next(f for f in range(1, SPARSE_DIMENSIONS + 1) if not df[f])
    common = max(df, key=lambda f: df[f])
    count = "SELECT count(*) FROM search_chunks('x', NULL, %s, 1000, mode => 'sparse', query_sparse => %s::sparsevec)"
    assert conn.execute(count, (model.name, f"{{{unknown}:1}}/{SPARSE_DIMENSIONS}")).fetchone()[0] == 0
    found = conn.execute(count, (model.name, f"{{{common}:1}}/{SPARSE_DIMENSIONS}")).fetchone()[0]
    rows_with = conn.execute("SELECT count(DISTINCT (c.version_id, c.article)) FROM sparse_embeddings s "
                             "JOIN chunks c USING (content_sha256) WHERE %s = ANY (ARRAY(SELECT feature FROM "
                             "sparsevec_entries(s.embedding))) AND NOT c.repealed", (common,)).fetchone()[0]
    assert 0 < found <= rows_with


def test_searches_say_when_the_model_has_no_sparse_vectors_at_all(conn, dense_only):
    """A database embedded before revision 0008: nothing is queued until a worker with the head runs,
    so the queue cannot tell; the warning must."""
    with_head = StandInEmbedder(sparse=True)
    assert vector_gap(conn, with_head.name) is None  # the queue is empty
    assert vector_gap(conn, with_head.name, sparse=True) == (
        f"no stored text has a {with_head.name} sparse vector yet (embedded before this pipeline added them): "
        "hybrid search runs without its sparse arm (run: pipeline embed, ~0.2 s a chunk text)")
    _embedded(conn, with_head)
    assert vector_gap(conn, with_head.name, sparse=True) is None


def test_doctor_and_db_status_tell_an_upgraded_database_to_back_fill(conn, scratch_url):
    """The offline model's dense vectors stored before revision 0008, no sparse ones: doctor warns with
    the fix (the configured local embedder has the head), db status says how far the back-fill is."""
    texts = [h for (h,) in conn.execute(f"SELECT DISTINCT content_sha256 FROM {EMBEDDED_UNITS} u")]
    embed.ensure_space(conn, "multilingual-e5-small", 384, "local")
    with conn.transaction():  # any 384-d vectors: doctor only counts them
        conn.execute("INSERT INTO embeddings (content_sha256, model, embedding) "
                     "SELECT h, 'multilingual-e5-small', array_fill(0.05, ARRAY[384])::vector FROM unnest(%s::text[]) h",
                     (texts,))
    conn.commit()
    env = {"DATABASE_URL": scratch_url, "EMBED_BACKEND": "local"}
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env).stdout)}
    assert checks["vectors"]["status"] == "warn" and checks["vectors"]["fix"] == "run: pipeline embed"
    assert "no chunk text has a multilingual-e5-small sparse vector" in checks["vectors"]["detail"]
    # Half back-filled: the status line counts the sparse vectors against the chunk texts.
    chunk_texts = _chunk_texts(conn)
    half = sorted(chunk_texts)[: len(chunk_texts) // 2]
    with conn.transaction():
        conn.execute("INSERT INTO sparse_models (model, dimensions) VALUES ('multilingual-e5-small', 16384)")
        embed.write_sparse(conn, "multilingual-e5-small", 16384, ((h, stand_in_sparse(chunk_texts[h])) for h in half))
    conn.commit()
    status = run_cli("db", "status", env=env)
    assert (f"sparse vectors for {len(half)} of {len(chunk_texts)} chunk texts" in status.stdout), status.stdout
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env).stdout)}
    assert checks["vectors"]["detail"].startswith(f"{len(chunk_texts) - len(half)} chunk texts have no "
                                                  "multilingual-e5-small sparse vector")


def test_pipeline_embed_reports_the_back_fill_it_queued(conn, scratch_url, dense_only):
    """`pipeline embed` after the upgrade: registering the head queues the chunk texts, and the run
    reports them as queued by it (it said 0) and embedded."""
    texts = len(_chunk_texts(conn))
    conn.commit()
    from pipeline import Service

    with Service(scratch_url, embedder=StandInEmbedder(sparse=True), pool_size=1, warm=False) as service:
        done = service.embed()
    assert (done.queued, done.embedded, done.remaining) == (texts, texts, 0)

