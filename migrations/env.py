"""Alembic environment: plain SQL migrations (no ORM models), URL from pipeline.storage.db."""
from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from pipeline.storage import db
from pipeline.storage.schema import UPGRADE_LOCK

config = context.config


def run_migrations_online() -> None:
    url = config.attributes.get("url") or db.database_url()
    engine = create_engine(db.sqlalchemy_url(url), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, transactional_ddl=True)
        with context.begin_transaction():
            # Two processes upgrading at once: the second waits, then finds nothing to do.
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({UPGRADE_LOCK})")
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run against a database")
run_migrations_online()
