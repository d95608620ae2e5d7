"""The store's settings read from the environment: the database, the home folder, the archive, chunk sizes.

Each service's own settings are read where its client is built from them: the embedders (EMBED_*,
OLLAMA_URL: pipeline.embedders), the answer model (ANSWER_*, OPENROUTER_API_KEY:
pipeline.answering.chat, ANSWER_MIN_SIMILARITY: pipeline.retrieval.refusal), the ELI API
(ELI_API_URL: pipeline.sources.fetch), the parse cache (PIPELINE_PARSE_CACHE); PIPELINE_DEBUG by each
face. docs/configuration.md lists every one (tests/test_docs.py checks it).
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.limits import DEFAULT_MAX_CHARS, DEFAULT_OVERLAP
from pipeline.core.errors import ConfigError
from pipeline.core.redact import redact_url


def env_number(env: Mapping[str, str], name: str, kind: type[int] | type[float] = float, *,
               allow_zero: bool = False, what: str | None = None,
               error: type[Exception] = ConfigError) -> int | float | None:
    """A number from the environment, None when unset or blank.

    Anything but a finite number above zero (or zero, with ``allow_zero``) is a one-line ``error``:
    "NAME must be a positive integer, got 'x'". ``what`` words the expectation for the message.
    """
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value: int | float | None = kind(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        noun = "integer" if kind is int else "number"
        raise error(f"{name} must be {what or ('a non-negative ' if allow_zero else 'a positive ') + noun}, got {raw!r}")
    return value


def _home() -> Path:
    if os.environ.get("PIPELINE_HOME"):
        return Path(os.environ["PIPELINE_HOME"]).expanduser()
    if os.geteuid() == 0:
        # As root the embedded server runs as a system user and opens read/traverse permission on
        # every parent of its data dir; /var/lib is open already, /root should stay closed.
        return Path("/var/lib/pipeline")
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pipeline"


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    home: Path  # embedded server data, caches
    archive_dir: Path  # raw ELI responses ("dane/")
    chunk_chars: int
    chunk_overlap: int
    # Standbys for the read-only work (DATABASE_READ_URL, comma-separated); empty: reads go where writes go.
    database_read_urls: tuple[str, ...] = ()

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"


def settings() -> Settings:
    return Settings(
        database_url=os.environ.get("DATABASE_URL") or None,
        home=_home(),
        archive_dir=Path(os.environ.get("PIPELINE_ARCHIVE", "dane")),
        chunk_chars=int(env_number(os.environ, "CHUNK_CHARS", int) or DEFAULT_MAX_CHARS),
        chunk_overlap=int(_overlap(os.environ)),
        database_read_urls=read_urls(os.environ.get("DATABASE_READ_URL", "")),
    )


def read_urls(raw: str) -> tuple[str, ...]:
    """DATABASE_READ_URL's URLs: one, or several separated by commas (blanks and repeats left out). Each
    is a whole postgresql:// URL: the comma separates servers here, so libpq's own multi-host form
    (host1,host2 in one URL) is given as one URL per host."""
    urls: list[str] = []
    for part in raw.split(","):
        url = part.strip()
        if not url or url in urls:
            continue
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"DATABASE_READ_URL: {redact_url(url)[:60]!r} is not a postgresql:// URL; give each "
                              "standby as a whole URL, several separated by commas")
        urls.append(url)
    return tuple(urls)


def _overlap(env: Mapping[str, str]) -> int:
    value = env_number(env, "CHUNK_OVERLAP", int, allow_zero=True)
    return DEFAULT_OVERLAP if value is None else int(value)


def embed_wait(env: Mapping[str, str] = os.environ) -> bool:
    """PIPELINE_EMBED_WAIT set (not 0): `ingest` embeds before it returns, as ``--wait``, instead of
    leaving the vectors to a background worker (scripts and test suites that search vectors next)."""
    return env.get("PIPELINE_EMBED_WAIT", "").strip() not in ("", "0")
