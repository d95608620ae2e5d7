"""Migrations (alembic, plain SQL) applied to the database; every command makes sure of head."""
from __future__ import annotations

import psycopg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from . import db
from .search import SEARCH_CHUNKS_SIGNATURE


def _config(url: str) -> Config:
    if not db.MIGRATIONS_DIR.is_dir():
        raise db.DatabaseError(f"migrations not found at {db.MIGRATIONS_DIR}; install pipeline from its source tree (pip install -e .)")
    cfg = Config()
    cfg.set_main_option("script_location", str(db.MIGRATIONS_DIR))
    cfg.attributes["url"] = url
    return cfg


def head_revision() -> str:
    return ScriptDirectory.from_config(_config("")).get_current_head() or ""


def current_revision(conn: psycopg.Connection) -> str | None:
    row = conn.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


def _reachable(url: str) -> None:
    """DatabaseError saying what to fix, before alembic turns a refused connection into an unexpected error."""
    db.connect(url, autocommit=True).close()


def upgrade(url: str, revision: str = "head") -> None:
    _reachable(url)
    command.upgrade(_config(url), revision)
    if revision == "head":
        from . import thesaurus

        with psycopg.connect(url) as conn:  # data, not schema: re-read the file on every upgrade
            thesaurus.sync(conn)


def downgrade(url: str, revision: str) -> None:
    _reachable(url)
    command.downgrade(_config(url), revision)


def ensure_current(url: str) -> None:
    """Upgrade to head when behind (cheap check first: one query)."""
    with db.connect(url, autocommit=True) as conn:
        if current_revision(conn) == head_revision():
            return
    upgrade(url)


# What a reader may use: the documented views and functions (README: "Querying with SQL").
READER_VIEWS = ("current_versions", "current_articles", "current_chunks", "embedding_status", "thesaurus")
READER_FUNCTIONS = (
    "versions_as_of(date)",
    "thesaurus_expansion(text)",
    "search_terms(text)",
    "search_tsquery(text)",
    SEARCH_CHUNKS_SIGNATURE,
)


def grant_reader(url: str, role: str, password: str | None = None) -> None:
    """Create (or restrict) ROLE so it can only SELECT the documented views and call the search functions."""
    from psycopg import sql

    if not role.replace("_", "").isalnum() or not role[0].isalpha():
        raise ValueError(f"role name {role!r}: use letters, digits and _ (starting with a letter)")
    with psycopg.connect(url) as conn, conn.transaction():
        ident = sql.Identifier(role)
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(ident))
        if password is not None:
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(ident, sql.Literal(password)))
        db_name = conn.execute("SELECT current_database()").fetchone()[0]
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(db_name), ident))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(_schema(conn)), ident))
        conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(sql.Identifier(_schema(conn)), ident))
        for view in READER_VIEWS:
            conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(view), ident))
        for fn in READER_FUNCTIONS:  # fixed signatures above, not user input
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION " + fn + " TO {}").format(ident))


def _schema(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT current_schema()").fetchone()[0]
