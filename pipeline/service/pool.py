"""The service's database connections: a small pool that migrates once, warms each connection and
reconnects after a connection breaks; over one server, or over several standbys taken in turn."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import psycopg

from pipeline.core.errors import ConnectionLost, DatabaseError, one_line
from pipeline.core.redact import redact_url
from pipeline.storage import db, schema

log = logging.getLogger(__name__)

T = TypeVar("T")

# A standby that did not answer is skipped this long while another one answers: a dead host's TCP
# connect waits connect_timeout (10 s), which every new connection would otherwise pay again.
DOWN_SECONDS = 5.0


class ConnectionPool:
    """At most ``size`` connections used at once; idle ones stay open.

    A caller (a CLI command, an MCP tool call in the SDK's worker thread, a web request) takes a
    connection of its own, so a slow call (an answer model thinking for a minute) holds up nobody
    else; the rest wait for a connection. Idle connections stay open because each has loaded the
    Polish dictionary (~0.2 s a connection). A connection that broke (server restart, network) is
    dropped with the idle ones, which broke with it; without a URL given, that also starts the
    embedded server again if it was stopped (`pipeline db stop`). The schema is brought to head once
    per server, on its first connection (migrations run implicitly, as for every command; a standby
    at head is only read, one behind is a DatabaseError that says to migrate the primary).

    ``url``: one URL, None (DATABASE_URL, else the embedded server), or several (read replicas): each
    new connection goes to the next of them in turn, and one that does not answer is passed over for
    the others (DOWN_SECONDS) until none is left. ``what`` names the servers in that last error.
    """

    def __init__(self, url: str | Sequence[str] | None = None, *, size: int = 4, warm: bool = True,
                 what: str = "DATABASE_URL") -> None:
        given = (url,) if isinstance(url, str) else tuple(url or ())
        self._given = given  # empty: DATABASE_URL, else the embedded server (started on demand)
        self._url: str | None = given[0] if given else None
        self._checked: set[str] = set()  # the URLs whose schema was found at head
        self._url_lock = threading.Lock()  # the URL, the turn and the servers passed over
        self._check_locks: dict[str, threading.Lock] = {}
        self._turn = 0  # the next of several URLs to connect to
        self._down: dict[str, float] = {}  # URL -> until when (monotonic) it is passed over
        self._idle: list[psycopg.Connection] = []
        self._idle_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self._warm = warm
        self.what = what

    @property
    def urls(self) -> tuple[str, ...]:
        """The URLs given (empty: DATABASE_URL or the embedded server, resolved on first use)."""
        return self._given

    def url(self, *, again: bool = False) -> str:
        """The database's URL with its schema at head (the embedded server started when needed); of
        several, the first that answers."""
        if len(self._given) > 1:
            return self._rotating(lambda url: url)
        with self._url_lock:
            if self._url is None or (again and not self._given):
                self._url = db.database_url()  # starts the embedded server, or again after `db stop`
            url = self._url
        self._check(url)
        return url

    def _check(self, url: str) -> None:
        """The schema of ``url``'s server checked once, under a lock of that URL's own: a standby that does
        not answer holds up the callers that wait for it, not the turn of the others."""
        if url in self._checked:
            return
        with self._url_lock:
            lock = self._check_locks.setdefault(url, threading.Lock())
        with lock:
            if url not in self._checked:
                schema.ensure_current(url)
                self._checked.add(url)

    def _rotating(self, use: Callable[[str], T]) -> T:
        """``use(url)`` on the URLs in turn from the next one, those that failed lately last, until one
        gives no DatabaseError; the last error when none does."""
        with self._url_lock:
            start = self._turn
            self._turn = (self._turn + 1) % len(self._given)
            now = time.monotonic()
            order = [self._given[(start + i) % len(self._given)] for i in range(len(self._given))]
            order.sort(key=lambda u: self._down.get(u, 0.0) > now)  # stable: the turn within each group
        failures: list[str] = []
        for url in order:
            try:
                self._check(url)
                result = use(url)
            except DatabaseError as exc:
                with self._url_lock:
                    self._down[url] = time.monotonic() + DOWN_SECONDS
                log.warning("%s: %s", redact_url(url), one_line(exc))
                failures.append(one_line(exc))
                continue
            with self._url_lock:
                self._down.pop(url, None)
            return result
        raise DatabaseError(f"none of the {len(order)} servers of {self.what} answers; the last: {failures[-1]}")

    def _connect(self) -> psycopg.Connection:
        if len(self._given) > 1:
            conn = self._rotating(db.connect)
        else:
            try:
                conn = db.connect(self.url())
            except DatabaseError:
                if self._given:
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
        for reads, which are safe to run again (of several standbys, the new one is the next's)."""
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
