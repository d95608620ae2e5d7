"""Where the package's SQL and migrations are, installed or in a source tree.

The repository keeps ``migrations/`` and ``sql/`` at its top; a wheel carries them inside the package
(``pipeline/migrations``, ``pipeline/sql``; see pyproject.toml). Both layouts are found here, so
``pip install .``, a wheel, pipx and ``pip install -e .`` all work from any folder.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # pipeline/, above core/


def resource_dir(name: str) -> Path:
    installed = _PACKAGE / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name  # source tree (editable install)


MIGRATIONS_DIR = resource_dir("migrations")
SQL_DIR = resource_dir("sql")
FROZEN_DIR = MIGRATIONS_DIR / "frozen"
DATA_DIR = _PACKAGE / "data"  # the thesaurus, the Polish stop words and dictionary files


class FrozenSqlChanged(RuntimeError):
    """A shipped migration's SQL file no longer has the content it shipped with."""


def frozen_sql(revision: str, name: str, sha256: str) -> str:
    """The SQL a shipped revision ran, checked against the hash pinned in that revision.

    Revisions are history: editing their SQL would make a fresh database differ from an upgraded one,
    so a changed file stops the migration instead of silently running something new.
    """
    path = FROZEN_DIR / revision / name
    text = path.read_text(encoding="utf-8")
    actual = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if actual != sha256:
        raise FrozenSqlChanged(f"{path} was edited after revision {revision} shipped (sha256 {actual[:12]}…, "
                               f"pinned {sha256[:12]}…); put changes in a new revision or in sql/")
    return text
