"""Hybrid retrieval: the SQL function search_chunks(), pipeline.retrieval.search.search(), `pipeline search`, the thesaurus.

The corpus databases (Kodeks pracy + patient rights) are only read here: every connection to them is
opened read-only. Data that must change lives in databases of this module. Tests of the search logic
run on the stand-in model's corpus, and again (marked slow) on the real model's.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import store_text
from support.database import create_database
from support.paths import ELI_MIRROR, require_mirror
from embedding_stand_in import StandInEmbedder

from pipeline.storage import db
from pipeline.indexing import embed
from pipeline.sources.fetch import InvalidActId
from pipeline.sources.parse import Article
from pipeline.sources.parse.html import parse_html
from pipeline.embedders import sparse_head
from pipeline.retrieval.search import Scope, SearchSettings, profile, search

KP = "DU/2025/277"  # Kodeks pracy, consolidated 2025 (its base act: DU/1974/141)
PATIENT = "DU/2024/581"  # patient rights, consolidated 2024
LEAVE_ON_DEMAND = "Ile dni urlopu na żądanie mogę wziąć w ciągu roku?"
NOTICE = "Jaki mam okres wypowiedzenia, jeśli pracuję w firmie od 4 lat?"
INJECTED_QUESTION = "'); DROP TABLE chunks;--"
INJECTED_ACT = "DU/2025/277' OR '1'='1"
SEARCH_SQL = "SELECT * FROM search_chunks(%s, %s::vector, %s, %s, %s, %s, %s, %s)"


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["stand-in", pytest.param("e5", marks=pytest.mark.slow)])
def model(request) -> tuple:
    """(corpus database URL, its embedder): the stand-in model's corpus, and the real model's (slow)."""
    if request.param == "e5":
        from pipeline.embedders.local import LocalEmbedder

        return request.getfixturevalue("corpus_url"), LocalEmbedder()
    return request.getfixturevalue("stand_in_corpus_url"), StandInEmbedder()


@pytest.fixture(scope="module")
def embedder(model):
    return model[1]


@pytest.fixture()
def corpus(model):
    """A read-only session on a shared corpus database."""
    conn = db.connect(model[0])
    conn.execute("SET SESSION default_transaction_read_only = on")
    conn.commit()
    yield conn
    conn.close()


def _chunk_facts(conn: psycopg.Connection, chunk_ids: list[int]) -> dict[int, tuple[int, bool]]:
    """chunk_id -> (version_id, repealed)."""
    rows = conn.execute("SELECT chunk_id, version_id, repealed FROM chunks WHERE chunk_id = ANY(%s)", (chunk_ids,))
    facts = {r[0]: (r[1], r[2]) for r in rows}
    conn.rollback()
    return facts


TELEHEALTH = ("Art. 21a. Pacjent ma prawo do teleporady oraz wideokonsultacji z lekarzem, "
              "jeżeli teleporada nie zagraża jego zdrowiu.")
V2_DATE = dt.date(2025, 9, 1)


@pytest.fixture(scope="module")
def versions(server_url):
    """Two texts of the patient rights act: the real one (in force from 2024-04-16) and a later
    one (from 2025-09-01) that adds art. 21a, repeals art. 5 and rewords art. 21; stand-in vectors."""
    require_mirror()
    url = create_database(server_url, "search_versions")
    folder = ELI_MIRROR / "acts" / "DU" / "2024" / "581"
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    data = (folder / "text.html").read_bytes()
    first = parse_html(data)
    later = []
    for a in first.articles:
        if a.number == "5":
            a = Article("5", "Art. 5. (uchylony)", a.heading_path, repealed=True)
        elif a.number == "21":
            a = dataclasses.replace(a, text=a.text + "\n4. Osoba bliska może towarzyszyć pacjentowi w gabinecie.")
        later.append(a)
        if a.number == "21":
            later.append(Article("21a", TELEHEALTH, a.heading_path))
    second = dataclasses.replace(first, articles=later)
    embedder = StandInEmbedder()
    with db.connect(url) as conn:
        r1 = store_text(conn, meta, first, model=embedder.name)
        r2 = store_text(conn, {**meta, "legalStatusDate": V2_DATE.isoformat()}, second, model=embedder.name)
        assert (r1.status, r2.status, r2.version_no) == ("new", "new", 2)
        embed.drain(conn, embedder, batch_size=256)
        ids = dict(conn.execute("SELECT version_no, version_id FROM act_versions WHERE eli = %s", (PATIENT,)).fetchall())
        conn.commit()
    return url, ids[1], ids[2]


@pytest.fixture()
def vconn(versions):
    conn = db.connect(versions[0])
    yield conn
    conn.close()


# --- filters -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_act_filter_keeps_k_rows_of_that_act_only(corpus, embedder, mode):
    # A labour-law question restricted to the patient act: the filter is selective, k must still be met.
    hits = search(corpus, NOTICE, embedder, scope=Scope(acts=[PATIENT]), settings=SearchSettings(k=10, mode=mode))
    assert len(hits) == 10
    assert {h.act for h in hits} == {PATIENT}
    unfiltered = search(corpus, NOTICE, embedder, settings=SearchSettings(k=10, mode=mode))
    assert KP in {h.act for h in unfiltered}  # without the filter the labour code answers


def test_base_act_id_selects_its_consolidated_text(corpus):
    # DU/2025/277 is "Tekst jednolity dla aktu" DU/1974/141 (the Labour Code as enacted).
    hits = search(corpus, LEAVE_ON_DEMAND, None, scope=Scope(acts=["DU/1974/141"]), settings=SearchSettings(k=5, mode="text"))
    assert len(hits) == 5 and {h.act for h in hits} == {KP}


def test_as_of_picks_the_version_in_force_and_keeps_k(vconn, versions):
    _, v1, v2 = versions
    embedder = StandInEmbedder()
    for as_of, version in [(dt.date(2024, 12, 31), v1), (V2_DATE, v2), (None, v2), (dt.date(2026, 1, 1), v2)]:
        for mode in ("hybrid", "vector", "text"):
            hits = search(vconn, "Czy lekarz może odmówić obecności osoby bliskiej?", embedder, as_of=as_of, settings=SearchSettings(k=10, mode=mode))
            assert len(hits) == 10, (as_of, mode)
            assert {f[0] for f in _chunk_facts(vconn, [h.chunk_id for h in hits]).values()} == {version}, (as_of, mode)
            assert len({h.article for h in hits}) == 10  # one version: articles are not doubled


def test_as_of_sees_an_article_only_while_it_exists(vconn):
    embedder = StandInEmbedder()
    query = "teleporada wideokonsultacja"
    later = search(vconn, query, embedder, as_of=V2_DATE, settings=SearchSettings(k=3, mode="text"))
    assert (later[0].act, later[0].article) == (PATIENT, "21a")
    earlier = search(vconn, query, embedder, as_of=V2_DATE - dt.timedelta(days=1), settings=SearchSettings(k=3, mode="hybrid"))
    assert "21a" not in {h.article for h in earlier}
    reworded = search(vconn, "towarzyszyć gabinecie", embedder, settings=SearchSettings(k=1, mode="text"))
    assert reworded[0].article == "21" and "towarzyszyć pacjentowi w gabinecie" in reworded[0].text
    # Before the first text was in force the act has no text at all.
    assert search(vconn, query, embedder, as_of=dt.date(2020, 1, 1), settings=SearchSettings(k=3, mode="hybrid")) == []


def test_repealed_articles_only_on_request(vconn, corpus, embedder):
    current = search(vconn, "uchylony", StandInEmbedder(), settings=SearchSettings(k=100, mode="hybrid"))
    assert "5" not in {h.article for h in current}
    assert not any(r for _, r in _chunk_facts(vconn, [h.chunk_id for h in current]).values())
    with_repealed = search(vconn, "uchylony", StandInEmbedder(), scope=Scope(include_repealed=True), settings=SearchSettings(k=5, mode="text"))
    assert with_repealed[0].article == "5" and with_repealed[0].text == "Art. 5. (uchylony)"
    # Kodeks pracy has 95 "(uchylony)" chunks: none comes back unless asked for.
    for mode in ("text", "hybrid"):
        hits = search(corpus, "uchylony", embedder, settings=SearchSettings(k=20, mode=mode))
        assert len(hits) == 20
        assert not any(r for _, r in _chunk_facts(corpus, [h.chunk_id for h in hits]).values())
    hits = search(corpus, "uchylony", None, scope=Scope(include_repealed=True), settings=SearchSettings(k=20, mode="text"))
    assert len(hits) == 20 and all(r for _, r in _chunk_facts(corpus, [h.chunk_id for h in hits]).values())


# --- modes, ranks, fusion ------------------------------------------------------------------------


def test_modes_fill_their_own_columns(corpus, embedder):
    text = search(corpus, LEAVE_ON_DEMAND, None, settings=SearchSettings(k=10, mode="text"))
    assert len(text) == 10
    assert all(h.similarity is None and h.vector_rank is None for h in text)
    assert all(h.text_score is not None and h.text_rank is not None for h in text)
    assert [h.text_score for h in text] == sorted((h.text_score for h in text), reverse=True)

    vector = search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=10, mode="vector"))
    assert len(vector) == 10
    assert all(h.text_score is None and h.text_rank is None for h in vector)
    assert all(-1 <= h.similarity <= 1 for h in vector)
    assert [h.similarity for h in vector] == sorted((h.similarity for h in vector), reverse=True)
    assert [h.vector_rank for h in vector] == sorted(h.vector_rank for h in vector)

    for hits in (text, vector):
        assert hits[0].act == KP and hits[0].article == "167^2"


def test_hybrid_score_is_reciprocal_rank_fusion(corpus, embedder):
    hits = search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=30, fusion=profile(embedder.name).fusion.overridden({"fusion": "rrf"})))
    assert len(hits) == 30
    prof = profile(embedder.name)  # the model's default weights of the arms and rrf_k
    vw, tw, sw, rk = prof.fusion.vector_weight, prof.fusion.text_weight, prof.fusion.sparse_weight, prof.fusion.rrf_k
    for h in hits:
        expected = ((vw / (rk + h.vector_rank) if h.vector_rank else 0) + (tw / (rk + h.text_rank) if h.text_rank else 0)
                    + (sw / (rk + h.sparse_rank) if h.sparse_rank else 0))
        assert h.score == pytest.approx(expected, rel=1e-12)
        assert (h.similarity is None) == (h.vector_rank is None)
        assert (h.text_score is None) == (h.text_rank is None)
        assert (h.sparse_score is None) == (h.sparse_rank is None)
    # The local model's sparse head takes part (revision 0008); the stand-in has none.
    assert any(h.sparse_rank for h in hits) == (sparse_head(embedder) is not None)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert any(h.vector_rank and h.text_rank for h in hits)  # both arms contribute
    # Weights scale each arm's share.
    weighted = search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=10, fusion=profile(embedder.name).fusion.overridden({"fusion": "rrf", "vector_weight": 1.0, "text_weight": 0.0, "sparse_weight": 0.0})))
    assert all(h.score == pytest.approx(1 / (rk + h.vector_rank)) for h in weighted if h.vector_rank)


def _affine_in(hits: list, attr: str, weight: float) -> None:
    """The scores of ``hits`` (one arm weighted alone) are an increasing affine map of the arm's own
    score onto [0, weight]: min-max normalised."""
    arm = [h for h in hits if getattr(h, attr) is not None]
    assert arm[0].score == pytest.approx(weight)
    slope = (arm[0].score - arm[-1].score) / (getattr(arm[0], attr) - getattr(arm[-1], attr))
    assert slope > 0
    for h in arm:
        assert h.score == pytest.approx(arm[0].score - slope * (getattr(arm[0], attr) - getattr(h, attr)), abs=1e-6)


def test_convex_fusion_adds_normalised_arm_scores(corpus, embedder):
    hits = search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=40, fusion=profile(embedder.name).fusion.overridden({"fusion": "convex", "vector_weight": 0.6, "text_weight": 0.4, "sparse_weight": 0.2})))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0 <= h.score <= 1.2 + 1e-9 for h in hits)
    # Each arm alone: min-max normalised over its candidates.
    _affine_in(search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=40, fusion=profile(embedder.name).fusion.overridden({"fusion": "convex", "vector_weight": 0.0, "text_weight": 0.4, "sparse_weight": 0.0}))), "text_score", 0.4)
    _affine_in(search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=40, fusion=profile(embedder.name).fusion.overridden({"fusion": "convex", "vector_weight": 0.6, "text_weight": 0.0, "sparse_weight": 0.0}))), "similarity", 0.6)
    if sparse_head(embedder) is not None:
        _affine_in(search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(k=40, fusion=profile(embedder.name).fusion.overridden({"fusion": "convex", "vector_weight": 0.0, "text_weight": 0.0, "sparse_weight": 0.2}))), "sparse_score", 0.2)
    with pytest.raises(ValueError, match="fusion must be one of"):
        search(corpus, LEAVE_ON_DEMAND, embedder, settings=SearchSettings(fusion=profile(embedder.name).fusion.overridden({"fusion": "sum"})))


def test_convex_fusion_gives_a_lone_candidate_its_arms_full_weight(corpus, embedder):
    """Min-max over one candidate (or tied ones) has no range: the candidate gets the arm's weight, not 0.
    A word found in one chunk only is the text arm's single candidate."""
    lexeme = corpus.execute("SELECT lexeme FROM lexicon WHERE npostings = 1 AND length(lexeme) > 8 "
                            "AND lexeme ~ '^[a-ząćęłńóśźż]+$' ORDER BY lexeme LIMIT 1").fetchone()[0]
    corpus.rollback()
    text = search(corpus, lexeme, None, settings=SearchSettings(k=5, mode="text"))
    assert len(text) == 1
    hits = search(corpus, lexeme, embedder, settings=SearchSettings(k=10, fusion=profile(embedder.name).fusion.overridden({"fusion": "convex", "vector_weight": 0.6, "text_weight": 0.4, "sparse_weight": 0.0})))
    (lone,) = [h for h in hits if h.text_rank]
    assert lone.chunk_id == text[0].chunk_id and lone.score >= 0.4 - 1e-9


def test_hnsw_ef_search_grows_with_the_vectors_stored(stand_in_corpus_url):
    """search_chunks() sets hnsw.ef_search to 2 × fetch_k, at least 40 and √(vectors stored), at most 1000
    (a fixed ef_search loses recall as the graph grows: docs/scaling.md). The vector count is the planner's
    estimate, set here inside a transaction that is rolled back."""
    embedder = StandInEmbedder()
    vec = embedder.embed_query(LEAVE_ON_DEMAND)
    seen: list[str] = []
    with db.connect(stand_in_corpus_url) as c:
        c.add_notice_handler(lambda d: seen.append(d.message_primary)
                             if d.message_primary.startswith("search_chunks: hnsw.ef_search") else None)

        def ef_search(fetch_k: int, mode: str = "hybrid") -> int | None:
            seen.clear()
            rows = c.execute("SELECT chunk_id FROM search_chunks(%s, %s::vector, %s, 10, mode => %s, fetch_k => %s)",
                             (LEAVE_ON_DEMAND, vec, embedder.name, mode, fetch_k)).fetchall()
            assert rows
            return int(seen[-1].split()[-1]) if seen else None

        with c.transaction(force_rollback=True):
            c.execute("SET LOCAL client_min_messages = debug1")
            for vectors, fetch_k, expected in [
                (-1, 10, 40),            # never analyzed: the floor
                (3_000, 10, 55),         # √3000 = 54.8
                (3_000, 100, 200),       # 2 × fetch_k
                (250_000, 100, 500),     # √N
                (4_000_000, 10, 1000),   # pgvector's maximum
                (100, 700, 1000),
            ]:
                c.execute("UPDATE pg_class SET reltuples = %s WHERE oid = 'embeddings'::regclass", (vectors,))
                assert ef_search(fetch_k) == expected, (vectors, fetch_k)
                assert ef_search(fetch_k, "vector") == expected
            assert ef_search(10, "text") is None  # no vector arm, no HNSW scan


def test_one_row_per_article(corpus, embedder):
    hits = search(corpus, "wynagrodzenie za pracę w godzinach nadliczbowych", embedder, settings=SearchSettings(k=60))
    keys = [(h.act, h.article) for h in hits]
    assert len(keys) == 60 and len(set(keys)) == 60
    # Long articles come in parts; only the best part is kept, and it may be a later one.
    assert any(h.part > 1 for h in hits)


@pytest.mark.parametrize(
    "args, message",
    [
        (("q", None, None, 5, None, None, False, "fuzzy"), "mode must be hybrid, vector, text or sparse, not fuzzy"),
        (("q", None, None, 0, None, None, False, "text"), "k must be between 1 and 1000, not 0"),
        (("q", None, None, 1001, None, None, False, "text"), "k must be between 1 and 1000, not 1001"),
        # 4 k overflows an integer: still the documented 22023, not 22003
        (("q", None, None, 2147483647, None, None, False, "text"), "k must be between 1 and 1000, not 2147483647"),
        (("q", None, None, 5, None, None, False, "hybrid"), "hybrid search needs query_embedding and model; both are NULL"),
        (("q", None, "{model}", 5, None, None, False, "vector"),
         "vector search needs query_embedding and model; query_embedding is NULL"),
        (("q", "[1,0,0]", "{model}", 5, None, None, False, "vector"),
         "query vector has 3 dimensions, model {model} has {dimensions}"),
        (("q", "[1,0,0]", "no-such-model", 5, None, None, False, "vector"),
         "no embeddings for model no-such-model (run pipeline embed)"),
        (("q", None, None, 5, None, None, False, "text", 60, 1.0, 1.0, None, "sum"),
         "fusion must be rrf or convex, not sum"),
        # NULLs and values that used to pass as an empty answer, NaN scores or a raw executor error
        (("q", None, None, 5, None, None, False, None), "mode must be hybrid, vector, text or sparse, not NULL"),
        (("q", None, None, None, None, None, False, "text"), "k must be between 1 and 1000, not NULL"),
        (("q", None, None, 5, None, None, False, "text", 60, 1.0, 1.0, None, None), "fusion must be rrf or convex, not NULL"),
        (("q", None, None, 5, None, None, False, "text", -1, 1.0, 1.0, None, "rrf"),
         "rrf_k must be between 0 and 100000, not -1"),
        (("q", None, None, 5, None, None, False, "text", None, 1.0, 1.0, None, "rrf"),
         "rrf_k must be between 0 and 100000, not NULL"),
        (("q", None, None, 5, None, None, False, "text", 60, 1.0, 1.0, 0, "rrf"),
         "fetch_k must be between 1 and 10000 (or NULL for the default), not 0"),
        (("q", None, None, 5, None, None, False, "text", 60, 1.0, 1.0, 100_000_000, "rrf"),
         "fetch_k must be between 1 and 10000 (or NULL for the default), not 100000000"),
        (("q", None, None, 5, None, None, False, "text", 60, float("nan"), 1.0, None, "rrf"),
         "vector_weight, text_weight and sparse_weight must be finite numbers, 0 or more, not NaN, 1, 1"),
        (("q", None, None, 5, None, None, False, "text", 60, 1.0, float("inf"), None, "convex"),
         "vector_weight, text_weight and sparse_weight must be finite numbers, 0 or more, not 1, Infinity, 1"),
        (("q", "{zeros}", "{model}", 5, None, None, False, "vector"), "query_embedding is a zero vector"),
        # An act filter that matches no stored act is a mistake, not "no matching law".
        (("q", None, None, 5, ["DU/1999/1"], None, False, "text"),
         "act DU/1999/1 is not in the database (ELI ids are written as DU/2025/277; current_acts lists them)"),
        (("q", None, None, 5, ["du/2025/277"], None, False, "text"),
         "act du/2025/277 is not in the database (ELI ids are written as DU/2025/277; current_acts lists them)"),
        (("q", None, None, 5, [], None, False, "text"),
         "acts is empty: give ELI ids such as DU/2025/277, or NULL for every act"),
    ],
)
def test_bad_arguments_raise_clear_sql_errors(corpus, embedder, args, message):
    zeros = "[" + ",".join(["0"] * embedder.dimensions) + "]"
    args = tuple(a.format(model=embedder.name, zeros=zeros) if isinstance(a, str) else a for a in args)  # the corpus's model
    sql = SEARCH_SQL if len(args) == 8 else SEARCH_SQL.replace("%s)", "%s, %s, %s, %s, %s, %s)")
    with pytest.raises(psycopg.errors.InvalidParameterValue) as info:
        corpus.execute(sql, args)
    corpus.rollback()
    assert info.value.diag.message_primary == message.format(model=embedder.name, dimensions=embedder.dimensions)


def test_text_search_exact_checks_k_as_search_chunks_does(corpus):
    for k, shown in ((0, "0"), (None, "NULL"), (-3, "-3")):
        with pytest.raises(psycopg.errors.InvalidParameterValue) as info:
            corpus.execute("SELECT * FROM text_search_exact('urlop', %s)", (k,))
        corpus.rollback()
        assert info.value.diag.message_primary == f"k must be between 1 and 1000, not {shown}"
    assert len(corpus.execute("SELECT * FROM text_search_exact('urlop', 3)").fetchall()) == 3


def test_python_side_rejects_bad_input(corpus):
    with pytest.raises(ValueError, match="mode must be one of"):
        search(corpus, "urlop", None, settings=SearchSettings(mode="fuzzy"))
    with pytest.raises(ValueError, match="empty"):
        search(corpus, "  ", None, settings=SearchSettings(mode="text"))
    with pytest.raises(ValueError, match="needs an embedder"):
        search(corpus, "urlop", None, settings=SearchSettings(mode="hybrid"))
    with pytest.raises(InvalidActId, match="invalid act id"):
        search(corpus, "urlop", None, scope=Scope(acts=[INJECTED_ACT]), settings=SearchSettings(mode="text"))


# --- injection -----------------------------------------------------------------------------------


def _table_counts(conn: psycopg.Connection) -> tuple:
    row = conn.execute("SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM acts), "
                       "(SELECT count(*) FROM embeddings)").fetchone()
    conn.rollback()
    return row


@pytest.mark.parametrize("question", [INJECTED_QUESTION, "urlop' OR '1'='1", "urlop:* & !(pracownik) <-> 'x' | \\"])
def test_injection_in_the_question_is_just_text(vconn, versions, question):
    before = _table_counts(vconn)
    hits = search(vconn, question, StandInEmbedder(), settings=SearchSettings(k=5))
    assert len(hits) == 5 and {h.act for h in hits} == {PATIENT}
    assert _table_counts(vconn) == before
    result = run_cli("search", question, "--mode", "text", "--json", env={"DATABASE_URL": versions[0]})
    assert result.returncode == 0, result.stderr
    assert isinstance(json.loads(result.stdout), list)
    assert _table_counts(vconn) == before


def test_search_json_hits_carry_rank_and_citation(versions):
    result = run_cli("search", "prawa pacjenta", "--mode", "text", "--json", env={"DATABASE_URL": versions[0]})
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits and [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all(h["citation"] == f"[{h['act']}, art. {h['article']}]" for h in hits)


def test_injection_in_an_act_id_is_only_a_name_that_is_not_stored(corpus):
    before = _table_counts(corpus)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as info:
        corpus.execute(SEARCH_SQL, ("urlop", None, None, 5, [INJECTED_ACT], None, False, "text"))
    corpus.rollback()
    assert info.value.diag.message_primary.startswith(f"act {INJECTED_ACT} is not in the database")
    assert _table_counts(corpus) == before


def test_injection_in_an_act_id_is_a_one_line_cli_error(stand_in_corpus_url, embedding_stand_in):
    result = run_cli("search", "urlop", "--mode", "text", "--act", INJECTED_ACT,
                     env={"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "Error: Invalid value for '--act': invalid act id \"DU/2025/277' OR '1'='1\"" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("Error: Invalid value for '--act': invalid act id")


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_search_json(stand_in_corpus_url, embedding_stand_in):
    result = run_cli("search", LEAVE_ON_DEMAND, "--json",
                     env={"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()})
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert len(hits) == 5
    assert all({"act", "article", "text", "score", "similarity", "text_score"} <= h.keys() for h in hits)
    assert (KP, "167^2") in [(h["act"], h["article"]) for h in hits]
    assert "nie więcej niż 4 dni urlopu" in next(h["text"] for h in hits if h["article"] == "167^2")


def test_cli_search_text_mode_and_act_filter(stand_in_corpus_url, embedding_stand_in):
    result = run_cli("search", LEAVE_ON_DEMAND, "--mode", "text", "--act", PATIENT, "-k", "3", "--json",
                     env={"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()})
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert len(hits) == 3
    assert all(h["act"] == PATIENT and h["similarity"] is None and h["text_score"] > 0 for h in hits)


def test_cli_search_human_output(stand_in_corpus_url, embedding_stand_in):
    result = run_cli("search", LEAVE_ON_DEMAND, "-k", "3",
                     env={"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    heads = [ln for ln in lines if re.match(r"^\s*\d+\. ", ln)]
    assert len(heads) == 3
    pattern = re.compile(r"^ ?\d\. DU/\d{4}/\d+ art\. \S+( \(part \d+\))?  score \d\.\d{4}  "
                         r"vector (\d\.\d{3}|-) \(#(\d+|-)\)  text (\d+\.\d\d|-) \(#(\d+|-)\)$")
    for ln in heads:
        assert pattern.match(ln), ln
    assert heads[0].startswith(" 1. DU/2025/277 art. 167²  score ")  # superscripts as printed


# --- thesaurus -----------------------------------------------------------------------------------


def test_colloquial_words_expand_to_statutory_terms(corpus):
    terms = corpus.execute("SELECT search_terms('Czy moja mama może być ze mną?')").fetchone()[0]
    corpus.rollback()
    assert {"osoba", "bliski", "mama"} <= set(terms)


@pytest.fixture()
def thesaurus_url(server_url) -> str:
    return create_database(server_url, "search_thesaurus")


def test_user_thesaurus_rows_expand_queries_and_survive_upgrade(thesaurus_url):
    with psycopg.connect(thesaurus_url) as conn:
        sql = "SELECT search_terms('Czy dostanę sabbatical?')"
        assert "bezpłatny" not in conn.execute(sql).fetchone()[0]
        conn.execute("INSERT INTO thesaurus (term, expansion) VALUES ('sabbatical', 'urlop bezpłatny')")
        assert {"urlop", "bezpłatny", "sabbatical"} <= set(conn.execute(sql).fetchone()[0])
        conn.execute("DELETE FROM thesaurus WHERE term = 'mama' AND source = 'file'")  # upgrade restores it
        conn.commit()
        files = conn.execute("SELECT count(*) FROM thesaurus WHERE source = 'file'").fetchone()[0]

    result = run_cli("db", "upgrade", env={"DATABASE_URL": thesaurus_url})
    assert result.returncode == 0, result.stderr

    with psycopg.connect(thesaurus_url) as conn:
        rows = conn.execute("SELECT term, expansion, source FROM thesaurus WHERE source = 'user'").fetchall()
        assert rows == [("sabbatical", "urlop bezpłatny", "user")]
        assert conn.execute("SELECT count(*) FROM thesaurus WHERE term = 'mama'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM thesaurus WHERE source = 'file'").fetchone()[0] == files + 1
        assert "bezpłatny" in conn.execute("SELECT search_terms('sabbatical')").fetchone()[0]


def test_thesaurus_expansion_reaches_search(vconn, versions):
    # "mama" is in no patient-rights article; its expansion "osoba bliska" is (art. 21 and the definitions).
    hits = search(vconn, "mama", None, settings=SearchSettings(k=5, mode="text"))
    assert "21" in {h.article for h in hits}
    assert all("mama" not in h.text.lower() for h in hits)
