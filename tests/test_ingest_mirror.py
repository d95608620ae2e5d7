"""The whole mirror ingested through the CLI: every act, the annex of a consolidated text, article
sequences as stored, `show`, and the identical rerun.

The full-corpus ingest (~100 s) runs once per module into its own database; its identical rerun goes
on in the background while the tests that need no result from it run, and the last test waits for
it. A module of its own (the other ingest tests are test_ingest.py): a module stays on one
pytest-xdist worker, so the other tests of ingest run on the other worker meanwhile.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from support.cli import run_cli
from support.database import create_database
from support.paths import ELI_MIRROR, REPO, require_mirror

from pipeline.core.numbering import check_sequence

METADATA_ONLY = ("DU/2023/1465", "DU/2024/1061")
KODEKS_PRACY = "DU/2025/277"
PATIENT_RIGHTS = "DU/2024/581"


def _acts_with_text() -> list[str]:
    found = []
    for meta in (ELI_MIRROR / "acts").glob("*/*/*/meta.json"):
        if any(f.is_file() and f.stat().st_size for f in (meta.parent / "text.pdf", meta.parent / "text.html")):
            found.append("/".join(meta.parent.parts[-3:]))
    return sorted(found)


def _ingest_all_args(archive: Path) -> list[str]:
    return ["ingest", "--source", str(ELI_MIRROR), "--all", "--no-embed", "--json", "--archive", str(archive)]


@dataclass
class CorpusRun:
    url: str
    first: subprocess.CompletedProcess
    report: dict
    versions_before_rerun: int
    rerun: subprocess.Popen
    rerun_out: Path
    rerun_err: Path


@pytest.fixture(scope="module")
def corpus(server_url, tmp_path_factory):
    require_mirror()
    url = create_database(server_url, "ingest_all")
    archive = tmp_path_factory.mktemp("archive")
    first = run_cli(*_ingest_all_args(archive), env={"DATABASE_URL": url})
    report = json.loads(first.stdout)
    with psycopg.connect(url) as c:
        versions = c.execute("SELECT count(*) FROM act_versions").fetchone()[0]
    # The identical second run: started now so that it overlaps the tests below (2 cores).
    logs = tmp_path_factory.mktemp("rerun")
    out, err = logs / "stdout.json", logs / "stderr.txt"
    with out.open("w") as fo, err.open("w") as fe:
        rerun = subprocess.Popen([sys.executable, "-m", "pipeline", *_ingest_all_args(archive)],
                                 stdout=fo, stderr=fe, text=True, cwd=REPO,
                                 env={**os.environ, "DATABASE_URL": url})
    run = CorpusRun(url, first, report, versions, rerun, out, err)
    yield run
    if rerun.poll() is None:
        rerun.kill()
        rerun.wait()


def _db(url: str):
    from pipeline.storage import db

    return db.connect(url)


def _stored_numbers(url: str, eli: str) -> list[str]:
    with _db(url) as c:
        return [n for (n,) in c.execute(
            # A second wording (revision 0010) is the same article, printed again.
            "SELECT ar.article FROM articles ar JOIN act_versions v USING (version_id) "
            "WHERE v.eli = %s AND v.version_no = 1 AND ar.wording <> 2 ORDER BY ar.ordinal", (eli,)).fetchall()]


# --- 1. the whole mirror, offline, through the CLI --------------------------------------------

@pytest.mark.slow  # the whole mirror, ingested twice (~4 CPU-minutes)
def test_every_act_with_text_ingests_and_metadata_only_acts_are_skipped(corpus: CorpusRun) -> None:
    acts = _acts_with_text()
    assert len(acts) == 29  # 19 HTML + 10 PDF; with the two metadata-only ones, 31 act folders
    # --all means every act that has a text: the two without one are skipped, and the run succeeds.
    assert corpus.first.returncode == 0, corpus.first.stderr
    assert "Traceback" not in corpus.first.stderr
    by_act = {r["act"]: r for r in corpus.report["acts"]}
    assert sorted(by_act) == sorted(acts + list(METADATA_ONLY))
    assert (corpus.report["failed"], corpus.report["skipped"]) == (0, 2)
    for act in acts:
        r = by_act[act]
        assert (r["status"], r["version"], r["error"]) == ("new", 1, None), r
        assert r["articles"] > 0 and r["chunks"] >= r["articles"]
    for act in METADATA_ONLY:
        r = by_act[act]
        assert (r["status"], r["version"], r["error"]) == ("skipped", None, None)
        assert r["warnings"] == [f"{act} has no text in {ELI_MIRROR} (metadata only)"]

    with _db(corpus.url) as c:
        rows = dict(c.execute("SELECT eli, count(*) FROM act_versions GROUP BY eli").fetchall())
        assert rows == dict.fromkeys(acts, 1)
        stored_acts = {e for (e,) in c.execute("SELECT eli FROM acts").fetchall()}
        assert stored_acts == set(acts)  # nothing of the failed acts, not even their acts row
        # every version is complete: its article and chunk rows are all there
        for eli, n_articles, n_chunks, a, ch in c.execute(
            "SELECT v.eli, v.article_count, v.chunk_count, "
            "(SELECT count(*) FROM articles ar WHERE ar.version_id = v.version_id), "
            # the text's own chunks (a wording rebuilt from a later act's changes has its own: revision 0012)
            "(SELECT count(*) FROM chunks x WHERE x.version_id = v.version_id AND x.rebuilt_id IS NULL) "
            "FROM act_versions v"
        ).fetchall():
            assert (a, ch) == (n_articles, n_chunks) == (by_act[eli]["articles"], by_act[eli]["chunks"]), eli
        runs = c.execute("SELECT eli, status FROM ingest_runs ORDER BY run_id").fetchall()
        assert sorted(runs) == sorted((act, "new") for act in acts)  # a skipped act did not run


@pytest.mark.slow  # the whole mirror, ingested twice (~4 CPU-minutes)
def test_consolidated_html_takes_the_articles_of_its_annex(corpus: CorpusRun) -> None:
    numbers = _stored_numbers(corpus.url, PATIENT_RIGHTS)
    assert len(numbers) == 98
    assert numbers[:3] == ["1", "2", "3"]
    with _db(corpus.url) as c:
        texts = [t for (t,) in c.execute(
            "SELECT text FROM current_articles WHERE eli = %s ORDER BY ordinal", (PATIENT_RIGHTS,)).fetchall()]
        title, base = c.execute("SELECT title, base_eli FROM acts WHERE eli = %s", (PATIENT_RIGHTS,)).fetchone()
    assert texts[0].startswith("Art. 1. Ustawa określa:\n1) prawa pacjenta;")
    assert not any("ogłasza się w załączniku" in t for t in texts)  # the announcement is not the act
    assert title.startswith("Obwieszczenie Marszałka Sejmu")
    assert base == PATIENT_RIGHTS  # the reconstructed meta names no base act


@pytest.mark.slow  # the whole mirror, ingested twice (~4 CPU-minutes)
def test_article_sequence_is_clean_as_stored(corpus: CorpusRun) -> None:
    problems = {act: check_sequence(_stored_numbers(corpus.url, act)) for act in _acts_with_text()}
    assert {act: p for act, p in problems.items() if p} == {}


@pytest.mark.slow  # the whole mirror, ingested twice (~4 CPU-minutes)
def test_show_prints_an_article_by_any_spelling_of_its_number(corpus: CorpusRun) -> None:
    env = {"DATABASE_URL": corpus.url}
    for spelling in ("151^1", "151¹", "art. 151^1", "Art. 151^1.", "151^1 § 1 pkt 2"):  # a cited unit: its article
        shown = run_cli("show", KODEKS_PRACY, spelling, env=env)
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[0] == f"{KODEKS_PRACY} art. 151¹ (version 1, text as of 2025-02-07)"  # as printed
        assert lines[1] == "DZIAŁ SZÓSTY Czas pracy / Rozdział V Praca w godzinach nadliczbowych"
        assert lines[3].startswith("Art. 151¹. § 1. Za pracę w godzinach nadliczbowych, oprócz normalnego wynagrodzenia")
    as_data = run_cli("show", KODEKS_PRACY, "151¹", "--json", env=env)  # a script gets the canonical number
    assert json.loads(as_data.stdout)["article"] == "151^1" and "Art. 151^1. § 1." in json.loads(as_data.stdout)["text"]

    unknown = run_cli("show", KODEKS_PRACY, "999", env=env)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.splitlines() == [f"Error: {KODEKS_PRACY} has no art. 999 in the selected text"]


# --- 1 (end). the identical rerun, started in the background by the fixture ---------------------

@pytest.mark.slow  # the whole mirror, ingested twice (~4 CPU-minutes)
def test_second_identical_run_changes_nothing(corpus: CorpusRun) -> None:
    assert corpus.rerun.wait(timeout=600) == 0, corpus.rerun_err.read_text()
    report = json.loads(corpus.rerun_out.read_text())
    statuses = {r["act"]: (r["status"], r["version"]) for r in report["acts"]}
    assert statuses == {**dict.fromkeys(_acts_with_text(), ("unchanged", 1)),
                        **dict.fromkeys(METADATA_ONLY, ("skipped", None))}
    with _db(corpus.url) as c:
        assert c.execute("SELECT count(*), max(version_no) FROM act_versions").fetchone() == (
            corpus.versions_before_rerun, 1)
