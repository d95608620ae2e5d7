"""Writing files so that a reader (or a crash) never sees half of one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    ``mode`` sets the permissions; by default what ``open()`` would give, 0666 less the umask (the
    temporary file is private, 0600, until the rename, and mkstemp would leave it so: an archive in
    dane/ that the rest of a team cannot read).
    """
    if mode is None:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    """The process's umask, read without changing it (os.umask sets it, a race with other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
