"""The colloquial-to-statutory thesaurus: data in pipeline/data/thesaurus.tsv, used in SQL."""
from __future__ import annotations

from pathlib import Path

import psycopg

from pipeline.core.resources import DATA_DIR

THESAURUS_FILE = DATA_DIR / "thesaurus.tsv"


def load(path: Path = THESAURUS_FILE) -> list[tuple[str, str]]:
    """(term, expansion) pairs; '#' lines are comments; a malformed line is an error, not skipped."""
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"{path.name}:{n}: expected 'term<TAB>expansion'")
        pairs.append((parts[0].strip(), parts[1].strip()))
    return pairs


def sync(conn: psycopg.Connection, path: Path = THESAURUS_FILE) -> int:
    """Make the table's 'file' rows equal the file (user rows are kept). Runs in the caller's transaction."""
    pairs = sorted(set(load(path)))
    with conn.cursor() as cur:
        cur.execute("DELETE FROM thesaurus WHERE source = 'file'")
        cur.executemany(
            "INSERT INTO thesaurus (term, expansion, source) VALUES (%s, %s, 'file') ON CONFLICT DO NOTHING", pairs
        )
    return len(pairs)
