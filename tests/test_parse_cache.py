"""The parse cache: identical bytes are parsed once per parser, and the cache can only save time."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import ELI_MIRROR, mirror_text, REPO

from pipeline.sources.parse.read import _parse, parse_text
from pipeline.sources.parse import cache as parse_cache

ACT = "DU/2024/1513"  # HTML, 35 articles


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv(parse_cache.ENV, str(tmp_path / "parsed"))
    return tmp_path / "parsed"


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.json")) if cache.is_dir() else []


def test_second_parse_of_the_same_bytes_comes_from_the_cache(cache: Path) -> None:
    fmt, data = mirror_text(ACT)
    lines: list[str] = []
    first = parse_text(data, fmt, progress=lines.append, label=ACT)
    [entry] = _entries(cache)
    # Mark the stored result: only a read of the cache can return the mark.
    raw = json.loads(entry.read_text())
    raw["articles"][0]["text"] += " [from the cache]"
    entry.write_text(json.dumps(raw, ensure_ascii=False))
    second = parse_text(data, fmt, progress=lines.append, label=ACT)
    assert lines == [f"{ACT}: parsing HTML", f"{ACT}: HTML already parsed (cache)"]
    assert second.articles[0].text == first.articles[0].text + " [from the cache]"
    assert [a.number for a in second.articles] == [a.number for a in first.articles]
    assert (second.title, second.source_format, second.warnings) == (first.title, first.source_format, first.warnings)


def test_other_bytes_or_another_parser_are_parsed_again(cache: Path, monkeypatch) -> None:
    fmt, data = mirror_text(ACT)
    parse_text(data, fmt)
    parse_text(data + b"\n<!-- served again -->\n", fmt)
    assert len(_entries(cache)) == 2  # keyed by the bytes, not by the act
    # A changed parser (its fingerprint): a miss, and its result replaces the old one.
    lines: list[str] = []
    monkeypatch.setattr(parse_cache, "parser_fingerprint", lambda: "0" * 16)
    parse_text(data, fmt, progress=lines.append, label=ACT)
    assert lines == [f"{ACT}: parsing HTML"]
    assert len(_entries(cache)) == 2
    assert any(p.name.endswith(".0000000000000000.json") for p in _entries(cache))


# A process that parses an act's text, saying whether it parsed or read the cache.
_PARSE_ONE = """
import sys
from pathlib import Path
from pipeline.sources.parse.read import parse_text
parse_text(Path(sys.argv[1]).read_bytes(), sys.argv[2], progress=print, label="act")
"""


def test_processes_parsing_the_same_bytes_at_once_parse_them_once(cache: Path, tmp_path: Path) -> None:
    """While one process parses a text (here: the test holds that text's lock and parses it itself),
    two more that want the same bytes wait, then read its result from the cache."""
    fmt, data = mirror_text(ACT)
    source = tmp_path / f"text.{fmt}"
    source.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    env = {**os.environ, parse_cache.ENV: str(cache)}
    with parse_cache.parsing(sha, fmt):
        others = [subprocess.Popen([sys.executable, "-c", _PARSE_ONE, str(source), fmt], cwd=REPO, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        time.sleep(1.5)  # long enough for both to reach the lock (a parse of this act takes ~0.1 s)
        assert [p.poll() for p in others] == [None, None]  # both wait
        parse_cache.save(sha, fmt, _parse(data, fmt))  # the parse itself, past the cache and its lock
    outputs = [p.communicate(timeout=60) for p in others]
    assert [p.returncode for p in others] == [0, 0], outputs
    assert [out.splitlines() for out, _ in outputs] == [
        ["act: HTML being parsed by another process, waiting", "act: HTML already parsed (cache)"]] * 2


def test_a_broken_entry_is_a_miss_and_is_replaced(cache: Path) -> None:
    fmt, data = mirror_text(ACT)
    good = parse_text(data, fmt)
    [entry] = _entries(cache)
    entry.write_text('{"articles": [{"numb')
    lines: list[str] = []
    again = parse_text(data, fmt, progress=lines.append, label=ACT)
    assert lines == [f"{ACT}: parsing HTML"]
    assert again == good
    assert json.loads(entry.read_text())["articles"][0]["number"] == good.articles[0].number


def test_off_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(parse_cache.ENV, "off")
    monkeypatch.setenv("PIPELINE_HOME", str(tmp_path))
    fmt, data = mirror_text(ACT)
    parse_text(data, fmt)
    assert not any(tmp_path.rglob("*.json"))


def test_fingerprint_covers_every_parser_file() -> None:
    # Each module of pipeline/sources/parse and the number grammar shape the result; a change to any
    # of them must miss the cache.
    files = {p.name for p in parse_cache.parser_files() if p.is_file()}
    assert {"pdf.py", "html.py", "articles.py", "numbering.py", "text.py", "model.py"} <= files
    assert len(parse_cache.parser_fingerprint()) == 16


def test_cli_reingest_of_unchanged_bytes_does_not_parse(scratch_url: str, tmp_path: Path) -> None:
    env = {"DATABASE_URL": scratch_url, parse_cache.ENV: str(tmp_path / "parsed")}
    args = ["ingest", "--source", str(ELI_MIRROR), "--act", ACT, "--no-embed",
            "--archive", str(tmp_path / "dane")]
    first = run_cli(*args, env=env)
    second = run_cli(*args, env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert f"{ACT}: parsing HTML" in first.stderr and "already parsed (cache)" not in first.stderr
    assert f"{ACT}: HTML already parsed (cache)" in second.stderr and "parsing HTML" not in second.stderr
    assert "unchanged" in second.stderr + second.stdout


def test_parsing_ahead_in_workers_stores_what_one_process_stores(scratch_url: str, tmp_path: Path) -> None:
    acts = ["DU/2026/548", "DU/2023/1465", "DU/2024/1513"]  # a PDF, a metadata-only act, an HTML act
    base = ["ingest", "--source", str(ELI_MIRROR), *[f"--act={a}" for a in acts], "--no-embed", "--json",
            "--archive", str(tmp_path / "dane")]
    alone = run_cli(*base, "--jobs", "1", env={"DATABASE_URL": scratch_url, parse_cache.ENV: "off"})
    ahead = run_cli(*base, "--jobs", "2", env={"DATABASE_URL": scratch_url, parse_cache.ENV: str(tmp_path / "c")})
    assert alone.returncode == ahead.returncode == 1, alone.stderr + ahead.stderr  # the metadata-only act
    first, second = json.loads(alone.stdout)["acts"], json.loads(ahead.stdout)["acts"]
    assert [r["status"] for r in first] == ["new", "failed", "new"]
    # The same articles (the text hash of each version): the workers' parses are the parses.
    assert [r["status"] for r in second] == ["unchanged", "failed", "unchanged"]
    assert first[1]["error"] == second[1]["error"]
    assert len(_entries(tmp_path / "c")) == 2  # both texts were parsed by the workers into the cache
