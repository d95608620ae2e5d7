"""Ingest and sync fetch the acts that amended an act after its text (issue 40, "fetching what is needed"),
on the mirror's real acts: DU/2018/1000 (the personal data protection act as enacted) and DU/2019/730, the
amending act in the mirror whose art. 161 changes it (art. 5a added, art. 108 renumbered …).

The mirror's rebuilt record of DU/2018/1000 lists no relations; an overlay record (served by the ELI
stand-in, or written into a mirror folder for ``--source``) lists the acts that amended it, as the real
API's "Akty zmieniające" does. Ingests store no vectors (``--no-embed``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest
from support.cli import run_cli
from support.paths import ELI_MIRROR, mirror_meta, require_mirror

from pipeline.indexing.ingest import amending_acts_after
from pipeline.sources.record import AMENDING_ACTS, CONSOLIDATED_FOR, LATER_AMENDMENTS, EliRecord

AMENDED = "DU/2018/1000"
AMENDING = "DU/2019/730"  # in force 2019-05-04 (art. 161 changes DU/2018/1000)
NOT_IN_MIRROR = "DU/2018/1669"  # a real amending act of DU/2018/1000 ("Dz. U. poz. 1000 i 1669"), not in the mirror
FURTHER = "DU/2019/914"  # listed here as amending DU/2019/730 itself: never fetched (amending acts of amending acts)


def _record(act: str, amending: list[dict]) -> dict:
    """``act``'s mirror record with "Akty zmieniające" listing ``amending`` (and DU/2018/1000's real entry into force)."""
    record = mirror_meta(act)
    if act == AMENDED:
        record["entryIntoForce"] = "2018-05-25"
    record["references"] = {AMENDING_ACTS: amending} if amending else {}
    return record


def _put(root: Path, act: str, record: dict) -> None:
    path = root / "acts" / act / "meta.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")


def _listed(root: Path) -> None:
    """DU/2018/1000 amended by DU/2019/730 and by an act the mirror lacks; DU/2019/730 "amended" by DU/2019/914."""
    _put(root, AMENDED, _record(AMENDED, [{"id": AMENDING, "date": "2019-05-04"}, {"id": NOT_IN_MIRROR}]))
    _put(root, AMENDING, _record(AMENDING, [{"id": FURTHER, "date": "2020-01-01"}]))


@pytest.fixture
def api(server, scratch_url, tmp_path):
    """The ELI stand-in with an overlay folder, an empty database, an archive: what `pipeline` runs with."""
    server.overlay = tmp_path / "overlay"
    return {"server": server, "overlay": server.overlay, "url": scratch_url, "archive": str(tmp_path / "dane"),
            "env": {"DATABASE_URL": scratch_url, "ELI_API_URL": server.url}}


def _cli(api: dict, *args: str):
    done = run_cli(*args, "--archive", api["archive"], env=api["env"])
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _changes(url: str, target: str, source: str) -> int:
    with psycopg.connect(url) as c:
        return c.execute("SELECT count(*) FROM amendment_changes WHERE target_base_act = %s AND source_act = %s",
                         (target, source)).fetchone()[0]


# --- which acts a record lists as amending its text after it (no database) --------------------------

def test_the_amending_acts_after_a_text_by_its_record():
    require_mirror()
    listed = [{"id": "DU/2018/1", "date": "2018-05-25"}, {"id": AMENDING, "date": "2019-05-04"}, {"id": NOT_IN_MIRROR}]
    base = EliRecord.read({"ELI": AMENDED, "entryIntoForce": "2018-05-25", "references": {AMENDING_ACTS: listed}})
    # A change in force on the text's own day is in the text; an undated one cannot be ruled out.
    assert amending_acts_after(base) == [NOT_IN_MIRROR, AMENDING]
    undated = EliRecord.read({"ELI": AMENDED, "references": {AMENDING_ACTS: listed}})
    assert amending_acts_after(undated) == [NOT_IN_MIRROR, "DU/2018/1", AMENDING]
    # A consolidated text: what it lacks, "Nowelizacje po tekście jednolitym" (its base act's list is not its own).
    assert amending_acts_after(EliRecord.read(mirror_meta("DU/2025/277"))) == ["DU/2025/807", "DU/2025/1423", "DU/2025/1661", "DU/2026/25", "DU/2026/473"]
    consolidated = EliRecord.read({"ELI": "DU/2019/1781", "references": {
        CONSOLIDATED_FOR: [{"id": AMENDED}], AMENDING_ACTS: listed, LATER_AMENDMENTS: [{"id": "DU/2026/1", "date": "2026-01-02"}]}})
    assert amending_acts_after(consolidated) == ["DU/2026/1"]
    assert amending_acts_after(EliRecord.read(mirror_meta(AMENDED))) == []  # a rebuilt record lists nothing


# --- ingest ----------------------------------------------------------------------------------------------

def test_ingest_fetches_the_acts_that_amended_it_once_and_not_theirs(api):
    _listed(api["overlay"])
    server = api["server"]
    done = _cli(api, "ingest", "--act", AMENDED, "--no-embed", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (asked, fetched) = report["acts"]
    missing = f"amending act {NOT_IN_MIRROR} of {AMENDED} not fetched: not in the ELI API"
    assert (asked["act"], asked["status"], asked["amending_of"]) == (AMENDED, "new", [])
    assert asked["amending_acts"] == {NOT_IN_MIRROR: "missing", AMENDING: "new"}
    assert asked["warnings"][-1] == missing
    assert (fetched["act"], fetched["status"], fetched["amending_of"]) == (AMENDING, "new", [AMENDED])
    assert report["failed"] == 0
    # Its changes to the act are told there: art. 108 renumbered and its ust. 2 added, in force 2019-05-04.
    assert _changes(api["url"], AMENDED, AMENDING) > 0
    shown = json.loads(_cli_plain(api, "show", AMENDED, "108", "--as-of", "2019-06-01", "--json").stdout)
    assert {(c["act"], c["operation"], c["applied"]) for c in shown["changes"]} == {
        (AMENDING, "renumber", True), (AMENDING, "add", True)}
    assert shown["official"] is False
    # The amending act's own amending acts are not fetched: no end to that.
    assert server.count(f"/acts/{FURTHER}") == 0

    # Again: the act is unchanged, its amending act stored (not asked for again), the missing one a warning.
    before = server.count(f"/acts/{AMENDING}")
    again = _cli(api, "ingest", "--act", AMENDED, "--no-embed")
    assert again.returncode == 0, again.stderr
    assert f"  warning: {missing}" in again.stderr.splitlines()
    assert f"(amending {AMENDED})" not in again.stderr
    assert server.count(f"/acts/{AMENDING}") == before
    with psycopg.connect(api["url"]) as c:
        runs = c.execute("SELECT eli, status, stats->'amending_of' FROM ingest_runs ORDER BY run_id").fetchall()
    assert runs == [(AMENDED, "new", []), (AMENDING, "new", [AMENDED]), (AMENDED, "unchanged", [])]


def _cli_plain(api: dict, *args: str):
    done = run_cli(*args, env=api["env"])
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


def test_no_amending_acts_fetches_the_act_alone(api):
    _listed(api["overlay"])
    done = _cli(api, "ingest", "--act", AMENDED, "--no-embed", "--no-amending-acts", "--json")
    assert done.returncode == 0, done.stderr
    (asked,) = json.loads(done.stdout)["acts"]
    assert (asked["act"], asked["amending_acts"]) == (AMENDED, {})
    assert api["server"].count(f"/acts/{AMENDING}") == api["server"].count(f"/acts/{NOT_IN_MIRROR}") == 0


def test_a_mirror_folder_gives_the_amending_acts_without_http(api, tmp_path):
    """--source DIR: the amending act is read from the folder; one it lacks is a warning; no request is made."""
    folder = tmp_path / "mirror"
    _listed(folder)
    for act in (AMENDED, AMENDING):
        src = ELI_MIRROR / "acts" / act / "text.html"
        os.symlink(src, folder / "acts" / act / "text.html")
    done = run_cli("ingest", "--source", str(folder), "--act", AMENDED, "--no-embed", env=api["env"])
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert f"  warning: amending act {NOT_IN_MIRROR} of {AMENDED} not fetched: not in {folder}" in lines
    assert f"[2/2] {AMENDING} (amending {AMENDED})" in lines
    assert lines[-1].startswith("2 act(s) (1 fetched as amending acts): 2 new version(s)")
    assert api["server"].requests == []
    assert _changes(api["url"], AMENDED, AMENDING) > 0


# --- sync ------------------------------------------------------------------------------------------------

def test_sync_fetches_an_amending_act_listed_since(api):
    server, overlay = api["server"], api["overlay"]
    _put(overlay, AMENDED, _record(AMENDED, []))  # the record lists no amending act yet
    assert _cli(api, "ingest", "--act", AMENDED, "--no-embed").returncode == 0
    assert server.count(f"/acts/{AMENDING}") == 0

    _listed(overlay)  # now it lists DU/2019/730 (and one the API lacks)
    done = _cli(api, "sync", "--no-embed", "--json")
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["acts"]
    assert (result["act"], result["amending_acts"]) == (AMENDED, {NOT_IN_MIRROR: "missing", AMENDING: "new"})
    assert result["warning"] == f"amending act {NOT_IN_MIRROR} of {AMENDED} not fetched: not in the ELI API"
    assert _changes(api["url"], AMENDED, AMENDING) > 0

    # The next sync checks DU/2019/730 too, but, stored only as an amending act, not the acts its record lists.
    again = _cli(api, "sync", "--no-embed")
    assert again.returncode == 0, again.stderr
    lines = dict(line.split("  ", 1) for line in again.stdout.splitlines())
    assert set(lines) == {AMENDED, AMENDING} and "amending acts fetched" not in again.stdout
    assert server.count(f"/acts/{FURTHER}") == 0
    with psycopg.connect(api["url"]) as c:
        stored = c.execute("SELECT count(*) FROM act_versions WHERE eli = %s", (AMENDING,)).fetchone()[0]
    assert stored == 1
    # --no-amending-acts: the act listed and missing is not asked for again.
    before = server.count(f"/acts/{NOT_IN_MIRROR}")
    assert _cli(api, "sync", "--no-embed", "--no-amending-acts").returncode == 0
    assert server.count(f"/acts/{NOT_IN_MIRROR}") == before
