"""Migrations (alembic, plain SQL) applied to the database; every command makes sure of head."""
from __future__ import annotations

import ast
import contextlib
import hashlib
import logging
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import psycopg

from pipeline.storage import db, derived
from pipeline.core.redact import redact_url
from pipeline.core.errors import UsageError, one_line
from pipeline.core.limits import (MAX_READER_CONNECTIONS, READER_CONNECTION_LIMIT, READER_IDLE_IN_TRANSACTION,
                                  READER_STATEMENT_TIMEOUT, READER_TEMP_FILE_LIMIT)
from pipeline.core.resources import MIGRATIONS_DIR, SQL_DIR

log = logging.getLogger(__name__)

# The public SQL interface (docs/sql.md): idempotent files applied in this order after
# the incremental revisions, as one step, whenever their content changes (pgai's incremental +
# idempotent split). A revision never reads them: it runs its own frozen SQL.
INTERFACE_FILES = ("polish_fts.sql", "views.sql", "currency.sql", "thesaurus.sql", "legal_time.sql", "search.sql",
                   "context.sql", "amendments.sql", "delegations.sql",
                   "security.sql")  # last: it pins and hands over the functions the others made
# Migrations and the interface step take this lock, so two processes upgrading at once serialize.
UPGRADE_LOCK = 7419001


def _config(url: str):
    # alembic (and SQLAlchemy under it) load only when a migration runs: ~0.25 s off every command.
    from alembic.config import Config

    if not MIGRATIONS_DIR.is_dir():
        raise db.DatabaseError(f"migrations not found at {MIGRATIONS_DIR}; the installed package is incomplete "
                               "(reinstall pipeline)")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url
    return cfg


@lru_cache(maxsize=1)
def _revisions() -> dict[str, tuple[str | None, str]]:
    """Each revision: (its down_revision, the first line of its docstring), read off the revision files
    with ast. Every command compares the head with the database, so it must be cheap; alembic's own
    ScriptDirectory (the authority when migrating) costs a quarter of a second of imports. A test
    holds the two equal."""
    revisions: dict[str, tuple[str | None, str]] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        names: dict[str, Any] = {}  # what literal_eval read
        module = ast.parse(path.read_text(encoding="utf-8"))
        for node in module.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if node.targets[0].id in ("revision", "down_revision"):
                    names[node.targets[0].id] = ast.literal_eval(node.value)
        if isinstance(names.get("revision"), str):
            revisions[names["revision"]] = (names.get("down_revision"),
                                            (ast.get_docstring(module) or "").split("\n", 1)[0])
    return revisions


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision (the one no other revision names as its down_revision)."""
    revisions = _revisions()
    heads = set(revisions) - {down for down, _ in revisions.values()}
    if len(heads) != 1:
        raise db.DatabaseError(f"migrations in {MIGRATIONS_DIR} have {len(heads)} heads; reinstall pipeline")
    return heads.pop()


def revisions_between(current: str | None, target: str | None) -> list[tuple[str, str]]:
    """(revision, what it did) for each revision a downgrade from ``current`` to ``target`` (None:
    base) undoes, newest first."""
    revisions = _revisions()
    undone, rev = [], current
    while rev is not None and rev != target and rev in revisions:
        down, summary = revisions[rev]
        undone.append((rev, summary))
        rev = down
    return undone


def newer_than_code(revision: str | None) -> bool:
    """The database is at a revision this pipeline does not have: a newer pipeline migrated it (or a
    backup from a newer install was restored here)."""
    return revision is not None and revision not in _revisions()


MIGRATION_STATES = ("none", "behind", "current", "ahead")


def migration_state(revision: str | None) -> str:
    """Where a database at ``revision`` stands against this pipeline's migrations: "none" (never
    migrated), "behind" (`pipeline db upgrade` brings it to head), "current", or "ahead" (a newer
    pipeline migrated it)."""
    if revision is None:
        return "none"
    if newer_than_code(revision):
        return "ahead"
    return "current" if revision == head_revision() else "behind"


def refuse_newer(current: str | None) -> None:
    if newer_than_code(current):
        raise db.DatabaseError(f"the database is at revision {current}, newer than this pipeline (head "
                               f"{head_revision()}): install the pipeline version that migrated it, or a newer one")


def _preflight(url: str) -> None:
    """What a migration cannot fix, said before alembic starts (which would turn each into an
    unexpected error), on one connection: an unreachable server (db.connect says what to fix), a
    database newer than this code, a server without pgvector, a read-only one (_refuse_read_only)."""
    with db.connect(url, autocommit=True) as conn:
        refuse_newer(current_revision(conn))
        vector = db.one_row(conn.execute("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"))[0]
        if not vector:
            raise db.DatabaseError(f"the server at {redact_url(url)} has no pgvector extension: install pgvector 0.8 "
                                   "or newer there (e.g. the pgvector/pgvector image), or unset DATABASE_URL to use "
                                   "the embedded server")
        _refuse_read_only(conn, url)


@lru_cache(maxsize=1)
def interface_sql() -> tuple[str, str]:
    """The public interface's SQL (all files, in order) and its sha256."""
    text = "\n".join((SQL_DIR / name).read_text(encoding="utf-8") for name in INTERFACE_FILES)
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()


def applied_interface(conn: psycopg.Connection) -> str | None:
    """sha256 of the interface SQL last applied to this database (None: never, or before revision 0003)."""
    row = conn.execute("SELECT to_regclass('sql_interface') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    row = conn.execute("SELECT sha256 FROM sql_interface").fetchone()
    return row[0] if row else None


def apply_interface(url: str, *, force: bool = False) -> bool:
    """Apply sql/*.sql in one transaction when its content differs from the applied one (or always, with
    force: e.g. after Polish dictionary files were added to the server). True when it ran."""
    text, sha = interface_sql()
    warned: list[str] = []
    with psycopg.connect(url) as conn, conn.transaction():
        # What the interface could not do and went on without (sql/security.sql: no owner role where the
        # role may not create one) is said, not lost among the server's notices.
        def keep(notice: psycopg.errors.Diagnostic) -> None:
            if notice.severity_nonlocalized == "WARNING":
                warned.append(notice.message_primary or "")

        conn.add_notice_handler(keep)
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (UPGRADE_LOCK,))
        if not force and applied_interface(conn) == sha:
            return False  # another process applied it while we waited
        conn.execute(text)
        conn.execute("INSERT INTO sql_interface (sha256) VALUES (%s) ON CONFLICT (singleton) "
                     "DO UPDATE SET sha256 = excluded.sha256, applied_at = now()", (sha,))
    for message in warned:
        log.warning("warning: %s", message)
    return True


def current_revision(conn: psycopg.Connection) -> str | None:
    row = conn.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


def _refuse_read_only(conn: psycopg.Connection, url: str) -> None:
    """DatabaseError naming the cause when the server is read-only (a hot standby, or read-only by
    default), before a migration fails there on its first statement ("cannot execute ALTER TEXT
    SEARCH CONFIGURATION in a read-only transaction"). Migrations run on the primary only; a
    standby gets them by replaying its WAL."""
    standby, read_only = db.one_row(conn.execute(
        "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'"))
    if not (standby or read_only):
        return
    have = f"revision {current_revision(conn) or 'none'}, SQL interface {(applied_interface(conn) or 'none')[:12]}"
    want = f"revision {head_revision()}, SQL interface {interface_sql()[1][:12]}"
    what = "a read-only standby (in recovery)" if standby else "read-only (transaction_read_only is on)"
    raise db.DatabaseError(
        f"the database at {redact_url(url)} is {what}, so its schema cannot be migrated here: it has {have}, "
        f"this pipeline needs {want}; run `pipeline db upgrade` against the primary (and wait for the "
        "standby to replay it), or use a pipeline of the version the primary was migrated with"
    )


def upgrade(url: str, revision: str = "head", *, force_interface: bool = False) -> None:
    _preflight(url)
    from alembic import command

    with _known_revision(revision):
        command.upgrade(_config(url), revision)
    if revision == "head":
        from pipeline.storage import thesaurus

        apply_interface(url, force=force_interface)

        with psycopg.connect(url) as conn:  # data, not schema: re-read the file on every upgrade
            thesaurus.sync(conn)
        backfill_derived(url)


def downgrade(url: str, revision: str) -> None:
    _preflight(url)
    from alembic import command

    with _known_revision(revision):
        command.downgrade(_config(url), revision)


@contextlib.contextmanager
def _known_revision(revision: str) -> Iterator[None]:
    """alembic's refusals (an unknown revision, a downgrade "target" above the current one) become
    usage errors; an unknown one lists the revisions there are."""
    from alembic.util import CommandError

    try:
        yield
    except CommandError as exc:
        if "locate revision" in str(exc) or "No such revision" in str(exc):
            known = sorted(_revisions())
            raise UsageError(f"no revision {revision!r}; known: {', '.join(known)}, head, base") from None
        raise UsageError(one_line(exc)) from None


def ensure_current(url: str) -> None:
    """Upgrade to head when behind (cheap check first: one query). At head nothing is written, so a
    read-only standby serves reads; behind, a standby is a DatabaseError that says to migrate the primary."""
    with db.connect(url, autocommit=True) as conn:
        try:
            current = current_revision(conn)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise db.DatabaseError(
                f"the role in DATABASE_URL may not read the pipeline's tables ({one_line(exc)}): a read-only role "
                "(pipeline db grant-reader) is for SQL through the views and search_chunks(); the pipeline "
                "needs the role that owns its tables") from None
        if current == head_revision() and applied_interface(conn) == interface_sql()[1]:
            if derived.any_stale(conn) and not db.one_row(conn.execute("SELECT pg_is_in_recovery()"))[0]:
                backfill_derived(url)  # not on a standby: it serves reads, without what it lacks
            return
    refuse_newer(current)
    upgrade(url)


def backfill_derived(url: str) -> int:
    """Work out the derived data (pipeline.storage.derived) of the texts the current rules have not worked
    out; one upgrader at a time, as for migrations."""
    with psycopg.connect(url) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (UPGRADE_LOCK,))
        try:
            conn.commit()
            return derived.backfill(conn)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (UPGRADE_LOCK,))
            conn.commit()


def open_current() -> tuple[str, psycopg.Connection]:
    """Database URL and a connection, with the schema at head (migrations run implicitly)."""
    url = db.database_url()
    ensure_current(url)
    return url, db.connect(url)


# What a reader may use: the documented views and functions (docs/sql.md).
# Every view of docs/sql.md's table.
READER_VIEWS = ("current_versions", "current_articles", "version_articles", "current_chunks", "embedding_status",
                "embedding_texts", "thesaurus", "act_currency", "current_acts", "lexeme_stats", "corpus_stats",
                "article_references", "definitions", "article_timelines", "entry_rules", "amendment_changes",
                "delegations")
READER_FUNCTIONS = (
    "versions_as_of(date)",
    "articles_as_of(date)",
    "thesaurus_expansion(text)",
    "search_terms(text)",
    "search_tsquery(text)",
    "search_chunks",  # by name: its signature is written once, in sql/search.sql
    "text_search_exact(text, integer)",
    "sparse_query(text, sparsevec)",
)


# A duration as PostgreSQL writes one: "500ms", "5s", "2min", "1h" (units: docs/sql.md#read-only-access).
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000}
MAX_READER_TIMEOUT_MS = 24 * 3_600_000


def reader_timeout_ms(timeout: str | int | float) -> int:
    """A read-only role's statement timeout in milliseconds: a duration with its unit ("5s", "500ms",
    "2min", "1h") or, from Python, a number of seconds; a UsageError unless from 1 ms to 24 h."""
    import math
    import re

    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        ms = round(timeout * 1000) if math.isfinite(timeout) else 0  # NaN, infinity: refused below
    else:
        found = re.fullmatch(r"\s*(\d{1,9})\s*(ms|s|min|h)\s*", timeout) if isinstance(timeout, str) else None
        if not found:
            raise UsageError(f"statement timeout {timeout!r}: give a number and a unit (500ms, 5s, 2min, 1h)",
                             param="--statement-timeout")
        ms = int(found[1]) * _DURATION_UNITS_MS[found[2]]
    if not 1 <= ms <= MAX_READER_TIMEOUT_MS:
        raise UsageError(f"statement timeout {timeout!r}: from 1ms to 24h", param="--statement-timeout")
    return ms


def grant_reader(url: str, role: str, password: str | None = None, *,
                 statement_timeout: str | int | float = READER_STATEMENT_TIMEOUT,
                 connection_limit: int = READER_CONNECTION_LIMIT) -> dict:
    """Create (or restrict) ROLE so it can only SELECT the documented views and call the search functions,
    with a statement timeout (in this database) and a connection limit, and no temporary tables. A
    superuser, a role owning the pipeline's tables or functions (revoking its rights would stop the
    pipeline) and PostgreSQL's own pg_* roles are refused. Returns {can_log_in, statement_timeout (as
    PostgreSQL shows it), connection_limit, owner_role (whom the search functions run as), notes (what
    the caller must be told: TEMPORARY taken from PUBLIC, or left to it)}."""
    from psycopg import sql

    timeout_ms = reader_timeout_ms(statement_timeout)
    if isinstance(connection_limit, bool) or not isinstance(connection_limit, int) \
            or not 1 <= connection_limit <= MAX_READER_CONNECTIONS:
        raise UsageError(f"connection limit {connection_limit!r}: a whole number from 1 to {MAX_READER_CONNECTIONS}",
                         param="--connection-limit")
    if not role.replace("_", "").isalnum() or not role[0].isalpha():
        raise UsageError(f"role name {role!r}: use letters, digits and _ (starting with a letter)", param="ROLE")
    if role.lower().startswith("pg_"):
        raise UsageError(f"role name {role!r}: names starting with pg_ are PostgreSQL's own roles", param="ROLE")
    # Words PostgreSQL reserves for roles: quoted, "PUBLIC" would be created as a role of that name while every
    # GRANT … TO PUBLIC means every role.
    if role.lower() in ("public", "none", "current_user", "session_user", "current_role", "user"):
        raise UsageError(f"role name {role!r}: a name PostgreSQL reserves for roles; choose another", param="ROLE")
    ensure_current(url)
    notes: list[str] = []
    with psycopg.connect(url) as conn, conn.transaction():
        ident = sql.Identifier(role)
        found = conn.execute(
            "SELECT r.rolsuper, EXISTS (SELECT 1 FROM pg_class c WHERE c.relowner = r.oid "
            "AND c.relnamespace = current_schema()::regnamespace) OR EXISTS (SELECT 1 FROM pg_proc p "
            "WHERE p.proowner = r.oid AND p.pronamespace = current_schema()::regnamespace) OR r.rolname = current_user "
            "FROM pg_roles r WHERE r.rolname = %s", (role,)).fetchone()
        if found and found[0]:
            raise UsageError(f"role {role} is a superuser: it reads everything whatever is granted; "
                             "choose another name for a read-only role", param="ROLE")
        if found and found[1]:
            raise UsageError(f"role {role} owns the pipeline's tables or functions (or is the role running this "
                             "command): it cannot be made read-only; choose another name", param="ROLE")
        if not found:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(ident))
        if password is not None:
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(ident, sql.Literal(password)))
        db_name = db.one_row(conn.execute("SELECT current_database()"))[0]
        database = sql.Identifier(db_name)
        conn.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(ident, sql.Literal(connection_limit)))
        # In this database only: the role may read other databases of the server under other rules.
        conn.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} SET statement_timeout = {}").format(
            ident, database, sql.Literal(timeout_ms)))
        conn.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} SET idle_in_transaction_session_timeout = {}").format(
            ident, database, sql.Literal(READER_IDLE_IN_TRANSACTION)))
        # The timeouts are defaults the role may SET otherwise (PostgreSQL has no way to forbid it); this one it
        # may not: only a role with SET on the parameter (a superuser) may set it, for the role as for itself.
        if db.one_row(conn.execute("SELECT has_parameter_privilege('temp_file_limit', 'SET')"))[0]:
            conn.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} SET temp_file_limit = {}").format(
                ident, database, sql.Literal(READER_TEMP_FILE_LIMIT)))
        else:
            notes.append(f"{role} may write temporary files without limit (a sort spilled to disk): only a superuser "
                         f"can run ALTER ROLE {role} IN DATABASE {db_name} SET temp_file_limit = "
                         f"'{READER_TEMP_FILE_LIMIT}'")
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, ident))
        notes += _revoke_temporary(conn, role, db_name)
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(_schema(conn)), ident))
        conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(sql.Identifier(_schema(conn)), ident))
        for view in READER_VIEWS:
            conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(view), ident))
        for fn in READER_FUNCTIONS:  # fixed signatures above, not user input
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION " + fn + " TO {}").format(ident))
        can_log_in, owner = db.one_row(conn.execute(
            "SELECT r.rolcanlogin, (SELECT p.proowner::regrole::text FROM pg_proc p "
            "WHERE p.oid = 'search_chunks'::regproc) FROM pg_roles r WHERE r.rolname = %s", (role,)))
    return {"can_log_in": can_log_in, "statement_timeout": _shown_duration(timeout_ms),
            "connection_limit": connection_limit, "owner_role": owner, "notes": notes}


def _revoke_temporary(conn: psycopg.Connection, role: str, db_name: str) -> list[str]:
    """Take TEMPORARY (temporary tables, views and functions: what the definer functions' hijack needed)
    from ``role`` in this database. PostgreSQL grants it to PUBLIC, every role, and a role keeps what
    PUBLIC holds whatever is revoked from it by name; so it is revoked from PUBLIC, and given back by
    name to the roles owning the pipeline's tables (migrations use temporary tables). Other roles that
    need temporary tables here must then be granted them by name. The notes say what the caller must
    be told."""
    from psycopg import sql

    database, ident = sql.Identifier(db_name), sql.Identifier(role)
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(database, ident))
    if not db.one_row(conn.execute("SELECT has_database_privilege('public', current_database(), 'TEMPORARY')"))[0]:
        return []
    for (owner,) in conn.execute(
            "SELECT DISTINCT r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
            "WHERE c.relnamespace = current_schema()::regnamespace AND NOT r.rolsuper").fetchall():
        conn.execute(sql.SQL("GRANT TEMPORARY ON DATABASE {} TO {}").format(database, sql.Identifier(owner)))
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(database))
    if db.one_row(conn.execute("SELECT has_database_privilege(%s, current_database(), 'TEMPORARY')", (role,)))[0]:
        return [f"{role} can still create temporary tables: only the owner of database {db_name} can take "
                f"TEMPORARY from PUBLIC (REVOKE TEMPORARY ON DATABASE {db_name} FROM PUBLIC)"]
    return [f"TEMPORARY on database {db_name} is now revoked from PUBLIC (every role had it): grant it by name "
            f"to a role that needs temporary tables here (GRANT TEMPORARY ON DATABASE {db_name} TO …)"]


def _shown_duration(ms: int) -> str:
    """Milliseconds as PostgreSQL shows a duration: the largest unit that divides it."""
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _schema(conn: psycopg.Connection) -> str:
    return db.one_row(conn.execute("SELECT current_schema()"))[0]
