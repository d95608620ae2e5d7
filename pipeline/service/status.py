"""What `pipeline db status` and `pipeline doctor` report, about the service's own database and embedder
(pipeline.service.Service.status and .doctor hand them in)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import dict_row

from pipeline.core.errors import is_for_the_user, one_line
from pipeline.core.redact import redact_url
from pipeline.embedders import Embedder, EmbedderError, sparse_head
from pipeline.storage import db, queue, schema

if TYPE_CHECKING:
    from pipeline.answering.answer import ChatConfig


def database_status(url: str, *, server: str, embedder: Callable[[], Embedder],
                    standbys: Sequence[str] = ()) -> dict[str, Any]:
    """The server (``server``: "embedded" or "external"), versions, migration state, row counts and
    embedding progress of the database at ``url``, where it stands in replication (``replication``:
    a standby's lag, a primary's standbys), and the embedder ``embedder()`` gives; ``standbys``: the
    URLs the reads go to (DATABASE_READ_URL), each with its own state (``read_replicas``)."""
    with db.connect(url, autocommit=True) as conn:
        version = db.one_row(conn.execute("SHOW server_version"))[0]
        created, available = pgvector_versions(conn)
        current = schema.current_revision(conn)
        info: dict[str, Any] = {
            "server": server,
            "postgresql": version.split()[0],
            "pgvector": created or (f"{available} (available, not created)" if available else None),
            "migration": current,
            "migration_head": schema.head_revision(),
            "migration_state": schema.migration_state(current),
            "text_search": text_search_kind(conn),
            "replication": db.replication(conn),
            "rows": {},
            "embeddings": [],
        }
        if current:
            for table in ("acts", "act_versions", "articles", "chunks", "chunk_pieces", "embeddings",
                          "sparse_embeddings", "embedding_queue", "ingest_runs"):
                # After a downgrade, tables of later revisions (chunk_pieces: 0006) are not there.
                if db.one_row(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)))[0]:
                    info["rows"][table] = db.one_row(conn.execute(f"SELECT count(*) FROM {table}"))[0]  # fixed names
            if db.one_row(conn.execute("SELECT to_regclass('embedding_status') IS NOT NULL"))[0]:
                # All columns: sparse_embedded exists from revision 0008 on.
                info["embeddings"] = conn.cursor(row_factory=dict_row).execute(
                    "SELECT * FROM embedding_status").fetchall()
            worker = queue.worker(conn)  # the background embedding (pipeline.indexing.worker), None: none runs
            info["embedding_worker"] = worker.to_dict() if worker else None
            if db.one_row(conn.execute("SELECT to_regclass('corpus_totals') IS NOT NULL"))[0]:
                # Distinct chunk texts (kept by triggers since revision 0007): what sparse vectors cover.
                info["chunk_texts"] = db.one_row(conn.execute("SELECT chunks FROM corpus_totals"))[0]
    info["embedder"] = embedder_description(embedder)
    if standbys:
        info["read_replicas"] = [read_replica(u) for u in standbys]
    return info


def read_replica(url: str) -> dict[str, Any]:
    """One server of DATABASE_READ_URL: its (redacted) URL, migration and replication state, or why it
    cannot be read."""
    try:
        with db.connect(url, autocommit=True) as conn:
            current = schema.current_revision(conn)
            return {"url": redact_url(url), "migration": current, "migration_state": schema.migration_state(current),
                    **db.replication(conn)}
    except Exception as exc:
        if not is_for_the_user(exc) and not isinstance(exc, psycopg.Error):
            raise
        return {"url": redact_url(url), "error": one_line(exc)}


def pgvector_versions(conn: psycopg.Connection) -> tuple[str | None, str | None]:
    """pgvector's version in this database (None: not created) and the one the server offers (None: not installed)."""
    row = db.one_row(conn.cursor(row_factory=dict_row).execute(
        "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS created, "
        "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available"
    ))
    return row["created"], row["available"]


def text_search_kind(conn) -> str:
    """Which dictionaries the `polish` configuration uses (ispell = lemmatising, simple = fallback)."""
    row = conn.execute(
        """
        SELECT string_agg(DISTINCT d.dictname, ', ')
        FROM pg_ts_config c
        JOIN pg_ts_config_map m ON m.mapcfg = c.oid
        JOIN pg_ts_dict d ON d.oid = m.mapdict
        WHERE c.cfgname = 'polish'
        """
    ).fetchone()
    return f"polish ({row[0]})" if row and row[0] else "missing"


def embedder_description(embedder: Callable[[], Embedder]) -> dict[str, Any]:
    try:
        return embedder().describe()
    except EmbedderError as exc:
        return {"error": str(exc)}


def _data_check(conn: psycopg.Connection) -> tuple[str, str, str, str]:
    """No text stored: a new install, or a lost data folder (monitoring reads this check's status)."""
    acts, versions = db.one_row(conn.execute("SELECT (SELECT count(*) FROM acts), (SELECT count(*) FROM act_versions)"))
    if not versions:
        return ("data", "warn", f"no text stored ({acts} act records)", "run: pipeline ingest --act DU/2025/277")
    return ("data", "ok", f"{versions} text{'' if versions == 1 else 's'} of {acts} act{'' if acts == 1 else 's'}", "")


def _search_stats_check(conn: psycopg.Connection) -> tuple[str, str, str, str]:
    """The BM25 statistics that triggers keep (revision 0005/0007) against the chunks: rows written with
    the triggers off (a data-only pg_restore --disable-triggers) leave them wrong, and the text arm
    then ranks with nonsense idf while every query still returns rows."""
    counted, texts, lexemes = db.one_row(conn.execute(
        "SELECT (SELECT chunks FROM corpus_totals), (SELECT count(DISTINCT content_sha256) FROM chunks), "
        "(SELECT count(*) FROM lexicon)"))
    if counted == texts and (lexemes > 0) == (texts > 0):
        return ("search statistics", "ok", f"{texts} distinct chunk texts, {lexemes} lexemes", "")
    return ("search statistics", "fail", f"BM25 statistics count {counted} texts and {lexemes} lexemes, the chunks "
            f"hold {texts} texts: text search ranks wrongly (chunks written with triggers off?)",
            "psql \"$(pipeline db url)\" -c 'SELECT refresh_search_stats()'")


def _has_sparse_head(embedder: Callable[[], Embedder]) -> bool:
    """The embedder has a sparse head (loads the local model: doctor embeds a probe anyway)."""
    try:
        return sparse_head(embedder()) is not None
    except EmbedderError:
        return False


def _vectors_check(conn: psycopg.Connection, embedder: Callable[[], Embedder]) -> tuple[str, str, str, str]:
    """Texts with no vector for the service's model, queued or not (e.g. stored before a model switch):
    the vector arm cannot find their articles. An anti-join over every text: seconds at 1M chunks."""
    try:
        model = embedder().name
    except EmbedderError:
        return "vectors", "warn", "no embedding model configured", "check EMBED_BACKEND / EMBED_MODEL"
    texts, missing = db.one_row(conn.execute(
        """
        SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
                   SELECT 1 FROM embeddings e WHERE e.content_sha256 = u.content_sha256 AND e.model = %s))
        FROM (SELECT DISTINCT content_sha256 FROM embedding_texts) u
        """, (model,)))
    if not texts:
        return "vectors", "ok", "no texts stored yet", ""
    if not missing and db.one_row(conn.execute("SELECT to_regclass('sparse_models') IS NOT NULL"))[0]:
        # A model with a sparse head (revision 0008) also needs one sparse vector per chunk text. Before a
        # worker with the head has run (a database embedded before 0008), the model is not registered.
        registered = db.one_row(conn.execute("SELECT EXISTS (SELECT 1 FROM sparse_models WHERE model = %s)",
                                  (model,)))[0]
        if not registered and _has_sparse_head(embedder):
            return ("vectors", "warn", f"no chunk text has a {model} sparse vector (embedded before this pipeline "
                    "added them): hybrid search runs without its sparse arm", "run: pipeline embed")
        sparse_missing = 0 if not registered else db.one_row(conn.execute(
            """
            SELECT count(*) FROM (SELECT DISTINCT content_sha256 FROM chunks) u
            WHERE NOT EXISTS (SELECT 1 FROM sparse_embeddings s WHERE s.content_sha256 = u.content_sha256
                              AND s.model = %s)
            """, (model,)))[0]
        if sparse_missing:
            return ("vectors", "warn", f"{sparse_missing} chunk texts have no {model} sparse vector: the sparse arm "
                    "cannot find their articles", "run: pipeline embed")
    if not missing:
        return "vectors", "ok", f"all {texts} texts have a {model} vector", ""
    return ("vectors", "warn", f"{missing} of {texts} texts have no {model} vector: hybrid search, ask and the "
            "refusal rule cannot see their articles", "run: pipeline embed")


Check = tuple[str, str, str, str]  # name, ok|warn|fail, detail, fix

# A standby this far behind what it received is reported (bytes of WAL not replayed yet).
STANDBY_BEHIND_WARN = 16 * 1024 * 1024


def _standby_check(replica: dict[str, Any]) -> Check:
    """A server of DATABASE_READ_URL: it answers, is a standby at head, streams, and has replayed what
    it received."""
    name = f"standby {replica['url']}"
    if "error" in replica:
        return name, "fail", replica["error"], "start it, or take it out of DATABASE_READ_URL"
    if replica["migration_state"] != "current":
        return (name, "fail", f"at revision {replica['migration'] or 'none'}, head {schema.head_revision()}",
                "run: pipeline db upgrade against the primary, and let the standby replay it")
    if replica["role"] != "standby":
        return name, "warn", "not a standby: a primary (reads there are not spread off the primary)", ""
    if not replica["streaming"]:
        return name, "warn", "not streaming from its primary: it serves what it had", "check the primary and the standby's log"
    behind = replica["behind_bytes"]
    if behind > STANDBY_BEHIND_WARN:
        return name, "warn", f"{behind} bytes received and not replayed yet", "check the standby's load and log"
    return name, "ok", f"streaming, {behind} bytes to replay", ""


def doctor(url: Callable[[], str], *, server: str, embedder: Callable[[], Embedder],
           config: ChatConfig | None = None, standbys: Sequence[str] = ()) -> list[dict[str, str]]:
    """Check every dependency of the service: its database (``url()``: the URL, the embedded server
    started when needed; ``server``: "embedded" or "external"), the standbys its reads go to
    (``standbys``), ``embedder()`` and the answer model.
    Each check is {name, status: ok|warn|fail, detail, fix}; a check that fails to run is a "fail"
    with its reason, the others still run, and no connection is left open."""
    checks: list[dict[str, str]] = []

    def add(name: str, status: str, detail: str, fix: str = "") -> None:
        checks.append({"name": name, "status": status, "detail": detail, "fix": fix})

    try:
        with db.connect(url(), autocommit=True) as conn:
            version = db.one_row(conn.execute("SHOW server_version_num"))[0]
            major = int(version) // 10000
            add("database", "ok" if major >= 15 else "fail", f"{server} PostgreSQL {major}",
                "" if major >= 15 else "use PostgreSQL 15 or newer")
            for check in _database_checks(conn, embedder):
                add(*check)
    except Exception as exc:
        if not is_for_the_user(exc):
            raise
        if not checks:
            add("database", "fail", one_line(exc),
                "set DATABASE_URL to a reachable server, or unset it to use the embedded one" if server == "external"
                else "fix what the error says (e.g. free disk space under PIPELINE_HOME), or set DATABASE_URL")
        else:  # connected, but a check could not read what it reads
            add("database checks", "fail", one_line(exc), "run: pipeline db upgrade (then pipeline doctor again)")
    for standby in standbys:
        add(*_standby_check(read_replica(standby)))

    try:
        model = embedder()
        vector = model.embed_query("test")
        add("embedder", "ok", f"{model.backend} {model.name}, {len(vector)} dimensions")
    except EmbedderError as exc:
        add("embedder", "fail", str(exc), "check EMBED_BACKEND / EMBED_MODEL / OLLAMA_URL / EMBED_BASE_URL")

    from pipeline.answering.answer import ChatConfig, probe  # only doctor asks the model: not every command

    config = config or ChatConfig.from_env()
    if config.configured:
        # Reached, not only configured: a dead server would otherwise pass until the first `ask`.
        problem = probe(config)
        add("answer model", "fail" if problem else "ok", config.describe() + (f": {problem}" if problem else ""),
            "check ANSWER_BASE_URL / the key, and that the server runs" if problem else "")
    else:
        add("answer model", "warn", config.describe() + "; `ask` answers offline with cited sentences",
            "set OPENROUTER_API_KEY (or ANSWER_BASE_URL for a local OpenAI-compatible server)")
    return checks


def _database_checks(conn: psycopg.Connection, embedder: Callable[[], Embedder]) -> Iterator[Check]:
    """The checks of a reachable database, in order; an error reading one ends them (the caller says so)."""
    created, available = pgvector_versions(conn)
    if created:
        ok = tuple(int(x) for x in created.split(".")[:2]) >= (0, 8)
        yield ("pgvector", "ok" if ok else "fail", f"pgvector {created}",
               "" if ok else "upgrade pgvector to 0.8 or newer")
    elif available:
        yield ("pgvector", "warn", f"pgvector {available} available, not created yet", "run: pipeline db upgrade")
    else:
        yield ("pgvector", "fail", "pgvector is not installed on the server",
               "use the pgvector/pgvector image or install it")
    current, head = schema.current_revision(conn), schema.head_revision()
    state = schema.migration_state(current)
    if state == "ahead":
        yield ("migrations", "fail", f"at {current}, newer than this pipeline (head {head})",
               "install the pipeline version that migrated it, or a newer one")
    else:
        yield ("migrations", "ok" if state == "current" else "warn", f"at {current or 'none'}, head {head}",
               "" if state == "current" else "run: pipeline db upgrade")
    kind = text_search_kind(conn)
    if "ispell" in kind:
        yield ("text search", "ok", kind + ": Polish base forms", "")
    elif kind == "missing":
        yield ("text search", "warn", "no 'polish' configuration", "run: pipeline db upgrade")
    else:
        yield ("text search", "warn", kind + ": no Polish dictionary, words are matched as typed",
               "install the dictionary files (docs/operations.md: docker-compose) and run: pipeline db upgrade")
    if current:
        failing = db.one_row(conn.cursor(row_factory=dict_row).execute(
            "SELECT count(*) AS n, max(last_error) AS last_error FROM embedding_queue WHERE last_error IS NOT NULL"
        ))
        queued = db.one_row(conn.execute("SELECT count(*) FROM embedding_queue"))[0]
        if failing["n"]:
            yield ("embedding queue", "warn", f"{queued} queued, {failing['n']} failing: {failing['last_error']}",
                   "fix the embedder, then: pipeline embed")
        else:
            yield ("embedding queue", "ok" if not queued else "warn", f"{queued} queued",
                   "" if not queued else "run: pipeline embed")
        yield _vectors_check(conn, embedder)
        yield _data_check(conn)
    if state == "current":
        yield _search_stats_check(conn)
