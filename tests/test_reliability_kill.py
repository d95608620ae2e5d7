"""Reliability: kill -9 at many points of an ingest, then a rerun; concurrent runs.

(The kill loop is in tests/reliability_helpers.py; the loop with embedding is test_reliability_kill_embed.py,
a module of its own so that the two loops can run on two workers at once.)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from support.corpus import store_text
from support.cli import run_cli
from support.paths import ELI_MIRROR, REPO, require_mirror
from reliability_helpers import (
    HTML_ACT_2,
    HTML_ACT_3,
    PDF_ACT,
    broken_versions,
    ingest_args,
    ingest_from_mirror,
    kill_run,
    note,
    stats_fresh,
    truncate,
    versions_per_act,
    write_notes,
)

from pipeline.storage import db
from pipeline.storage.store import lock_key as store_lock_key


@pytest.fixture(scope="module", autouse=True)
def _write_notes():
    yield
    write_notes()


# --- 3. kill -9 at many points, then a rerun --------------------------------------------------------------

KILL_ACTS = (PDF_ACT, HTML_ACT_2)  # a PDF and an HTML act: each phase of both formats, one act committed
# Kill points: ("after", seconds) from the start; ("line", text, seconds) after the run printed a progress
# line containing text; ("sql", text[, line]) while one of its statements starting with text runs in the
# server (after it printed line, when given).
# Times get a seeded jitter, so points land at different spots of a phase.
# One point for each state a kill can leave behind: nothing written yet (at the start, and in the
# PDF's parse, where the work of a killed run is the longest), inside the first act's transaction,
# the first act committed and the second not begun, inside the second act's transaction (at its first
# and its last COPY), and the run done. Dropped to keep the suite within its five minutes, as they
# landed in states covered here: a third act (HTML again), points at '[1/2]', 0.4 s after the start
# and 0.5 s into the PDF's parse (nothing written yet), and in the second act's parse (the first act
# committed).
KILL_POINTS = [
    ("after", 0.05), ("line", "DU/2026/548: parsing PDF", 0.1), ("sql", "COPY chunks"),
    ("line", "[2/2]", 0.0), ("sql", "COPY articles", "[2/2]"), ("sql", "COPY chunks", "[2/2]"),
    ("line", " act(s): ", 0.0),
]


@pytest.mark.slow  # 7 ingest runs killed and rerun
def test_kill_9_during_ingest_then_rerun_completes_without_duplicates(scratch_url: str) -> None:
    require_mirror()
    kill_run(scratch_url, KILL_ACTS, {"DATABASE_URL": scratch_url}, KILL_POINTS, "no embedding", None)


def test_text_search_sees_an_act_whose_ingest_died_right_after_its_commit(scratch_url: str) -> None:
    """A kill -9 right after store_version() committed: the BM25 statistics must already count the version.

    (They once were refreshed in a transaction of their own, after the commit: a kill in between left
    them stale, and the rerun, finding the text unchanged, never refreshed them.)"""
    from pipeline.sources.parse.html import parse_html

    d = require_mirror() / "acts" / HTML_ACT_3
    truncate(scratch_url)  # statistics of an empty corpus
    data, meta = (d / "text.html").read_bytes(), json.loads((d / "meta.json").read_bytes())
    with db.connect(scratch_url) as c:
        store_text(c, meta, parse_html(data), source_sha256=hashlib.sha256(data).hexdigest(), model=None)
    # ...the process dies here. The user runs the same ingest again:
    rerun = run_cli("ingest", "--source", str(ELI_MIRROR), "--act", HTML_ACT_3, "--no-embed", "--json",
                    env={"DATABASE_URL": scratch_url})
    assert rerun.returncode == 0 and json.loads(rerun.stdout)["acts"][0]["status"] == "unchanged"
    found = run_cli("search", "psycholog", "--mode", "text", "--json", env={"DATABASE_URL": scratch_url})
    hits = json.loads(found.stdout)
    note("kill -9 (targeted)", case="right after the version's transaction committed",
         stats_fresh_after_rerun=stats_fresh(scratch_url), text_hits_for_psycholog=len(hits))
    assert stats_fresh(scratch_url)
    assert len(hits) == 5 and {h["act"] for h in hits} == {HTML_ACT_3}


# --- 4. concurrency --------------------------------------------------------------------------------------

def test_two_ingests_of_one_act_at_once_store_one_version(scratch_url: str) -> None:
    require_mirror()
    args = [sys.executable, "-m", "pipeline", *ingest_args((HTML_ACT_3,), False), "--json"]
    env = {**os.environ, "DATABASE_URL": scratch_url}
    # The act's store lock is held here until both runs are under way, so they meet at it however the
    # machine schedules their start (a cached parse takes milliseconds; a loaded machine, seconds).
    with psycopg.connect(scratch_url, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (store_lock_key(HTML_ACT_3),))
        procs = [subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        deadline = time.monotonic() + 120
        while gate.execute("SELECT count(*) FROM ingest_runs WHERE status = 'running'").fetchone()[0] < 2:
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a run did not start"
            time.sleep(0.02)
        gate.execute("SELECT pg_advisory_unlock(%s)", (store_lock_key(HTML_ACT_3),))
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    statuses = sorted(json.loads(out)["acts"][0]["status"] for out, _ in outs)
    with psycopg.connect(scratch_url) as c:
        # Both runs were under way at the same time (each run's interval contains the other's start).
        (overlap,) = c.execute("""SELECT bool_and(a.started_at < b.finished_at) FROM ingest_runs a, ingest_runs b
                                  WHERE a.run_id <> b.run_id""").fetchone()
    note("concurrency", case="two `ingest` of one act at once", statuses=statuses, overlapped=overlap,
         versions=versions_per_act(scratch_url))
    assert statuses == ["new", "unchanged"]
    assert versions_per_act(scratch_url) == {HTML_ACT_3: 1}
    assert broken_versions(scratch_url) == []
    assert overlap


def test_search_during_an_ingest_of_a_new_version_sees_one_version_per_answer(scratch_url: str,
                                                                             tmp_path: Path) -> None:
    from pipeline.retrieval.search import SearchSettings, search

    mirror = require_mirror()
    act = "DU/2024/581"  # patient rights: "pacjent" is in most articles
    ingest_from_mirror(scratch_url, act)
    src, dst = mirror / "acts" / act, tmp_path / "acts" / act
    dst.mkdir(parents=True)
    shutil.copy(src / "meta.json", dst / "meta.json")
    html = (src / "text.html").read_text(encoding="utf-8")
    (dst / "text.html").write_text(html.replace("może być obecna osoba bliska", "może być obecna osoba bliska lub opiekun"),
                                   encoding="utf-8")

    answers: list[list[int]] = []
    stop = threading.Event()

    def searching() -> None:
        with db.connect(scratch_url) as c:
            while not stop.is_set():
                answers.append([h.chunk_id for h in search(c, "prawa pacjenta do informacji", None, settings=SearchSettings(k=10, mode="text"))])

    worker = threading.Thread(target=searching)
    worker.start()
    try:
        time.sleep(0.5)
        done = run_cli("ingest", "--source", str(tmp_path), "--act", act, "--no-embed", env={"DATABASE_URL": scratch_url})
        time.sleep(0.5)
    finally:
        stop.set()
        worker.join(timeout=60)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(scratch_url) as c:
        version_of = dict(c.execute("SELECT chunk_id, version_id FROM chunks").fetchall())
    per_answer = [{version_of[i] for i in ids} for ids in answers]
    seen = sorted({v for vs in per_answer for v in vs})
    note("concurrency", case="text search in a loop while `ingest` stores version 2",
         searches=len(answers), versions_seen=seen, mixed_answers=sum(len(v) > 1 for v in per_answer),
         empty_answers=sum(not ids for ids in answers))
    assert all(len(ids) == 10 for ids in answers)  # never an empty or short answer mid-ingest
    assert all(len(v) == 1 for v in per_answer)  # every answer from one version
    assert seen == [1, 2]  # the searches did span the switch
    # ...and in order: once version 2 answers, version 1 never does again.
    firsts = [v.pop() for v in per_answer]
    assert firsts == sorted(firsts)
