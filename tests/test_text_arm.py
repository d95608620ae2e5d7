"""The BM25 text arm (issue 14): statistics kept by triggers, impact-ordered postings, the exact reference.

Real acts from the mirror in a real embedded PostgreSQL. The statistics the triggers keep are
compared with a recompute from the chunks (ts_stat); the index-backed arm with text_search_exact();
and text_search_exact() itself with BM25 computed here, in Python, from the stored tsvectors.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import statistics
import threading
import time
from urllib.parse import urlsplit

import psycopg
import pytest
from support.corpus import parsed_act, store_text
from support.database import create_database, store_as_at
from support.paths import EVAL_DIR, mirror_text, require_mirror

from pipeline.storage import schema, store

# Small HTML acts (quick to parse and index) for the tests that ingest and delete.
SMALL_ACTS = ("DU/2024/1513", "DU/2019/1026", "DU/2024/917")
# Added to the two-act test corpus for the recall test: acts the eval questions ask about.
MORE_ACTS = ("DU/2024/1221", "DU/1997/553", "DU/2024/1564", "DU/2019/1781", "DU/2024/917", "DU/2019/1026",
             "DU/2024/1513")
PATIENT = "DU/2024/581"
TEXT_SQL = "SELECT chunk_id, text_score FROM search_chunks(%s, NULL, NULL, %s, %s, %s, false, 'text')"


def store_act(conn: psycopg.Connection, act: str, **meta_changes) -> None:
    meta = {**json.loads((require_mirror() / "acts" / act / "meta.json").read_bytes()), **meta_changes}
    _, data = mirror_text(act)
    stored = store_text(conn, meta, parsed_act(act), source_sha256=hashlib.sha256(data).hexdigest(),
                                 model=None)
    assert stored.status == "new"


# One chunk per distinct text (content hash): what the statistics count (revision 0007).
DISTINCT_TEXTS = "SELECT DISTINCT ON (content_sha256) tsv FROM chunks ORDER BY content_sha256, chunk_id"


def stats_vs_recompute(conn: psycopg.Connection) -> dict[str, float]:
    """How far the kept statistics and postings are from a recompute over the chunks (all 0: equal):
    document frequencies and totals over the distinct texts, postings over every chunk."""
    lexemes = conn.execute(f"""
        SELECT count(*) FROM ((SELECT lexeme, ndoc FROM lexeme_stats EXCEPT SELECT word, ndoc FROM ts_stat('{DISTINCT_TEXTS}'))
                              UNION ALL
                              (SELECT word, ndoc FROM ts_stat('{DISTINCT_TEXTS}') EXCEPT SELECT lexeme, ndoc FROM lexeme_stats)) d
    """).fetchone()[0]
    postings = conn.execute("""
        SELECT count(*) FROM ((SELECT p.chunk_id, l.lexeme FROM postings p JOIN lexicon l USING (lexeme_id)
                               EXCEPT ALL SELECT c.chunk_id, t.lexeme FROM chunks c, unnest(c.tsv) t)
                              UNION ALL
                              (SELECT c.chunk_id, t.lexeme FROM chunks c, unnest(c.tsv) t
                               EXCEPT ALL SELECT p.chunk_id, l.lexeme FROM postings p JOIN lexicon l USING (lexeme_id))) d
    """).fetchone()[0]
    chunks, avg_length = conn.execute("SELECT chunks, avg_length FROM corpus_stats").fetchone()
    true_chunks, true_avg = conn.execute(f"SELECT count(*), coalesce(avg(length(tsv)), 1) FROM ({DISTINCT_TEXTS}) d").fetchone()
    return {"lexemes": lexemes, "postings": postings, "chunks": chunks - true_chunks,
            "avg_length": round(abs(avg_length - float(true_avg)), 9)}


EQUAL = {"lexemes": 0, "postings": 0, "chunks": 0, "avg_length": 0}


def snapshot(conn: psycopg.Connection) -> tuple:
    return (conn.execute("SELECT lexeme, ndoc FROM lexeme_stats ORDER BY lexeme").fetchall(),
            conn.execute("SELECT chunks, avg_length FROM corpus_stats").fetchall(),
            conn.execute("SELECT p.chunk_id, l.lexeme FROM postings p JOIN lexicon l USING (lexeme_id) "
                         "ORDER BY 1, 2").fetchall())


# --- statistics kept by the triggers ---------------------------------------------------------------


def test_statistics_follow_ingests_and_deletes_like_a_recompute(conn):
    for act in SMALL_ACTS:
        store_act(conn, act)
        assert stats_vs_recompute(conn) == EQUAL, act
    only_there = conn.execute("""
        SELECT t.lexeme FROM chunks c JOIN act_versions v USING (version_id), unnest(c.tsv) t
        WHERE v.eli = %s GROUP BY t.lexeme
        HAVING count(*) = (SELECT ndoc FROM lexeme_stats WHERE lexeme = t.lexeme)""", (SMALL_ACTS[1],)).fetchall()
    assert only_there  # the act has words of its own, which must leave the lexicon with it

    conn.execute("DELETE FROM act_versions WHERE eli = %s", (SMALL_ACTS[1],))  # cascades to its chunks
    conn.commit()
    assert stats_vs_recompute(conn) == EQUAL
    assert conn.execute("SELECT count(*) FROM lexeme_stats WHERE lexeme = ANY (%s)",
                        ([w for (w,) in only_there],)).fetchone()[0] == 0

    kept = snapshot(conn)
    conn.execute("SELECT refresh_search_stats()")  # the repair tool rebuilds the same thing from scratch
    conn.commit()
    assert snapshot(conn) == kept


def test_statistics_follow_updates_of_the_text_and_truncate(conn):
    for act in SMALL_ACTS[:2]:
        store_act(conn, act)
    # README: rebuilding the tsvectors is an UPDATE of embed_text; here it also changes some texts.
    conn.execute("UPDATE chunks SET embed_text = embed_text || ' teleporada' WHERE chunk_id % 3 = 0")
    conn.commit()
    assert stats_vs_recompute(conn) == EQUAL
    changed = conn.execute("SELECT count(*) FROM chunks WHERE chunk_id % 3 = 0").fetchone()[0]
    assert conn.execute("SELECT ndoc FROM lexeme_stats WHERE lexeme = 'teleporada'").fetchone() == (changed,)
    before = snapshot(conn)
    conn.execute("UPDATE chunks SET repealed = NOT repealed")  # no text changed: nothing to do
    conn.commit()
    assert snapshot(conn) == before
    conn.execute("TRUNCATE chunks CASCADE")
    conn.commit()
    assert stats_vs_recompute(conn) == EQUAL
    assert conn.execute("SELECT chunks, avg_length FROM corpus_stats").fetchone() == (0, 1)


def test_a_new_version_counts_only_the_texts_it_changed(conn):
    """Revision 0007: a new text of an act whose articles are mostly unchanged gets postings for every
    chunk (the text arm must find each version's own) but counts only the texts it changed, so idf and
    the average length do not move for the unchanged rest; the old version's removal takes out only the
    texts no chunk holds any more."""
    act = SMALL_ACTS[0]
    store_act(conn, act)
    first = conn.execute("SELECT chunks FROM corpus_stats").fetchone()[0]
    first_chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # two wordings may share a part
    parsed = parsed_act(act)
    last = parsed.articles[-1]
    changed = dataclasses.replace(parsed, articles=[*parsed.articles[:-1],
                                                    dataclasses.replace(last, text=last.text + " Teleporada.")])
    meta = json.loads((require_mirror() / "acts" / act / "meta.json").read_bytes())
    stored = store_text(conn, meta, changed, source_sha256="second", model=None)
    assert stored.version_no == 2
    conn.commit()
    assert stats_vs_recompute(conn) == EQUAL
    n_chunks, n_texts = conn.execute("SELECT count(*), count(DISTINCT content_sha256) FROM chunks").fetchone()
    changed_parts = n_chunks - 2 * first_chunks
    assert n_chunks > n_texts and n_texts == first + 1 == conn.execute("SELECT chunks FROM corpus_stats").fetchone()[0]
    assert changed_parts == 0  # one text changed: its chunk count did not
    assert conn.execute("SELECT ndoc FROM lexeme_stats WHERE lexeme = 'teleporada'").fetchone() == (1,)
    # Every chunk of both versions has its postings: the text arm finds either version's own.
    assert conn.execute("SELECT count(DISTINCT chunk_id) FROM postings").fetchone()[0] == n_chunks

    conn.execute("DELETE FROM act_versions WHERE eli = %s AND version_no = 1", (act,))
    conn.commit()
    assert stats_vs_recompute(conn) == EQUAL
    assert conn.execute("SELECT chunks FROM corpus_stats").fetchone()[0] == first


def test_ingest_never_recomputes_the_statistics(conn):
    # A from-scratch recompute costs the whole database; ingest must get by with the triggers.
    conn.execute("""CREATE OR REPLACE FUNCTION refresh_search_stats() RETURNS void LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'ingest ran the recompute'; END $$""")
    try:
        store_act(conn, SMALL_ACTS[0])  # in a savepoint of this transaction
        assert stats_vs_recompute(conn) == EQUAL
    finally:
        conn.rollback()  # the real function comes back


def test_concurrent_writers_queue_and_keep_exact_statistics(scratch_url):
    # Two ingests of different acts at once: the second waits for the first (at the statistics),
    # neither deadlocks, and the counts add up.
    first, second = psycopg.connect(scratch_url), psycopg.connect(scratch_url)
    try:
        store_act(first, SMALL_ACTS[0])  # committed
        first.execute("SELECT 1")  # an open transaction around the next version...
        store_act(first, SMALL_ACTS[1])  # ...which therefore stays uncommitted (a savepoint)
        errors: list[BaseException] = []

        def ingest_second() -> None:
            try:
                store_act(second, SMALL_ACTS[2])
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        thread = threading.Thread(target=ingest_second)
        thread.start()
        with psycopg.connect(scratch_url, autocommit=True) as watch:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                    (second.info.backend_pid,)).fetchone()[0]:
                time.sleep(0.05)
            assert thread.is_alive(), errors  # waiting on the first writer's statistics
        first.commit()
        thread.join(timeout=120)
        assert not thread.is_alive() and errors == []
        assert stats_vs_recompute(second) == EQUAL
        assert second.execute("SELECT count(*) FROM act_versions").fetchone()[0] == 3
    finally:
        first.close()
        second.close()


# --- the index-backed text arm against the exact reference ---------------------------------------------


@pytest.fixture(scope="module")
def corpus(server_url, _corpus_text) -> str:
    """The two-act test corpus plus seven acts the eval questions ask about (~3k chunks), and a
    second, later text of the patient act (so an as_of before it selects the first)."""
    name = "text_arm"
    with psycopg.connect(server_url, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}" TEMPLATE "{urlsplit(_corpus_text).path.lstrip("/")}"')
    url = server_url.replace("/postgres?", f"/{name}?")
    with psycopg.connect(url) as c:
        for act in MORE_ACTS:
            store_act(c, act)
        later = dataclasses.replace(parsed_act(PATIENT), articles=parsed_act(PATIENT).articles[:-5])
        meta = json.loads((require_mirror() / "acts" / PATIENT / "meta.json").read_bytes())
        # Dated in the past: a consolidated text states the law from its date, and today's search reads today's law.
        stored = store_text(c, {**meta, "legalStatusDate": "2026-01-01"}, later, source_sha256="later",
                                     model=None)
        assert stored.version_no == 2
        c.execute("ANALYZE")
    return url


def eval_questions() -> list[str]:
    return [json.loads(line)["question"] for path in sorted(EVAL_DIR.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class Paths:
    """The path search_text_arm() took for each call (its DEBUG messages)."""

    def __init__(self, conn: psycopg.Connection):
        self.seen: list[str] = []
        conn.add_notice_handler(lambda d: self.seen.append(d.message_primary)
                                if d.message_primary.startswith("search_text_arm:") else None)
        conn.execute("SET client_min_messages = debug1")

    def take(self) -> list[str]:
        seen, self.seen = [m.split()[1].rstrip(",") for m in self.seen], []
        return seen


@pytest.fixture(scope="module")
def exact_top_10(corpus) -> dict[str, dict]:
    """text_search_exact()'s top 10 of each eval question (chunk_id -> score): the reference both settings
    of the index-backed arm are held against, scanned once."""
    with psycopg.connect(corpus, autocommit=True) as c:
        return {q: dict(c.execute("SELECT chunk_id, text_score FROM text_search_exact(%s, 10)", (q,)).fetchall())
                for q in eval_questions()}


@pytest.mark.parametrize("share", [None, 0.01], ids=["default", "1-percent"])
def test_index_backed_arm_finds_the_exact_top_10(corpus, exact_top_10, share):
    """recall@10 of search_chunks(mode => 'text') against text_search_exact() on the eval questions.
    By default this corpus is small enough for most postings lists to be read whole; with 1 % of the
    chunks a lexeme (what the default reads of a large corpus) nearly every list is cut."""
    questions = eval_questions()
    assert len(questions) >= 50
    with psycopg.connect(corpus, autocommit=True) as c:
        paths = Paths(c)
        n_chunks = c.execute("SELECT chunks FROM corpus_stats").fetchone()[0]
        postings = math.ceil(share * n_chunks) if share else None
        if postings:
            c.execute("SELECT set_config('pipeline.postings_per_lexeme', %s, false)", (str(postings),))
        recalls, cut = [], 0
        for q in questions:
            exact = exact_top_10[q]
            got = dict(c.execute(TEXT_SQL, (q, 10, None, None)).fetchall())
            assert len(got) == len(exact) == 10, q
            recalls.append(len(got.keys() & exact.keys()) / 10)
            for chunk_id in got.keys() & exact.keys():  # both score exactly, with the same statistics
                assert got[chunk_id] == pytest.approx(exact[chunk_id], rel=1e-6)
            cut += c.execute("SELECT bool_or(ndoc > %s) FROM lexeme_stats WHERE lexeme = ANY (search_terms(%s))",
                             (postings or 1000, q)).fetchone()[0] or 0
        taken = paths.take()
    recall = statistics.mean(recalls)
    print(f"\ntext arm recall@10 vs text_search_exact ({len(questions)} eval questions, {n_chunks:.0f} chunks, "
          f"postings/lexeme {postings or 'default'}): {recall:.3f}, min {min(recalls):.1f}; "
          f"{cut} questions with a cut list; paths {dict((p, taken.count(p)) for p in set(taken))}")
    assert taken.count("index") == len(questions)  # no filter: every question took the index path
    if postings:
        assert cut >= len(questions) * 0.9  # the stress case really reads partial lists
    assert recall >= 0.95


def test_chunks_scored_exactly_grow_with_the_corpus(corpus):
    """search_text_arm() scores 25 × fetch_k of its candidates exactly, and 0.25 % of the chunks once
    the corpus is larger than 400 × that: counted as 4M chunks (corpus_totals, in a rolled-back
    transaction), the same question gets every candidate scored, more than 1000."""
    question = "Ile dni urlopu wypoczynkowego przysługuje pracownikowi zatrudnionemu od 10 lat?"
    seen: list[str] = []
    with psycopg.connect(corpus) as c:
        c.add_notice_handler(lambda d: seen.append(d.message_primary)
                             if d.message_primary.startswith("search_text_arm: index") else None)
        with c.transaction(force_rollback=True):
            c.execute("SET LOCAL client_min_messages = debug1")
            c.execute(TEXT_SQL, (question, 10, None, None)).fetchall()
            c.execute("UPDATE corpus_totals SET chunks = 4000000")
            c.execute(TEXT_SQL, (question, 10, None, None)).fetchall()
            tsquery = c.execute("SELECT search_tsquery(%s)::text", (question,)).fetchone()[0]
            searchable = c.execute("""
                SELECT count(*) FROM chunks c LEFT JOIN article_times t USING (article_id)
                WHERE c.tsv @@ %s::tsquery AND NOT c.repealed
                  AND in_force_on(t.in_force_from, t.in_force_until, current_date) IS DISTINCT FROM false
                  AND c.version_id IN (SELECT selected_versions(NULL, NULL))""", (tsquery,)).fetchone()[0]
    small, large = [int(re.search(r"(\d+) chunks scored, the best of \d+ postings read", m).group(1)) for m in seen]
    assert small <= 1000 < searchable  # fetch_k 40: 25 × 40 of more candidates
    assert large == searchable > 1000  # every chunk with a query lexeme (in force, not repealed)


def test_impact_quantiles_describe_this_corpus_too(corpus):
    """postings_depths() shares a query's postings budget by impact_quantiles(), measured once on the
    whole mirror: the postings of this 9-act corpus must be distributed alike (every 5 %, within 0.05)."""
    with psycopg.connect(corpus, autocommit=True) as c:
        shipped = c.execute("SELECT impact_quantiles()").fetchone()[0]
        here = c.execute("SELECT percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY impact) FROM postings",
                         ([i / 20 for i in range(21)],)).fetchone()[0]
        assert len(shipped) == 21 and shipped == sorted(shipped)
        assert max(abs(a - b) for a, b in zip(shipped[1:-1], here[1:-1])) < 0.05, (shipped, here)
        # impact_share() is the survival function of those quantiles
        shares = [c.execute("SELECT impact_share(%s)", (x,)).fetchone()[0] for x in (0.0, shipped[10], 3.0)]
        assert shares == [1.0, pytest.approx(0.5), 0.0]


def test_postings_depths_spend_the_budget_rare_lexemes_first(corpus):
    """Lists of 50 (rare, high idf), 5 000 and 50 000 postings (common) with a budget of 6 000: the
    rare list is read whole, the rest goes mostly to the rarer of the two long lists, and the reads
    add up to the budget; a budget that covers every list reads them all."""
    with psycopg.connect(corpus, autocommit=True) as c:
        ndocs, idfs = [50, 5000, 50000], [7.0, 3.0, 1.0]
        depths = c.execute("SELECT postings_depths(%s, %s, 6000)", (ndocs, idfs)).fetchone()[0]
        assert depths[0] == 50
        assert depths[1] > depths[2] > 0 and depths[1] < 5000
        assert abs(sum(depths) - 6000) <= 3  # rounding per list
        assert c.execute("SELECT postings_depths(%s, %s, 60000)", (ndocs, idfs)).fetchone()[0] == ndocs


def python_bm25_top(conn: psycopg.Connection, question: str, k: int) -> list[tuple[int, float]]:
    """Exact BM25 (k1 1.2, b 0.75) of the current chunks in force today, best part per article, from the
    raw tsvectors and document frequencies counted here over the distinct texts (the corpus holds two
    versions of the patient act): independent of lexicon, postings and bm25_*."""
    terms = set(conn.execute("SELECT search_terms(%s)", (question,)).fetchone()[0])
    n, avg = conn.execute(f"SELECT count(*), avg(length(tsv))::float8 FROM ({DISTINCT_TEXTS}) d").fetchone()
    ndoc = dict(conn.execute(f"SELECT word, ndoc FROM ts_stat('{DISTINCT_TEXTS}') WHERE word = ANY (%s)",
                             (list(terms),)).fetchall())
    rows = conn.execute("""
        SELECT c.chunk_id, c.version_id, c.article, length(c.tsv), t.lexeme, cardinality(t.positions)
        FROM chunks c JOIN versions_as_of(NULL) v USING (version_id)
        LEFT JOIN article_times a ON a.article_id = c.article_id, unnest(c.tsv) t
        WHERE NOT c.repealed AND t.lexeme = ANY (%s)
          AND in_force_on(a.in_force_from, a.in_force_until, current_date) IS DISTINCT FROM false""",
                        (list(terms),)).fetchall()
    scores: dict[tuple, float] = {}
    for chunk_id, version_id, article, length, lexeme, tf in rows:
        idf = math.log(1 + (n - ndoc[lexeme] + 0.5) / (ndoc[lexeme] + 0.5))
        key = (version_id, article, chunk_id)
        scores[key] = scores.get(key, 0.0) + idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
    best: dict[tuple, tuple[float, int]] = {}
    for (version_id, article, chunk_id), s in scores.items():
        if (version_id, article) not in best or (-s, chunk_id) < (-best[(version_id, article)][0], best[(version_id, article)][1]):
            best[(version_id, article)] = (s, chunk_id)
    return sorted(((c, s) for s, c in best.values()), key=lambda x: (-x[1], x[0]))[:k]


def test_exact_reference_is_bm25(corpus):
    with psycopg.connect(corpus, autocommit=True) as c:
        for q in eval_questions()[::6]:
            want = python_bm25_top(c, q, 11)
            got = c.execute("SELECT chunk_id, text_score FROM text_search_exact(%s, 10)", (q,)).fetchall()
            assert [s for _, s in got] == pytest.approx([s for _, s in want[:10]], rel=1e-5), q
            if want[9][1] - want[10][1] > 1e-4:  # no near tie at the cut (real vs double rounding)
                assert {i for i, _ in got} == {i for i, _ in want[:10]}, q


@pytest.mark.parametrize("fn", ["text_search_exact(%s, 10)", "search_chunks(%s, mode => 'text')"])
def test_a_question_is_turned_into_terms_once_whatever_the_plan(corpus, fn):
    """Each evaluation of search_terms() reads the thesaurus. Written as `lexeme = ANY (search_terms(q))`
    and planned as a sequential scan of the lexicon (as on a database not analysed yet), it would be
    evaluated once per lexicon row: seconds a query. Index scans off force that plan here."""
    question = "Ile dni urlopu wypoczynkowego przysługuje pracownikowi zatrudnionemu od 10 lat?"
    with psycopg.connect(corpus) as c, c.transaction(force_rollback=True):
        for setting in ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan"):
            c.execute(f"SET LOCAL {setting} = off")
        assert c.execute(f"SELECT count(*) FROM {fn}", (question,)).fetchone()[0] == 10
        scans = c.execute("SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables "
                          "WHERE relname = 'thesaurus'").fetchone()[0]
        lexicon = c.execute("SELECT count(*) FROM lexicon").fetchone()[0]
    assert 1 <= scans <= 2 < lexicon


def test_acts_filter_scans_and_returns_k_rows_of_that_act(corpus):
    labour = "Jaki mam okres wypowiedzenia, jeśli pracuję w firmie od 4 lat?"
    with psycopg.connect(corpus, autocommit=True) as c:
        paths = Paths(c)
        rows = c.execute("SELECT eli, text_score FROM search_chunks(%s, mode => 'text', k => 10, acts => %s)",
                         (labour, [PATIENT])).fetchall()
        assert paths.take() == ["scan"]
        assert len(rows) == 10 and {r[0] for r in rows} == {PATIENT}
        assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)


def test_too_few_candidates_after_the_filters_falls_back_to_the_scan(corpus):
    question = "Czy lekarz może odmówić obecności osoby bliskiej przy udzielaniu świadczeń?"
    with psycopg.connect(corpus, autocommit=True) as c:
        paths = Paths(c)
        # 5 postings a lexeme: at most 5 candidates per lexeme, fewer than fetch_k (40) in all.
        c.execute("SET pipeline.postings_per_lexeme = 5")
        first_text = c.execute("SELECT version_id, valid_from FROM act_versions WHERE eli = %s AND version_no = 1",
                               (PATIENT,)).fetchone()
        # As of the patient act's first text: four texts of ten (the others are later).
        as_of = first_text[1]
        selected = [v for (v,) in c.execute("SELECT version_id FROM versions_as_of(%s)", (as_of,))]
        assert first_text[0] in selected and len(selected) <= 4
        rows = c.execute("SELECT chunk_id FROM search_chunks(%s, mode => 'text', k => 10, as_of => %s)",
                         (question, as_of)).fetchall()
        assert paths.take() == ["scan"]
        assert len(rows) == 10
        versions = {v for (v,) in c.execute("SELECT DISTINCT version_id FROM chunks WHERE chunk_id = ANY (%s)",
                                            ([r[0] for r in rows],))}
        assert versions <= set(selected)
        # Without a filter, and the default lists, the same question keeps to the index.
        c.execute("RESET pipeline.postings_per_lexeme")
        assert len(c.execute(TEXT_SQL, (question, 10, None, None)).fetchall()) == 10
        assert paths.take() == ["index"]


# --- the migration from 0004 ---------------------------------------------------------------------------


def test_migration_from_0004_backfills_and_downgrades(server_url, monkeypatch):
    url = create_database(server_url, "migrate_0005", migrate=False)
    schema.upgrade(url, "0004")
    with psycopg.connect(url) as c, monkeypatch.context() as m:
        store_as_at(m, "0004")  # no chunk_pieces (0006), legal context (0009) or provision time (0010)
        for act in SMALL_ACTS[:2]:
            store_act(c, act)  # no triggers yet: 0004 knows nothing of them
        assert c.execute("SELECT to_regclass('postings')").fetchone()[0] is None

    schema.upgrade(url)  # 0005 back-fills from the chunks, then the interface
    with psycopg.connect(url) as c:
        assert stats_vs_recompute(c) == EQUAL
        assert c.execute("SELECT count(*) FROM chunks").fetchone()[0] > 100
        q = "przekazanie informacji o incydencie"
        got = c.execute(TEXT_SQL, (q, 5, None, None)).fetchall()
        assert len(got) == 5 and got == c.execute("SELECT * FROM text_search_exact(%s, 5)", (q,)).fetchall()
        store_act(c, SMALL_ACTS[2])  # and the triggers keep it from here
        assert stats_vs_recompute(c) == EQUAL

    schema.downgrade(url, "0004")
    with psycopg.connect(url) as c:
        assert c.execute("SELECT to_regclass('postings'), to_regclass('lexicon')").fetchone() == (None, None)
        assert {r[0] for r in c.execute("SELECT matviewname FROM pg_matviews")} == {"lexeme_stats", "corpus_stats"}
        assert c.execute("""SELECT count(*) FROM (SELECT word, ndoc FROM ts_stat('SELECT tsv FROM chunks')
                            EXCEPT SELECT lexeme, ndoc FROM lexeme_stats) d""").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM sql_interface").fetchone()[0] == 0  # re-applied by whoever comes next

    schema.upgrade(url)
    with psycopg.connect(url) as c:
        assert stats_vs_recompute(c) == EQUAL
        assert len(c.execute(TEXT_SQL, ("przekazanie informacji o incydencie", 5, None, None)).fetchall()) == 5


def test_migration_0007_counts_each_text_once_and_downgrades(server_url, monkeypatch):
    """A database from before 0007 counted the unchanged chunks of a second version twice: the upgrade
    recounts from the postings (which stay), the downgrade counts every chunk again."""
    url = create_database(server_url, "migrate_0007", migrate=False)
    schema.upgrade(url, "0006")
    act = SMALL_ACTS[0]
    with psycopg.connect(url) as c, monkeypatch.context() as m:
        store_as_at(m, "0006")  # no legal context (0009) or provision time (0010)
        store_act(c, act)
        parsed = parsed_act(act)
        meta = json.loads((require_mirror() / "acts" / act / "meta.json").read_bytes())
        later = dataclasses.replace(parsed, articles=parsed.articles[:-1])
        assert store_text(c, meta, later, source_sha256="second", model=None).version_no == 2
        c.commit()
        every_chunk = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
        # (The interface's views come at head; below it the tables.)
        assert c.execute("SELECT chunks FROM corpus_totals").fetchone()[0] == every_chunk  # twice, mostly
        postings = c.execute("SELECT count(*) FROM postings").fetchone()[0]

    schema.upgrade(url)
    with psycopg.connect(url) as c:
        assert stats_vs_recompute(c) == EQUAL
        assert c.execute("SELECT chunks FROM corpus_stats").fetchone()[0] < every_chunk
        assert c.execute("SELECT count(*) FROM postings").fetchone()[0] == postings
        assert c.execute("SELECT sum(npostings) FROM lexicon").fetchone()[0] == postings
        store_act(c, SMALL_ACTS[1])  # and the triggers keep it from here
        c.commit()
        assert stats_vs_recompute(c) == EQUAL

    schema.downgrade(url, "0006")
    with psycopg.connect(url) as c:
        assert c.execute("""SELECT count(*) FROM (SELECT word, ndoc FROM ts_stat('SELECT tsv FROM chunks')
                            EXCEPT SELECT lexeme, ndoc FROM lexicon) d""").fetchone()[0] == 0
        assert c.execute("SELECT chunks FROM corpus_totals").fetchone()[0] == c.execute(
            "SELECT count(*) FROM chunks").fetchone()[0]
