"""Pieces (revision 0006): provision-sized parts of long chunks, embedded besides them, used by the vector arm.

Real acts from the mirror, the real database; vectors from the stand-in model (tests/embedding_stand_in.py),
whose query and passage vectors of one text are equal, so a piece's own text finds it exactly.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time

import numpy as np
import psycopg
from support.cli import run_cli
from support.corpus import parsed_act, store_text
from support.database import create_database, EMBEDDED_UNITS, store_as_at
from support.paths import mirror_text, require_mirror
from embedding_stand_in import StandInEmbedder

from pipeline.storage import db, schema, store
from pipeline.indexing import embed
from pipeline.sources.chunk import PIECE_CHARS, chunk_article, chunk_pieces, searched_text
from pipeline.retrieval.search import SearchSettings, search

KP = "DU/2025/277"
PATIENT = "DU/2024/581"


def _store(conn: psycopg.Connection, act: str) -> None:
    meta = json.loads((require_mirror() / "acts" / act / "meta.json").read_bytes())
    _, data = mirror_text(act)
    stored = store_text(conn, meta, parsed_act(act), source_sha256=hashlib.sha256(data).hexdigest(), model=None)
    assert stored.status == "new"


def test_only_chunks_longer_than_a_piece_have_pieces_and_pieces_cover_the_chunk():
    require_mirror()
    title = "Obwieszczenie … w sprawie ogłoszenia jednolitego tekstu ustawy - Kodeks pracy"
    chunks = [c for a in parsed_act(KP).articles for c in chunk_article(a, title)]
    short = [c for c in chunks if len(c.text) <= PIECE_CHARS]
    long = [c for c in chunks if len(c.text) > PIECE_CHARS]
    assert short and long
    assert all(chunk_pieces(c.embed_text, c.text) == [] for c in short)
    for c in long:
        pieces = chunk_pieces(c.embed_text, c.text)
        header, _ = c.embed_text.split("\n", 1)
        assert len(pieces) >= 2 and [p.piece for p in pieces] == list(range(1, len(pieces) + 1))
        bodies = []
        for p in pieces:
            head, body = p.embed_text.split("\n", 1)
            assert head == header  # act, headings, article: the piece is embedded in its context
            assert p.content_sha256 == hashlib.sha256(p.embed_text.encode()).hexdigest()
            bodies.append(body)
        # Pieces only cut at unit (then sentence, then word) boundaries: together they are the chunk's
        # searched text (its text less the two-wordings line), word for word.
        assert " ".join(" ".join(bodies).split()) == " ".join(searched_text(c.text).split())
        assert all(len(b) <= PIECE_CHARS for b in bodies)


def test_a_stored_version_has_its_pieces_and_queues_their_texts(conn):
    require_mirror()
    _store(conn, PATIENT)
    rows = conn.execute("SELECT chunk_id, embed_text, text FROM chunks ORDER BY chunk_id").fetchall()
    want = {(cid, p.piece, p.content_sha256) for cid, et, t in rows for p in chunk_pieces(et, t)}
    got = set(conn.execute("SELECT chunk_id, piece, content_sha256 FROM chunk_pieces").fetchall())
    assert got == want and len(got) > 50
    assert store.write_pieces(conn) == 0  # nothing missing: writes nothing
    model = StandInEmbedder()
    embed.ensure_space(conn, model.name, model.dimensions, model.backend)
    queued = embed.enqueue_missing(conn, model.name)
    texts = conn.execute(f"SELECT count(DISTINCT content_sha256) FROM {EMBEDDED_UNITS} u").fetchone()[0]
    assert queued == texts == len({h for _, _, h in got} | {r[0] for r in conn.execute("SELECT content_sha256 FROM chunks")})
    conn.commit()


def test_the_vector_arm_scores_a_chunk_by_its_best_piece(stand_in_corpus_url):
    embedder = StandInEmbedder()
    with db.connect(stand_in_corpus_url) as c:
        # A piece from the middle of a long Labour Code article, asked as it is written.
        chunk_id, piece_text = c.execute(
            """SELECT p.chunk_id, p.embed_text FROM chunk_pieces p JOIN current_chunks c USING (chunk_id)
               WHERE c.eli = %s AND p.piece = 2 ORDER BY p.chunk_id LIMIT 1 OFFSET 7""", (KP,)).fetchone()
        question = piece_text.split("\n", 1)[1]
        hits = search(c, question, embedder, settings=SearchSettings(k=5, mode="vector", expand=False))
        units = c.execute("""SELECT embed_text FROM chunks WHERE chunk_id = %s
                             UNION ALL SELECT embed_text FROM chunk_pieces WHERE chunk_id = %s""",
                          (chunk_id, chunk_id)).fetchall()
    q = embedder.embed_query(question)
    best = max(float(np.dot(q, v)) for v in embedder.embed_passages([t for (t,) in units]))
    assert hits[0].chunk_id == chunk_id
    assert abs(hits[0].similarity - best) < 1e-4 and hits[0].best_similarity == hits[0].similarity


def test_upgrade_to_0006_then_embed_adds_pieces_to_old_chunks_and_downgrade_drops_them(server_url,
                                                                                      embedding_stand_in, monkeypatch):
    require_mirror()
    url = create_database(server_url, "migrate_0006", migrate=False)
    schema.upgrade(url, "0005")
    with psycopg.connect(url) as c, monkeypatch.context() as m:
        store_as_at(m, "0005")  # as a 0005 pipeline wrote: no pieces, no legal context, no provision time
        _store(c, PATIENT)
    schema.upgrade(url)
    with psycopg.connect(url) as c:
        assert c.execute("SELECT count(*) FROM chunk_pieces").fetchone()[0] == 0
    result = run_cli("embed", "--json", env={"DATABASE_URL": url, **embedding_stand_in.env()})
    assert result.returncode == 0, result.stderr
    with psycopg.connect(url) as c:
        pieces = c.execute("SELECT count(*) FROM chunk_pieces").fetchone()[0]
        texts = c.execute(f"SELECT count(DISTINCT content_sha256) FROM {EMBEDDED_UNITS} u").fetchone()[0]
        status = c.execute("SELECT texts, embedded, queued FROM embedding_status").fetchone()
    assert pieces > 50 and json.loads(result.stdout)["embedded"] == texts and status == (texts, texts, 0)

    schema.downgrade(url, "0005")
    with psycopg.connect(url) as c:
        assert c.execute("SELECT to_regclass('chunk_pieces')").fetchone()[0] is None
        assert c.execute("SELECT count(*) FROM sql_interface").fetchone()[0] == 0  # re-applied by whoever comes next
    schema.upgrade(url)
    with psycopg.connect(url) as c:
        assert c.execute("SELECT count(*) FROM chunk_pieces").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM embedding_status").fetchone()[0] == 1


def test_two_backfills_at_once_write_each_piece_once(scratch_url, monkeypatch):
    """Two `pipeline embed` workers started together on a database from before 0006 both back-fill."""
    require_mirror()
    from concurrent.futures import ThreadPoolExecutor

    with db.connect(scratch_url) as c, monkeypatch.context() as m:
        m.setattr(store, "copy_pieces", lambda conn, chunks: 0)
        m.setattr(store.context, "write", lambda *args: (0, 0))  # an older pipeline: no legal context (0009)
        _store(c, PATIENT)
    first_wrote = threading.Event()

    def backfill(hold: float) -> int:
        with db.connect(scratch_url) as conn, conn.transaction():
            n = store.write_pieces(conn)
            first_wrote.set()
            time.sleep(hold)  # the second starts while this transaction is still open
            return n

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(backfill, 1.0)
        assert first_wrote.wait(30)
        second = pool.submit(backfill, 0.0)
        written = [first.result(), second.result()]
    with psycopg.connect(scratch_url) as c:
        rows = c.execute("SELECT chunk_id, embed_text, text FROM chunks").fetchall()
        expected = sum(len(chunk_pieces(et, t)) for _, et, t in rows)
        assert c.execute("SELECT count(*) FROM chunk_pieces").fetchone()[0] == expected > 50
    assert written == [expected, 0]
