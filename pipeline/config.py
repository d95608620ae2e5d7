"""Settings read from the environment, in one place (the README's configuration table mirrors this)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"


def settings() -> Settings:
    return Settings(
        database_url=os.environ.get("DATABASE_URL") or None,
        home=_home(),
        archive_dir=Path(os.environ.get("PIPELINE_ARCHIVE", "dane")),
        chunk_chars=int(os.environ.get("CHUNK_CHARS", "1200")),
        chunk_overlap=int(os.environ.get("CHUNK_OVERLAP", "200")),
    )
