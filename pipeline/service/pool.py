"""The service's database connections: a small pool that migrates once, warms each connection and
reconnects after a connection breaks."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import psycopg

from pipeline.core.errors import ConnectionLost, DatabaseError
from pipeline.storage import db, schema

log = logging.getLogger(__name__)

T = TypeVar("T")


class ConnectionPool:
    """At most ``size`` connections used at once; idle ones stay open.

    A caller (a CLI command, an MCP tool call in the SDK's worker thread, a web request) takes a
    connection of its own, so a slow call (an answer model thinking for a minute) holds up nobody
    else; the rest wait for a connection. Idle connections stay open because each has loaded the
    Polish dictionary (~0.2 s a connection). A connection that broke (server restart, network) is
    dropped with the idle ones, which broke with it; without a URL given, that also starts the
    embedded server again if it was stopped (`pipeline db stop`). The schema is brought to head once,
    on the first connection (migrations run implicitly, as for every command).
    """

    def __init__(self, url: str | None = None, *, size: int = 4, warm: bool = True) -> None:
        self._given_url = url  # None: DATABASE_URL, else the embedded server (started on demand)
        self._url = url
        self._checked = False
        self._url_lock = threading.Lock()
        self._idle: list[psycopg.Connection] = []
        self._idle_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self._warm = warm

    def url(self, *, again: bool = False) -> str:
        """The database's URL with its schema at head (the embedded server started when needed)."""
        with self._url_lock:
            if self._url is None or (again and self._given_url is None):
                self._url = db.database_url()  # starts the embedded server, or again after `db stop`
            if not self._checked:
                schema.ensure_current(self._url)
                self._checked = True
            return self._url

    def _connect(self) -> psycopg.Connection:
        try:
            conn = db.connect(self.url())
        except DatabaseError:
            if self._given_url is not None:
                raise
            conn = db.connect(self.url(again=True))
        if self._warm:
            # Each connection loads the Polish ispell dictionary on first use (~1 s): pay it now, once.
            conn.execute("SELECT search_tsquery('urlop')")
            conn.rollback()
        return conn

    def _take(self) -> psycopg.Connection:
        with self._idle_lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        return self._connect()

    def _give(self, conn: psycopg.Connection) -> None:
        if conn.closed:
            return
        conn.rollback()  # never leave a transaction open in the pool
        with self._idle_lock:
            self._idle.append(conn)

    def _drop_idle(self) -> None:
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def run(self, fn: Callable[[psycopg.Connection], T]) -> T:
        """``fn(conn)`` on a pooled connection, retried once on a new one when the connection broke:
        for reads, which are safe to run again."""
        with self._slots:
            for attempt in (1, 2):
                conn = self._take()
                try:
                    result = fn(conn)
                except (psycopg.OperationalError, ConnectionLost):
                    conn.close()
                    self._drop_idle()
                    if attempt == 2:
                        raise
                    log.warning("database connection lost; reconnecting")
                    continue
                except BaseException:
                    self._give(conn)
                    raise
                self._give(conn)
                return result
        raise AssertionError("unreachable")

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection for work that commits its own transactions (ingest, embed, sync): not
        retried, since it may have written half of what it was doing before the connection broke."""
        with self._slots:
            conn = self._take()
            try:
                yield conn
            except (psycopg.OperationalError, ConnectionLost):
                conn.close()
                self._drop_idle()
                raise
            except BaseException:
                self._give(conn)
                raise
            self._give(conn)

    def close(self) -> None:
        self._drop_idle()
