"""Derived data declared once (pipeline.storage.derived): whatever order acts are stored, re-stored with a new
record and removed in, every layer equals what working everything out again from scratch gives."""
from __future__ import annotations

import time
from dataclasses import replace

import psycopg
import pytest
from support import database
from support.corpus import parsed_act, store_text
from support.paths import mirror_meta, require_mirror

from pipeline.sources.record import EliRecord
from pipeline.storage import derived, store

# DU/2018/1560 as enacted; of DU/2026/252 the article that amends it and the one that dates it (its other
# articles change acts not stored here, and cost seconds to store); DU/2026/548, an act neither touches.
CYBER, AMENDING, OTHER = "DU/2018/1560", "DU/2026/252", "DU/2026/548"
AMENDING_ACTS = "Akty zmieniające"

# Every derived table, keyed by what is not a surrogate id: a text by (act, version number), an article row
# by its place in the text, a rebuilt wording by its article and period.
_IDS = "ARRAY['version_id','article_id','rebuilt_id','chunk_id','extracted_at','rebuilt_at']"
_SNAPSHOT = {
    "texts": "SELECT v.eli, v.version_no, v.valid_from FROM act_versions v",
    **{table: f"SELECT v.eli, v.version_no, to_jsonb(t) - {_IDS} FROM {table} t JOIN act_versions v USING (version_id)"
       for table in ("version_references", "version_definitions", "context_extractions", "amendments",
                     "amendment_extractions", "version_times", "provision_rules", "rebuilt_extractions",
                     "version_delegations", "delegation_extractions")},
    **{table: f"SELECT v.eli, v.version_no, a.ordinal, to_jsonb(t) - {_IDS} FROM {table} t "
              "JOIN articles a USING (article_id) JOIN act_versions v ON v.version_id = a.version_id"
       for table in ("article_times", "article_events", "rebuilt_articles")},
    "rebuilt_chunks": "SELECT v.eli, r.article, r.in_force_from, c.part, c.text, c.content_sha256 FROM chunks c "
                      "JOIN rebuilt_articles r USING (rebuilt_id) JOIN act_versions v ON v.version_id = r.version_id",
}


def differences(a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, tuple[list[str], list[str]]]:
    """Per table that differs: (rows only in a, rows only in b), a few of each."""
    return {name: (sorted(set(a[name]) - set(b[name]))[:3], sorted(set(b[name]) - set(a[name]))[:3])
            for name in a if a[name] != b[name]}


def snapshot(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url, autocommit=True) as c:
        return {name: sorted(repr(row) for row in c.execute(sql).fetchall()) for name, sql in _SNAPSHOT.items()}


def from_scratch(url: str) -> dict[str, list[str]]:
    """Every layer of every text marked as worked out by no rules, then worked out again (the backfill an
    upgrade runs): what the stored texts give, whatever happened before."""
    with psycopg.connect(url, autocommit=True) as c:
        for layer in derived.LAYERS:
            c.execute(f"UPDATE {layer.marks.table} SET {layer.marks.column} = 'no rules'")
        assert all(derived.stale(c, layer) for layer in derived.LAYERS)
    with psycopg.connect(url) as c:
        derived.backfill(c)
    with psycopg.connect(url, autocommit=True) as c:
        assert not derived.any_stale(c)
    return snapshot(url)


def _store(url: str, act: str, *, listing: list[dict] | None = None) -> None:
    parsed = parsed_act(act)
    if act == AMENDING:
        parsed = replace(parsed, articles=[parsed.articles[0], parsed.articles[-1]])
    record = mirror_meta(act)
    if listing is not None:
        record["references"] = {AMENDING_ACTS: listing}
    with psycopg.connect(url) as c:
        store_text(c, record, parsed)
        c.commit()


def _record(url: str, act: str, listing: list[dict]) -> None:
    """A new record alone, as sync stores it (store.refresh_act)."""
    record = mirror_meta(act)
    record["references"] = {AMENDING_ACTS: listing}
    with psycopg.connect(url) as c:
        store.refresh_act(c, EliRecord.read(record))
        c.commit()


def _remove(url: str, act: str) -> None:
    with psycopg.connect(url) as c:
        store.remove_act(c, act)
        c.commit()


LISTED = [{"id": AMENDING, "date": "2026-04-03"}]
ORDERS = {
    "amended first": [("store", CYBER), ("store", AMENDING), ("store", OTHER)],
    "amending first": [("store", OTHER), ("store", AMENDING), ("store", CYBER)],
    "removed and back": [("store", AMENDING), ("store", CYBER), ("remove", AMENDING), ("store", OTHER),
                         ("store", AMENDING)],
    "a new record, then the amended act removed and back": [
        ("store", CYBER), ("store", AMENDING), ("record", CYBER), ("remove", CYBER), ("store", CYBER),
        ("record", CYBER)],
}


@pytest.fixture(scope="module")
def orders_db(server_url) -> str:
    require_mirror()
    return database.create_database(server_url, f"derived_{database.WORKER}")


# The final snapshot of each order that ends with the same acts and records, to compare the orders.
_ENDED_ALIKE: dict[str, dict[str, list[str]]] = {}


@pytest.mark.parametrize("order", list(ORDERS))
def test_every_layer_equals_a_rebuild_from_scratch_in_any_order(orders_db: str, order: str) -> None:
    url = database.empty(orders_db)
    started = time.perf_counter()
    for step, act in ORDERS[order]:
        if step == "store":
            _store(url, act)
        elif step == "record":
            _record(url, act, LISTED)
        else:
            _remove(url, act)
    got = snapshot(url)
    print(f"{order}: {len(ORDERS[order])} steps in {time.perf_counter() - started:.1f} s")
    # the layers are not empty: the amending act's changes, the cyber act's times and rebuilt wordings
    assert got["amendments"] and got["article_times"] and got["version_references"] and got["rebuilt_articles"]
    assert differences(got, from_scratch(url)) == {}
    if order in ("amended first", "amending first"):  # the same three acts, the mirror's records
        _ENDED_ALIKE[order] = got
        if len(_ENDED_ALIKE) == 2:
            assert differences(*_ENDED_ALIKE.values()) == {}
