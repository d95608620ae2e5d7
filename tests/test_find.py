"""pipeline find and ingest by title, through the real HTTP client against the ELI stand-in (which
filters the mirror's records as /acts/search does). The Labour Code's base act DU/1974/141 has no
record in the mirror: it is found through its consolidated texts DU/2025/277 and DU/2023/1465."""
from __future__ import annotations

import json
from pathlib import Path
from typing import get_type_hints

import httpx
import pytest

from support.cli import run_cli

from pipeline.core.errors import FetchError
from pipeline.service import ActQuery, Service
from pipeline.service.results import FoundActRecord, PickRecord
from pipeline.sources.fetch import EliClient

LABOUR_CODE, KP = "DU/1974/141", "DU/2025/277"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "results.md"


def cli(server, url: str, *args: str):
    return run_cli(*args, env={"DATABASE_URL": url, "ELI_API_URL": server.url}, timeout=300)


def one_error_line(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    return lines[0]


def test_the_stand_in_searches_the_mirror_as_the_api_does(server):
    found = httpx.get(f"{server.url}/acts/search", params={"title": "KODEKS", "type": "Ustawa", "limit": 2,
                                                         "offset": 1}).json()
    assert (found["count"], found["totalCount"], found["offset"]) == (2, 4, 1)
    assert [r["ELI"] for r in found["items"]] == ["DU/1964/93", "DU/1997/553"]
    assert found["searchQuery"]["title"] == "KODEKS"
    in_force = httpx.get(f"{server.url}/acts/search", params={"inForce": 1, "year": 2023}).json()
    assert in_force["totalCount"] == 0  # DU/2023/1465 expired
    year = httpx.get(f"{server.url}/acts/DU/2023").json()
    assert [r["ELI"] for r in year["items"]] == ["DU/2023/1465"]


def test_find_lists_the_labour_code_with_its_newest_consolidated_text(server, scratch_url):
    done = cli(server, scratch_url, "find", "Kodeks pracy", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["source"] == "api" and found["total"] == 2
    [labour] = found["acts"]
    assert list(labour) == list(get_type_hints(FoundActRecord))
    assert (labour["act"], labour["title"], labour["newest"]) == (LABOUR_CODE, "Kodeks pracy", KP)
    assert sorted(labour["matched"]) == ["DU/2023/1465", KP] and labour["stored"] is False
    assert any("title=Kodeks" in u for u in server.urls)  # asked through /acts/search, not a list of its own
    table = cli(server, scratch_url, "find", "kodeks")
    assert table.returncode == 0 and f"{LABOUR_CODE}" in table.stdout and KP in table.stdout
    assert "DU/1964/93" in table.stdout and "DU/2024/1061" in table.stdout  # the Civil Code's newest, by search
    # docs/results.md names every key of the new records.
    text = DOCS.read_text(encoding="utf-8")
    for record in (FoundActRecord, PickRecord):
        assert [k for k in get_type_hints(record) if f"`{k}`" not in text] == []


def test_ingest_by_title_stores_the_newest_text_and_a_second_run_fetches_nothing(server, scratch_url, tmp_path):
    done = cli(server, scratch_url, "ingest", "--title", "Kodeks pracy", "--no-embed", "--json",
               "--archive", str(tmp_path))
    assert done.returncode == 0, done.stderr
    [result] = json.loads(done.stdout)["acts"]
    assert (result["act"], result["status"], result["resolved_from"]) == (KP, "new", LABOUR_CODE)
    found = json.loads(cli(server, scratch_url, "find", "kodeks pracy", "--json").stdout)["acts"][0]
    assert (found["stored"], found["stored_act"]) == (True, KP)
    stored = json.loads(cli(server, scratch_url, "find", "pracy", "--offline", "--json").stdout)
    assert stored["source"] == "stored" and [a["act"] for a in stored["acts"]] == [LABOUR_CODE]

    # Bulk, run again: the stored text is skipped without asking for it (resumable); --original is the 1974 act.
    server.reset()
    plan = json.loads(cli(server, scratch_url, "ingest", "--all", "--title", "kodeks pracy", "--dry-run",
                          "--json").stdout)
    assert plan == [{"act": LABOUR_CODE, "title": "Kodeks pracy", "target": KP, "skip": f"{KP} is already stored"}]
    again = cli(server, scratch_url, "ingest", "--all", "--title", "kodeks pracy", "--no-embed")
    assert again.returncode == 0 and "1 skipped" in again.stderr, again.stderr
    assert not any(KP in path for path, _ in server.requests)
    original = json.loads(cli(server, scratch_url, "ingest", "--title", "kodeks pracy", "--original", "--dry-run",
                              "--json").stdout)
    assert original[0]["target"] == LABOUR_CODE


def test_ambiguous_unknown_and_textless_titles_are_one_line_each(server, scratch_url, tmp_path):
    ambiguous = one_error_line(cli(server, scratch_url, "ingest", "--title", "kodeks", "--no-embed"))
    assert '"kodeks" matches 5 acts' in ambiguous and "DU/1964/93" in ambiguous and LABOUR_CODE in ambiguous
    unknown = one_error_line(cli(server, scratch_url, "ingest", "--title", "kodeks morski"))
    assert "no act in the ELI API" in unknown and "kodeks morski" in unknown
    assert "no act in the ELI API" in one_error_line(cli(server, scratch_url, "find", "kodeks morski"))

    # Two records of the API's kind that give nothing to ingest: an announcement that is not a
    # consolidated text, and an act with metadata only.
    for eli, kind, title, has_text in (
        ("DU/2026/9001", "Obwieszczenie", "Obwieszczenie Ministra z dnia 1 lutego 2026 r. w sprawie wysokości stawek", True),
        ("DU/2026/9002", "Ustawa", "Ustawa z dnia 2 lutego 2026 r. o rejestrze testowym", False),
    ):
        folder = tmp_path / "acts" / eli
        folder.mkdir(parents=True)
        folder.joinpath("meta.json").write_text(json.dumps(
            {"ELI": eli, "publisher": "DU", "year": 2026, "pos": int(eli.rsplit("/", 1)[1]), "title": title,
             "type": kind, "status": "obowiązujący", "inForce": "IN_FORCE", "textHTML": False, "textPDF": has_text},
            ensure_ascii=False))
    server.overlay = tmp_path
    announcement = one_error_line(cli(server, scratch_url, "ingest", "--title", "wysokości stawek"))
    assert "DU/2026/9001 is an Obwieszczenie that is not a consolidated text" in announcement
    metadata_only = one_error_line(cli(server, scratch_url, "ingest", "--title", "o rejestrze testowym"))
    assert "DU/2026/9002 has metadata only" in metadata_only
    plan = json.loads(cli(server, scratch_url, "ingest", "--all", "--year", "2026", "--dry-run", "--json").stdout)
    skipped = {p["target"] for p in plan if p["skip"]}
    assert {"DU/2026/9001", "DU/2026/9002"} <= skipped and "DU/2026/548" not in skipped


def test_a_bulk_ingest_by_title_reports_each_skipped_act_once(server, scratch_url, tmp_path):
    """Some acts the search matches are ingested and one is skipped (metadata only): each act is said once,
    the skipped one too (it was said by the service and again by the batch)."""
    folder = tmp_path / "overlay" / "acts" / "DU/2026/9003"
    folder.mkdir(parents=True)
    folder.joinpath("meta.json").write_text(json.dumps(
        {"ELI": "DU/2026/9003", "publisher": "DU", "year": 2026, "pos": 9003, "type": "Ustawa",
         "title": "Ustawa z dnia 3 kwietnia 2026 r. o zarządzaniu danymi testowymi", "status": "obowiązujący",
         "inForce": "IN_FORCE", "textHTML": False, "textPDF": False}, ensure_ascii=False))
    server.overlay = tmp_path / "overlay"
    done = cli(server, scratch_url, "ingest", "--all", "--title", "zarządzaniu danymi", "--no-embed",
               "--archive", str(tmp_path / "dane"))
    assert done.returncode == 0, done.stderr
    said = [line.strip() for line in done.stderr.splitlines() if line.strip().startswith(("new:", "skipped:"))]
    assert said == [said[0], "skipped: DU/2026/9003 has metadata only in the ELI API: no text to ingest"], done.stderr
    assert said[0].startswith("new: version 1") and "1 new version(s)" in done.stderr and "1 skipped" in done.stderr
    report = json.loads(cli(server, scratch_url, "ingest", "--all", "--title", "zarządzaniu danymi", "--no-embed",
                            "--json", "--archive", str(tmp_path / "dane")).stdout)
    assert sorted((a["act"], a["status"]) for a in report["acts"]) == [("DU/2026/548", "skipped"),
                                                                      ("DU/2026/9003", "skipped")]


def test_the_api_down_is_one_error(scratch_url):
    closed = EliClient("http://127.0.0.1:9", max_retries=0)  # port 9 (discard): nothing listens
    with Service(scratch_url, pool_size=1, warm=False) as law, pytest.raises(FetchError, match="failed after 1 attempts"):
        law.find(ActQuery("kodeks pracy"), client=closed)


def test_find_and_ingest_help_and_bad_options():
    assert run_cli("find", "--help").returncode == 0
    empty = run_cli("find")
    assert empty.returncode == 2 and "say what to look for" in empty.stderr
    assert run_cli("ingest", "--act", KP, "--original").returncode == 2
