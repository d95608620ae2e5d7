"""The run log: a row of ``ingest_runs`` for each act an ingest stores (or fails to), the row of
``sync_runs`` of a sync, and the lock that lets one sync run at a time.

Written on a connection of its own in autocommit, opened once for the whole call: a failed act still
leaves its record, a "running" row is seen while its act's transaction is open, and the act's own
connection never commits anything but the act.
"""
from __future__ import annotations

import json
import os
import socket

import psycopg
from psycopg.types.json import Jsonb

from pipeline.storage import db
from pipeline.storage.store import SYNC_LOCK


class RunLog:
    """The run records of one ingest or sync call, on one autocommit connection to ``url`` (opened on
    first use, closed with :meth:`close`)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection | None = None

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = db.connect(self._url, autocommit=True)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, eli: str | None, source: str) -> int:
        """A "running" row for an act about to be ingested from ``source``; its run_id."""
        host = socket.gethostname()
        # Runs of this host whose process is gone (kill -9, power loss) never finished: say so.
        for run_id, pid in self.conn.execute(
            "SELECT run_id, pid FROM ingest_runs WHERE status = 'running' AND host = %s", (host,)
        ).fetchall():
            if pid and pid != os.getpid() and not db.pid_alive(pid):
                self.conn.execute(
                    "UPDATE ingest_runs SET status = 'failed', finished_at = now(), "
                    "message = 'process ended before the run finished (killed?)' "
                    "WHERE run_id = %s AND status = 'running'",
                    (run_id,),
                )
        return db.one_row(self.conn.execute(
            "INSERT INTO ingest_runs (eli, source, host, pid) VALUES (%s, %s, %s, %s) RETURNING run_id",
            (eli, source, host, os.getpid()),
        ))[0]

    def finish(self, run_id: int, status: str, *, version_id: int | None = None, message: str | None = None,
               stats: dict | None = None) -> None:
        self.conn.execute(
            "UPDATE ingest_runs SET finished_at = now(), status = %s, version_id = %s, message = %s, stats = %s "
            "WHERE run_id = %s",
            (status, version_id, message, Jsonb(json.loads(json.dumps(stats or {}, default=str))), run_id),
        )

    def try_sync_lock(self) -> bool:
        """Take the sync lock for this connection's session (False: another sync holds it)."""
        return bool(db.one_row(self.conn.execute("SELECT pg_try_advisory_lock(%s)", (SYNC_LOCK,)))[0])

    def release_sync_lock(self) -> None:
        if self._conn is not None and not self._conn.closed:
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (SYNC_LOCK,))
