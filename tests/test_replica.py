"""Read replicas: a real primary and a real streaming standby (`pipeline db replica`), both embedded servers
of their own homes. An act ingested on the primary is served by the standby once replayed; with the primary
stopped, search, show and the page go on on the standby while ingest fails with one line; a process started
against the standby alone reads and says that it cannot write.

The steps run in order on one pair of servers (a module runs on one worker). The timings (replay lag seen,
time to serve after the primary stops) are printed (`pytest -s`) and recorded in docs/operations.md.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest
from support.cli import run_cli
from support.database import make_non_durable

from pipeline import IngestRequest, Service
from pipeline.core.config import read_urls, settings
from pipeline.core.errors import ConfigError, DatabaseError
from pipeline.core.redact import redact_url
from pipeline.storage import db

try:
    from embedding_stand_in import StandInEmbedder
except ImportError:  # tests/ imported as a package
    from tests.embedding_stand_in import StandInEmbedder

ACT = "DU/2019/914"  # tiny HTML act (4 articles): o Krajowej Radzie Sądownictwa
QUERY = "Krajowa Rada Sądownictwa"
NOWHERE = "postgresql://postgres@/postgres?host=/tmp/pl-no-such-server"  # a standby that does not answer
TIMINGS: dict[str, float] = {}


def _home(prefix: str) -> Path:
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # short: the server's socket lives in it
    os.chmod(home, 0o755)  # as root the server runs as the embedded_postgres user
    return home


@pytest.fixture(scope="module")
def pair(mirror):
    """A migrated embedded primary and, made by `pipeline db replica`, its streaming standby."""
    primary_home, standby_parent = _home("pl-primary-"), _home("pl-standby-")
    standby_home = standby_parent / "home"  # made by `db replica`
    primary_cfg = dataclasses.replace(settings(), home=primary_home, database_url=None, database_read_urls=())
    standby_cfg = dataclasses.replace(primary_cfg, home=standby_home)
    try:
        primary = db.embedded_url(primary_cfg)
        make_non_durable(primary)  # copied into the standby with the data folder
        with Service(primary, read_urls=()) as law:
            law.database_url()  # migrated to head
        started = time.monotonic()
        made = run_cli("db", "replica", "--home", str(standby_home), env={"PIPELINE_HOME": str(primary_home)})
        TIMINGS["replica made (s)"] = time.monotonic() - started
        assert made.returncode == 0, made.stderr
        standby = made.stdout.strip()
        yield type("Pair", (), {"primary": primary, "standby": standby, "primary_cfg": primary_cfg,
                                "primary_home": primary_home, "standby_home": standby_home,
                                "mirror": mirror})
    finally:
        for cfg in (standby_cfg, primary_cfg):
            try:
                db.stop_embedded(cfg)
            except DatabaseError:
                pass
        shutil.rmtree(primary_home, ignore_errors=True)
        shutil.rmtree(standby_parent, ignore_errors=True)
        print("\nreplica test timings: " + ", ".join(f"{k} {v:.3g}" for k, v in TIMINGS.items()))


def _one(url: str, sql: str):
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql).fetchone()[0]


def test_the_replica_streams_from_the_primary_and_says_it_is_a_standby(pair):
    assert _one(pair.standby, "SELECT pg_is_in_recovery()") is True
    assert _one(pair.primary, "SELECT pg_is_in_recovery()") is False
    assert _one(pair.primary, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'") == 1
    env = {"PIPELINE_HOME": str(pair.standby_home)}
    assert run_cli("db", "url", env=env).stdout.strip() == pair.standby
    status = run_cli("db", "status", env=env)
    assert status.returncode == 0, status.stderr
    assert "replication: read-only standby (streaming from" in status.stdout
    assert "migration:   " + _one(pair.primary, "SELECT version_num FROM alembic_version") in status.stdout
    primary = run_cli("db", "status", "--json", env={"PIPELINE_HOME": str(pair.primary_home)})
    assert '"role": "primary"' in primary.stdout and str(pair.standby_home) in primary.stdout
    # A second replica into the same folder, or into the primary's own, is a usage error (exit 2), one line.
    again = run_cli("db", "replica", "--home", str(pair.standby_home), env={"PIPELINE_HOME": str(pair.primary_home)})
    assert again.returncode == 2 and "is not empty" in again.stderr and "Traceback" not in again.stderr


def test_an_act_ingested_on_the_primary_is_served_by_the_standby_once_replayed(pair, tmp_path):
    seen: list[tuple[int, float]] = []  # the primary's view of its standby while the ingest runs
    done = threading.Event()

    def sample() -> None:
        with psycopg.connect(pair.primary, autocommit=True) as conn:
            while not done.wait(0.005):
                seen.append(conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint, "
                                         "coalesce(extract(epoch FROM replay_lag), 0)::float8 "
                                         "FROM pg_stat_replication").fetchone())

    sampler = threading.Thread(target=sample)
    with Service(pair.primary, read_urls=[NOWHERE, pair.standby], embedder=StandInEmbedder()) as law, \
            psycopg.connect(pair.primary, autocommit=True) as primary, \
            psycopg.connect(pair.standby, autocommit=True) as standby:
        sampler.start()
        try:
            report = law.ingest(IngestRequest(acts=(ACT,), source=pair.mirror, archive_dir=tmp_path))
        finally:
            done.set()
            sampler.join()
        assert [r.status for r in report.acts] == ["new"]
        written = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        started = time.monotonic()
        while standby.execute("SELECT pg_wal_lsn_diff(%s, pg_last_wal_replay_lsn()) > 0", (written,)).fetchone()[0]:
            assert time.monotonic() - started < 30, "the standby did not replay the ingest"
            time.sleep(0.001)
        TIMINGS["caught up after the ingest returned (s)"] = time.monotonic() - started
        TIMINGS["most WAL not replayed during the ingest (bytes)"] = max((b for b, _ in seen), default=0)
        TIMINGS["most replay_lag during the ingest (s)"] = max((lag for _, lag in seen), default=0.0)
        # Reads go to the standby (the server that does not answer is passed over), writes went to the primary.
        assert law.reads.run(lambda conn: conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]) is True
        assert law.pool.run(lambda conn: conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]) is False
        article = law.show(ACT, "1")
        assert article["act"] == ACT and "Krajowej Radzie Sądownictwa" in article["text"]
        assert [a["act"] for a in law.acts()] == [ACT]


def test_with_the_primary_stopped_the_standby_serves_and_a_write_fails_in_one_line(pair, tmp_path):
    from starlette.testclient import TestClient

    from pipeline.interfaces.web.app import build_app

    law = Service(pair.primary, read_urls=[pair.standby], embedder=StandInEmbedder())
    law.show(ACT, "1")  # connections open to both before the primary goes
    law.pool.run(lambda conn: None)
    assert db.stop_embedded(pair.primary_cfg)
    stopped = time.monotonic()
    found = law.search(QUERY, k=3, mode="text")
    TIMINGS["first search served after the primary stopped (s)"] = time.monotonic() - stopped
    assert found.hits and found.hits[0].act == ACT
    assert law.search(QUERY, k=3).hits  # hybrid: the stand-in's vectors replicated too
    assert "Krajowej Radzie Sądownictwa" in law.show(ACT, "1")["text"]
    # base_url: a loopback Host, which the page answers by default; the application closes the service.
    with TestClient(build_app(law, warm=False), base_url="http://127.0.0.1") as page:
        listed = page.get("/acts")
        assert listed.status_code == 200 and "/acts/DU/2019/914" in listed.text
        article = page.get("/acts/DU/2019/914/art/1")
        assert article.status_code == 200 and "Krajowej Radzie" in article.text
        searched = page.get("/search", params={"q": QUERY, "mode": "text"})
        assert searched.status_code == 200 and "/acts/DU/2019/914/art/" in searched.text
    TIMINGS["search, show and three pages served after the primary stopped (s)"] = time.monotonic() - stopped
    # A write names the primary, in one line, through the Python API and on the command line.
    with Service(pair.primary, read_urls=[pair.standby], embedder=StandInEmbedder()) as law:
        with pytest.raises(DatabaseError, match="cannot write: the primary does not answer"):
            law.remove(ACT)
    env = {"DATABASE_URL": pair.primary, "DATABASE_READ_URL": pair.standby}
    ingest = run_cli("ingest", "--act", ACT, "--source", str(pair.mirror), "--archive", str(tmp_path), env=env)
    assert ingest.returncode == 1 and "Traceback" not in ingest.stderr
    assert ingest.stderr.startswith("Error: cannot write: the primary does not answer")
    assert len(ingest.stderr.strip().splitlines()) == 1
    shown = run_cli("show", ACT, "1", env=env)
    assert shown.returncode == 0 and "Krajowej Radzie" in shown.stdout, shown.stderr
    # Several standbys and none answers: one line naming DATABASE_READ_URL.
    none = run_cli("acts", env={"DATABASE_URL": pair.primary, "DATABASE_READ_URL": f"{NOWHERE},{NOWHERE}x"})
    assert none.returncode == 1 and "none of the 2 servers of DATABASE_READ_URL answers" in none.stderr


def test_a_process_on_the_standby_alone_reads_and_says_it_cannot_write(pair, tmp_path):
    env = {"PIPELINE_HOME": str(pair.standby_home)}
    searched = run_cli("search", QUERY, "--mode", "text", "-k", "1", env=env)
    assert searched.returncode == 0 and ACT in searched.stdout, searched.stderr
    for write in (["ingest", "--act", ACT, "--source", str(pair.mirror), "--archive", str(tmp_path)],
                  ["remove", ACT, "--yes"], ["embed"]):
        refused = run_cli(*write, env=env)
        assert refused.returncode == 1, (write, refused.stderr)
        assert refused.stderr.strip().splitlines() == [
            f"Error: the database at {redact_url(pair.standby)} is a read-only standby: this process serves "
            "reads but cannot write; run ingest, sync, embed and remove against the primary (DATABASE_URL)"]
    assert run_cli("db", "stop", env=env).stdout.strip() == "stopped"


def test_database_read_url_is_one_url_or_several_separated_by_commas():
    assert read_urls("") == ()
    assert read_urls(" postgresql://a/x , postgres://b/x,,postgresql://a/x") == ("postgresql://a/x", "postgres://b/x")
    with pytest.raises(ConfigError, match="DATABASE_READ_URL: 'b:5432/x' is not a postgresql:// URL"):
        read_urls("postgresql://user:secret@a:5432,b:5432/x")
    with pytest.raises(ConfigError, match=r"'host=b password=\*\*\* dbname=x' is not"):  # a conninfo's password too
        read_urls("host=b password=secret dbname=x")
