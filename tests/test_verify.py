"""`pipeline verify`: where an act has two stored official texts, the later text's units and footnote dates
against what the earlier text and the stored changes give on its date (pipeline.storage.verify). Run on the
mirror's pair UODO 2018 -> 2019 with the 2019 amending act's article that changes it."""
from __future__ import annotations

import json
from dataclasses import replace

import psycopg
import pytest
from support import database
from support.cli import run_cli
from support.corpus import parsed_act, store_text
from support.paths import mirror_meta, require_mirror

from pipeline.storage import derived

EARLIER, LATER, AMENDING = "DU/2018/1000", "DU/2019/1781", "DU/2019/730"


@pytest.fixture(scope="module")
def uodo(server_url) -> str:
    """DU/2018/1000 as enacted, its consolidated text DU/2019/1781 (whose record links no base act: its title
    announces it), and of DU/2019/730 the article that amends it (art. 161) and the one that dates it."""
    require_mirror()
    url = database.create_database(server_url, f"verify_{database.WORKER}")
    amending = parsed_act(AMENDING)
    with psycopg.connect(url) as c:
        store_text(c, mirror_meta(EARLIER), parsed_act(EARLIER))
        store_text(c, mirror_meta(LATER), parsed_act(LATER))
        store_text(c, mirror_meta(AMENDING), replace(amending, articles=[a for a in amending.articles
                                                                         if a.number in ("161", amending.articles[-1].number)]))
        c.commit()
    return url


def _verify(url: str, *acts: str):
    done = run_cli("verify", *acts, "--json", "--show", "50", env={"DATABASE_URL": url})
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None


def test_the_pair_agrees_where_the_stored_changes_speak(uodo):
    code, pairs = _verify(uodo)
    assert code == 0
    (pair,) = pairs
    assert (pair["act"], pair["earlier"], pair["later"]) == (EARLIER, EARLIER, LATER)
    assert pair["units"]["different"] == 0 and pair["units"]["equal"] > 100
    assert pair["dates"]["different"] == 0 and pair["dates"]["equal"] > 0
    # What acts not stored changed is undetermined, said, never counted equal or different
    assert all(f["verdict"] == "undetermined" and f["why"] for f in pair["findings"])
    assert _verify(uodo, LATER)[1] == pairs  # any text's id names the act


def test_a_change_read_wrong_is_a_determined_difference_and_fails(uodo):
    """The check can fail: a stored change whose wording is not what the later official text prints."""
    with psycopg.connect(uodo) as c:
        changed = c.execute(
            "UPDATE amendments m SET wording = 'Przepis odczytany błędnie.' FROM act_versions v "
            "WHERE v.version_id = m.version_id AND v.eli = %s AND m.operation = 'set_wording' "
            "AND m.target_unit <> '' RETURNING m.target_article", (AMENDING,)).fetchall()
        c.commit()
    try:
        assert changed
        code, (pair,) = _verify(uodo)
        assert code == 1 and pair["units"]["different"] > 0
        assert any(f["verdict"] == "different" and "rebuilt by DU/2019/730" in f["why"] for f in pair["findings"])
        shown = run_cli("verify", env={"DATABASE_URL": uodo})
        assert shown.returncode == 1 and "DIFFERENT" in shown.stdout
    finally:  # the instructions read again from the stored text, as an upgrade would
        with psycopg.connect(uodo) as c:
            c.execute("UPDATE amendment_extractions SET extractor = 'older rules'")
            c.commit()
            derived.backfill(c)


def test_nothing_to_compare_is_said(scratch_url):
    done = run_cli("verify", env={"DATABASE_URL": scratch_url})
    assert done.returncode == 0 and "nothing to compare" in done.stdout
