"""bench.scale_*'s generator and measurements, without a built database: what a 1M build will load is
checked here first, and every bench script imports and answers --help."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # bench/ is a package of the repository, not of the installed project
    sys.path.insert(0, str(REPO))
_env = dict(os.environ)
from bench import scale_build, scale_common, scale_sparse, scale_text  # noqa: E402
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # bench.scale_common pins them; other tests must not see it
    if _name not in _env:
        os.environ.pop(_name, None)

TEXTS = [
    "Art. 1. § 1. Pracodawca jest obowiązany udzielić pracownikowi urlopu wypoczynkowego w wymiarze 20 dni. "
    "Pracownik może żądać urlopu na piśmie.\n§ 2. Przepisy stosuje się odpowiednio do umów zawartych przed 2019 r.",
    "Art. 2. Kto zabiera w celu przywłaszczenia cudzą rzecz ruchomą, podlega karze pozbawienia wolności "
    "od 3 miesięcy do lat 5. Ściganie następuje na wniosek pokrzywdzonego.",
    "Art. 3. (uchylony)",
]


def fake_source(acts: int = 3) -> scale_build.Source:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((acts * 4, scale_common.DIM)).astype(np.float32) + 2.0  # a cone, like e5's
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out, row = [], 0
    corpus: dict[str, int] = {}
    for a in range(acts):
        articles = []
        for i, text in enumerate(TEXTS + TEXTS[:1]):
            parts = [{"text": text, "embed_text": f"Ustawa z dnia 1 lipca 2020 r. o próbie | Art. {i + 1}\n{text}",
                      "row": row}]
            row += 1
            articles.append({"number": str(i + 1), "heading_path": ["Rozdział 1"], "repealed": "uchylony" in text,
                             "parts": parts})
        counts: dict[str, int] = {}
        for t in TEXTS:
            for w in scale_build.WORD.findall(t):
                counts[w] = counts.get(w, 0) + 1
                corpus[w] = corpus.get(w, 0) + 1
        sentences = [s for t in TEXTS for s in scale_build.SENTENCE_END.split(t) if len(s) > 20]
        out.append(scale_build.SourceAct(f"DU/2020/{a + 1}", "Ustawa z dnia 1 lipca 2020 r. o próbie", {"status": "x"},
                                   "html", "2020-07-01", articles, scale_build.Vocab(counts), sentences,
                                   np.asarray([len(s) for s in sentences])))
    cov = np.cov((vectors - vectors.mean(0)).T)
    lam, basis = np.linalg.eigh(cov)
    return scale_build.Source(out, scale_build.Vocab(corpus), vectors, (basis * np.sqrt(np.clip(lam, 0, None))).astype(np.float32),
                        {"sha256": "x", "partial": False})


def test_plan_fills_the_size_exactly_and_is_the_same_every_time():
    src = fake_source()
    plan = scale_build.make_plan(src, 1001, seed=7)
    assert sum(p.chunks for p in plan) == 1001
    assert [p.j for p in plan] == list(range(len(plan)))
    again = scale_build.make_plan(src, 1001, seed=7)
    assert [(p.src, p.articles) for p in plan] == [(p.src, p.articles) for p in again]
    assert scale_build.plan_fingerprint(plan, src.manifest, 7, 0.967) != scale_build.plan_fingerprint(plan, src.manifest, 7, 0.9)


def test_acts_are_varied_not_copied_and_keep_article_labels():
    src = fake_source()
    plan = scale_build.make_plan(src, 200, seed=7)
    rows = [scale_build.generate_act(p, src, 200, 7, 0.967) for p in plan]
    chunks = [c for r in rows for parts in r.chunks for c in parts]
    assert len({c[5] for c in chunks}) == len(chunks) == 200  # every text hash is new: no shared embeddings
    live = [c for c in chunks if not c[2]]  # "Art. 3. (uchylony)" has nothing to vary, as in real acts
    changed = [c for c in live if c[3] not in TEXTS]
    assert len(changed) > 0.9 * len(live)
    for c in chunks:
        assert re.match(r"Art\. \d+\.", c[3])  # the label stays, so the article still reads as one
        assert c[4].startswith("Ustawa z dnia ") and c[4].endswith("\n" + c[3])
    # The same plan and seed give the same act (a resumed build writes what the first run would have).
    assert scale_build.generate_act(plan[1], src, 200, 7, 0.967).chunks == rows[1].chunks


def test_synthetic_titles_and_elis_are_unique_and_valid():
    titles = {scale_build.synthetic_title("Ustawa z dnia 1 lipca 2020 r. o próbie", j) for j in range(5000)}
    assert len(titles) == 5000
    elis = [scale_build.synthetic_eli(j) for j in (0, 99_999, 100_000, 4000)]
    assert all(re.fullmatch(r"DU/[0-9]{4}/[0-9]+", e) for e in elis) and len(set(elis)) == 4
    assert scale_build.synthetic_title("Obwieszczenie … jednolitego tekstu ustawy - Kodeks pracy", 3).startswith(
        "Ustawa z dnia ")


@pytest.mark.parametrize("cos", [0.9, 0.967])
def test_varied_vectors_are_unit_length_at_the_asked_cosine(cos):
    src = fake_source()
    rng = np.random.default_rng(1)
    got = [scale_build.vary_vector(src.vectors[i], src.noise_basis, rng, cos) for i in range(len(src.vectors))]
    sims = [float(v @ src.vectors[i]) for i, (v, _) in enumerate(got)]
    assert all(abs(np.linalg.norm(v) - 1) < 1e-5 for v, _ in got)
    assert all(abs(s - c) < 1e-4 for s, (_, c) in zip(sims, got))
    assert abs(np.mean(sims) - cos) < 0.01


def test_exact_bm25_from_the_postings_equals_text_search_exact(scratch_url):
    """The 1M text-recall reference (full postings lists) must rank as the exhaustive text_search_exact()
    once the impacts carry the current average length (refresh_search_stats(); in a bench database the
    average hardly moves while it is built, and the two agree at 10k and 100k)."""
    import json

    from support.corpus import store_mirror_act
    from support.paths import EVAL_DIR, require_mirror
    from pipeline.storage import db

    require_mirror()
    with db.connect(scratch_url) as conn:
        for act in ("DU/2024/1513", "DU/2019/1026", "DU/2024/917"):
            store_mirror_act(conn, act)
        conn.execute("SELECT refresh_search_stats()")
        conn.commit()
    questions = [json.loads(line)["question"] for line in
                 (EVAL_DIR / "dev_questions.pl.jsonl").read_text(encoding="utf-8").splitlines()[:20]]
    with db.connect(scratch_url, autocommit=True) as conn:
        compared = 0
        for q in questions:
            _, from_postings = scale_text.postings_exact_topk(conn, q)
            _, exhaustive = scale_common.exact_text_topk(conn, q)
            assert from_postings == exhaustive, q
            compared += len(exhaustive) == scale_common.K
    assert compared >= 15


@pytest.mark.parametrize("alpha", [1.0, 0.7, 0.5])
def test_the_safe_text_plan_finds_the_exact_top_10_reading_less_than_the_whole_lists(alpha):
    """text-bounds' max-score plan (replayed on impact-ordered lists) must return the exhaustive top 10
    (it asserts so itself) while reading fewer postings than the lists hold."""
    rng = np.random.default_rng(3)
    chunks = 20_000
    lists, exact = [], {}
    for df, idf in ((12_000, 0.5), (3_000, 1.8), (400, 3.9)):  # a common, a mid and a rare query word
        ids = rng.choice(chunks, size=df, replace=False)
        contrib = np.sort(rng.gamma(2.0, 0.5, size=df))[::-1] * idf
        lists.append((ids.astype(np.int64), contrib))
        for c, x in zip(ids.tolist(), contrib.tolist()):
            exact[c] = exact.get(c, 0.0) + x
    reads, scored = scale_text._safe_plan(lists, exact, alpha)
    assert scale_common.K <= scored < len(exact)
    assert reads < sum(len(ids) for ids, _ in lists)


def test_candidate_recall_takes_the_two_approximations_apart():
    """text-bounds' equal-budget rows: reading every posting and rescoring every chunk is exact; a
    fixed depth per list spends half the budget on a common word and misses the rare word's deep
    postings, a budget spent by contribution does not; rescoring too few chunks loses the rest."""
    common = (np.arange(100, dtype=np.int64), np.linspace(1.0, 0.5, 100))  # chunks 0-99, low weight
    rare = (np.array([*range(9), 200], dtype=np.int64), np.linspace(9.0, 8.1, 10))  # 0-8 and 200
    lists = [common, rare]
    exact: dict[int, float] = {}
    for ids, contrib in lists:
        for c, x in zip(ids.tolist(), contrib.tolist()):
            exact[c] = exact.get(c, 0.0) + x
    truth = {c for c, _ in sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:scale_common.K]}
    assert truth == {*range(9), 200}
    everything = [len(i) for i, _ in lists]
    assert scale_text._candidate_recall(lists, truth, everything, 10_000, exact) == 1.0
    rows = scale_text._allocations(lists, exact, depth=5)  # 10 postings either way
    assert rows["fixed depth, 1000 rescored"] == pytest.approx(0.5)  # chunks 0-4 only
    assert rows["same budget by contribution, 1000 rescored"] == 1.0  # the whole rare list
    assert scale_text._candidate_recall(lists, truth, everything, 3, exact) == pytest.approx(0.3)


def test_ef_sweep_counts_an_equally_near_vector_as_a_tie_but_not_as_the_same_id(scratch_url):
    """Every vector is stored twice, under an even and an odd id: against the exact top 10 of the even
    copies, a scan of the odd copies finds nothing by id and everything with ties; farther vectors
    are no ties."""
    from pipeline.storage import db

    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((40, 3))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    query = "[1,0,0]"
    with db.connect(scratch_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE sweep_t (id integer PRIMARY KEY, embedding vector(3))")
        for i, v in enumerate(vecs):
            for copy in (0, 1):
                conn.execute("INSERT INTO sweep_t VALUES (%s, %s)", (2 * i + copy, "[" + ",".join(map(str, v)) + "]"))
        scan = ("SELECT id, embedding <=> %(v)s FROM sweep_t WHERE id %% 2 = {parity} "
                "ORDER BY embedding <=> %(v)s LIMIT 10 OFFSET {skip}")
        exact = scale_common.exact_scan(conn, scan.format(parity=0, skip=0), [{"v": query}])
        with conn.transaction(force_rollback=True):
            twins = scale_common.ef_sweep(conn, scan.format(parity=1, skip=0), [{"v": query}], exact, [40])["40"]
            farther = scale_common.ef_sweep(conn, scan.format(parity=1, skip=10), [{"v": query}], exact, [40])["40"]
    assert twins["recall"] == 0.0 and set(twins["recall_within"].values()) == {1.0}
    assert farther["recall"] == 0.0 and set(farther["recall_within"].values()) == {0.0}


def test_a_chunks_sparse_vector_scores_it_as_its_postings_and_the_prototype_arm_finds_the_top_10(scratch_url):
    """sparse-text's premise: a chunk's sparsevec (lexeme_id: impact) · the query's (lexeme_id: idf) is
    the chunk's Σ idf × impact over the full postings lists, so the graph's exact top 10 is the
    postings-exact top 10. And on a corpus this small both the shipped arm and the prototype
    (graph ∪ postings, scored by bm25_scores) find that top 10."""
    import json

    from support.corpus import store_mirror_act
    from support.paths import EVAL_DIR, require_mirror
    from pipeline.storage import db

    require_mirror()
    with db.connect(scratch_url) as conn:
        for act in ("DU/2024/1513", "DU/2019/1026"):
            store_mirror_act(conn, act)
        conn.commit()
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        questions = [json.loads(line)["question"] for line in
                     (EVAL_DIR / "dev_questions.pl.jsonl").read_text(encoding="utf-8").splitlines()[:12]]
        with conn.transaction(force_rollback=True):
            conn.execute(scale_sparse.SPARSE_TABLE)
            compared, queries = 0, []
            for q in questions:
                terms = conn.execute("SELECT search_terms(%s)", (q,)).fetchone()[0]
                qv = conn.execute(scale_sparse.SPARSE_QUERY, (terms,)).fetchone()[0]
                if qv is None:
                    continue
                queries.append((terms, qv))
                postings = dict(conn.execute(scale_sparse.POSTINGS_SCORES, (terms,)).fetchall())
                graph = conn.execute(scale_sparse.SPARSE_SCAN, {"q": qv}).fetchall()  # no index: a sequential scan
                assert [-d for _, d in graph] == pytest.approx(sorted(postings.values(), reverse=True)[:10], rel=1e-5)
                assert all(-d == pytest.approx(postings[c], rel=1e-5) for c, d in graph)
                compared += 1
            assert compared >= 10
            arms = scale_sparse.sparse_arms(conn, queries, chunks)
    assert len(arms) == 2 + len(scale_sparse.SPARSE_ARM_VARIANTS)
    assert {name: r["recall"] for name, r in arms.items()} == {name: 1.0 for name in arms}


def test_prewarm_reads_every_table_and_index_of_the_database(scratch_url):
    """measure's prewarm: every non-empty relation of the database (tables, TOAST, indexes) read
    through pg_prewarm, no more than the database holds (the extension is rolled back)."""
    from pipeline.storage import db

    with db.connect(scratch_url) as conn, conn.transaction(force_rollback=True):
        conn.execute("""CREATE TABLE prewarm_t AS  -- md5 text does not compress: 3200 characters go to TOAST
                        SELECT g AS id, (SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 100) i) AS t
                        FROM generate_series(1, 50) g""")
        conn.execute("CREATE INDEX ON prewarm_t (id)")
        got = scale_common.prewarm(conn)
        table, toast, index, database = conn.execute("""
            SELECT pg_relation_size('prewarm_t'), pg_relation_size(reltoastrelid),
                   pg_relation_size('prewarm_t_id_idx'), pg_database_size(current_database())
            FROM pg_class WHERE oid = 'prewarm_t'::regclass""").fetchone()
    assert toast > 0
    assert table + toast + index <= got["bytes"] <= database
    assert got["relations"] >= 3 and got["seconds"] >= 0


BENCH_MODULES = sorted(p.stem for p in (REPO / "bench").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", BENCH_MODULES)
def test_every_bench_module_imports_and_answers_help(name, monkeypatch, capsys):
    """`python -m bench.<name> --help` in process: the module imports (its own imports, the library's
    paths it names) and its parser is built; modules without a main are helpers."""
    import importlib

    pinned = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    try:
        module = importlib.import_module(f"bench.{name}")
        if not hasattr(module, "main"):
            assert name in ("common", "scale_common")
            return
        monkeypatch.setattr(sys, "argv", [f"bench.{name}", "--help"])
        with pytest.raises(SystemExit) as exit_:
            module.main()
        assert exit_.value.code == 0
        assert "usage:" in capsys.readouterr().out
    finally:
        for k, v in pinned.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
