"""What the benchmark scripts share: where the data is, the argparse boilerplate, the machine line,
percentiles, question texts, and a scratch database on the server the CLI would use.

Paths come from arguments or the environment, never from this machine: the ELI mirror and the eval
questions are under PIPELINE_SHARED (default: ``shared/`` beside the repository).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The shared data folder: $PIPELINE_SHARED, else ../shared beside the repository."""
    return Path(os.environ.get("PIPELINE_SHARED", REPO.parent / "shared"))


def eli_dir() -> Path:
    """The ELI mirror (has acts/)."""
    return shared_dir() / "eli"


def parsed_mirror_act(act: str):
    """(format, ParsedAct) of a mirror act's text (HTML where it has one, else PDF)."""
    from pipeline.sources.parse.read import parse_text

    folder = eli_dir() / "acts" / act
    for fmt in ("html", "pdf"):
        path = folder / f"text.{fmt}"
        if path.is_file() and path.stat().st_size:
            return fmt, parse_text(path.read_bytes(), fmt)
    raise SystemExit(f"{act}: no text in {eli_dir()}")


def eval_dir() -> Path:
    """The evaluation questions (dev_questions.pl.jsonl, seed_questions.pl.jsonl)."""
    return shared_dir() / "eval"


def tmp_path(*parts: str) -> Path:
    """A fixed path under the system's temporary folder ($TMPDIR), for a bench's default home."""
    return Path(tempfile.gettempdir(), *parts)


def parser(doc: str | None, *, epilog: bool = False) -> argparse.ArgumentParser:
    """A script's parser: its docstring's first line as the description; the whole docstring as the
    epilog when ``epilog`` (--help then shows how to run it)."""
    doc = doc or ""
    if epilog:
        return argparse.ArgumentParser(description=doc.split("\n")[0], epilog=doc,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=doc.split("\n")[0])


def machine_line(*, load: bool = False) -> str:
    """The machine a figure was measured on: platform, CPUs, Python (and the load, if asked)."""
    line = f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    return line + (f", load {os.getloadavg()[0]:.1f}" if load else "")


def pct(xs: list[float], p: float) -> float | None:
    """The p-th percentile (0-100) of ``xs``, nearest rank on (n - 1) without interpolation; None if empty."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def question_texts(folder: Path, names: tuple[str, ...] | None = None) -> list[str]:
    """The "question" of every line of the eval files ``names`` in ``folder`` (default: every
    *.jsonl there, sorted); files that are missing are skipped."""
    paths = [folder / n for n in names] if names else sorted(folder.glob("*.jsonl"))
    return [json.loads(line)["question"] for path in paths if path.exists()
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def server_url(default_home: Path) -> str:
    """The admin URL of the server the CLI would use: DATABASE_URL's, else the embedded one of
    $PIPELINE_HOME (``default_home`` when unset: not the user's own data)."""
    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("PIPELINE_HOME", str(default_home))
    from pipeline.storage import db

    return db.database_url()


def with_dbname(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` on the same server."""
    from urllib.parse import urlsplit

    return urlsplit(url)._replace(path=f"/{name}").geturl()


def scratch_database(server: str, name: str, *, reuse: bool = False) -> str:
    """Database ``name`` on ``server``, migrated to head; created fresh unless ``reuse`` and it exists."""
    import psycopg

    from pipeline.storage import schema

    with psycopg.connect(server, autocommit=True) as c:
        exists = c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and not reuse:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            c.execute(f'CREATE DATABASE "{name}"')
    url = with_dbname(server, name)
    schema.upgrade(url)
    return url


def drop_database(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
