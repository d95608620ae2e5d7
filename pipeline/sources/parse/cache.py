"""Parsed acts kept on disk, keyed by the source bytes and the parser: identical bytes are parsed once.

Parsing is the costly step of an ingest (the 204-page DU/2025/1461 PDF takes ~30 CPU-seconds), and
the same bytes come back often: a re-ingest or `sync` of an unchanged act, the same archive loaded
into another database, a new chunk size tried on the same acts. The key holds the sha256 of the
bytes and a fingerprint of the parser (its source files and pypdf's version), so a parser change
can never serve an old result; entries of an older parser are removed when the new one is written.

Where: ``$PIPELINE_PARSE_CACHE``, else ``parsed/`` in the pipeline home. ``PIPELINE_PARSE_CACHE=off``
turns it off. A broken or unreadable entry is a miss, never an error: the cache only saves time.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from functools import cache
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no lock, concurrent parses of one text just repeat the work
    fcntl = None  # type: ignore[assignment]  # the module's name, None where it is missing

from pipeline.core.files import write_atomic
from pipeline.sources.parse.model import ParsedAct

ENV = "PIPELINE_PARSE_CACHE"


@cache
def parser_fingerprint() -> str:
    """sha256 of the parser's own code (PARSER_FILES) and of the PDF library it relies on."""
    import pypdf

    digest = hashlib.sha256(f"pypdf {pypdf.__version__}\n".encode())
    for path in parser_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def parser_files() -> list[Path]:
    """The code that shapes a parse: this package's modules and the grammars of article numbers and
    units they use (core/numbering.py, core/units.py)."""
    here = Path(__file__).resolve().parent
    core = here.parent.parent / "core"
    return sorted(here.glob("*.py")) + [core / "numbering.py", core / "units.py"]


def cache_dir() -> Path | None:
    value = os.environ.get(ENV, "").strip()
    if value.lower() == "off":
        return None
    if value:
        return Path(value).expanduser()
    from pipeline.core.config import settings

    return settings().home / "parsed"


def _entry(directory: Path, source_sha256: str, fmt: str) -> Path:
    return directory / f"{source_sha256}.{fmt}.{parser_fingerprint()}.json"


def load(source_sha256: str, fmt: str) -> ParsedAct | None:
    directory = cache_dir()
    if directory is None:
        return None
    try:
        raw = json.loads(_entry(directory, source_sha256, fmt).read_bytes())
        return ParsedAct.from_dict(raw)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def save(source_sha256: str, fmt: str, parsed: ParsedAct) -> None:
    directory = cache_dir()
    if directory is None:
        return
    entry = _entry(directory, source_sha256, fmt)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_atomic(entry, json.dumps(asdict(parsed), ensure_ascii=False).encode("utf-8"))
        for old in directory.glob(f"{source_sha256}.{fmt}.*.json"):
            if old != entry:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only or full disk costs the next ingest a parse, nothing more


@contextmanager
def parsing(source_sha256: str, fmt: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Held while these bytes are parsed, so that a second process about to parse the same text
    (two ingests at once, parse-ahead workers of another ingest) waits and then reads the first
    one's result instead of repeating ~10-30 CPU-seconds of work; ``on_wait`` is called when it has to
    wait. The OS drops the lock of a process that dies. Without a cache, or where the lock cannot be
    taken, nothing waits."""
    directory = cache_dir()
    fd = None
    if directory is not None and fcntl is not None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / f"{source_sha256}.{fmt}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait:
                    on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # a read-only folder or a file system without locks: parse without waiting
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock
