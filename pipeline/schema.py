"""Migrations (alembic, plain SQL) applied to the database; every command makes sure of head."""
from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

import psycopg

from . import db


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


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(_config(url), revision)
    if revision == "head":
        from . import thesaurus

        with psycopg.connect(url) as conn:  # data, not schema: re-read the file on every upgrade
            thesaurus.sync(conn)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(_config(url), revision)


def ensure_current(url: str) -> None:
    """Upgrade to head when behind (cheap check first: one query)."""
    with psycopg.connect(url, autocommit=True) as conn:
        if current_revision(conn) == head_revision():
            return
    upgrade(url)
