"""The one reading of an ELI record (pipeline.sources.record), on the mirror's real records: its ids, its
dates with what each means, its relations, and what every module that reads a record takes from it."""
from __future__ import annotations

import ast
import datetime as dt
import json
from pathlib import Path

import pytest

from support.paths import ELI_MIRROR, REPO, mirror_meta, require_mirror

from pipeline.sources.record import (AMENDING_ACTS, CONSOLIDATED_FOR, DATED_BY_ACT, DATED_BY_ENTRY_INTO_FORCE,
                                     LATER_AMENDMENTS, EliRecord, act_name, consolidated_subject, display_title,
                                     record_date)


def _base_record() -> dict:
    record = json.loads((require_mirror() / "other" / "DU-1974-141-meta.EXCERPT.json").read_text())
    record.pop("_excerpt_note")  # not part of the API's answer
    return record


def test_a_consolidated_texts_record_read_once():
    record = EliRecord.read(mirror_meta("DU/2025/277"))
    assert (record.eli, record.base_eli, record.consolidates) == ("DU/2025/277", "DU/1974/141", True)
    assert (record.act_type, record.in_force, record.display_address) == ("Obwieszczenie", "IN_FORCE",
                                                                          "Dz.U. 2025 poz. 277")
    dates = record.dates
    # Each date with its meaning: the announcement's own date, its publication, the text's cut-off.
    assert (dates.announced, dates.published, dates.legal_status) == (
        dt.date(2025, 2, 14), dt.date(2025, 3, 6), dt.date(2025, 2, 7))
    assert dates.entry_into_force is None and record.text_date == dt.date(2025, 2, 7)
    assert dates.changed is not None and dates.changed.tzinfo is not None  # Warsaw time, as the API means it
    assert [r.eli for r in record.related(CONSOLIDATED_FOR)] == ["DU/1974/141"]
    assert record.related("Podstawa prawna z art.")[0].article == "art. 16 ust. 1 zdanie pierwsze"
    later = record.amendments_after()
    assert [a.eli for a in later] == ["DU/2025/807", "DU/2025/1423", "DU/2025/1661", "DU/2026/25", "DU/2026/473"]
    assert {a.date_of for a in later} == {DATED_BY_ACT}  # a consolidated text's list is dated by the acts
    assert (record.has_pdf, record.has_html, record.has_text, record.is_local) == (True, False, True, False)
    assert record.raw == mirror_meta("DU/2025/277")  # kept as received


def test_a_base_acts_record_dates_its_amendments_by_their_entry_into_force():
    record = EliRecord.read(_base_record())
    assert not record.consolidates and record.base_eli == "DU/1974/141"
    assert record.dates.entry_into_force == dt.date(1975, 1, 1)
    amendments = record.amendments_after()
    assert {a.date_of for a in amendments} == {DATED_BY_ENTRY_INTO_FORCE}
    assert len(amendments) == len({r.eli for r in record.related(AMENDING_ACTS)})  # each act once
    assert amendments == sorted(amendments, key=lambda a: (a.date or dt.date.min, a.eli))


def test_a_rebuilt_record_without_relations_says_nothing_of_amendments():
    record = EliRecord.read(mirror_meta("DU/2026/187"))
    assert record.relations is None and record.amendments_after() is None
    assert record.related(LATER_AMENDMENTS) == () and record.base_eli == "DU/2026/187"
    assert record.dates.published == dt.date(2026, 2, 18) and record.text_date == dt.date(2026, 2, 18)
    assert not record.is_local  # its "_provenance" note is the mirror's, not a local file's


def test_odd_values_are_absent_values_not_errors():
    record = EliRecord.read({"ELI": "DU/2026/1", "title": 7, "entryIntoForce": "jutro", "changeDate": "?",
                             "references": {"Akty zmieniające": [{"id": "DU/2026/2", "date": None}, "x", {}],
                                            "Odesłania": "nie lista"}})
    assert (record.title, record.dates.entry_into_force, record.dates.changed) == (None, None, None)
    assert [a.eli for a in record.amendments_after()] == ["DU/2026/2"]
    assert record.related("Odesłania") == ()
    assert EliRecord.read({}, "DU/2026/3").eli == "DU/2026/3"  # a record without its id, read as asked for
    assert record_date("2025-02-14T10:00:00") == dt.date(2025, 2, 14) and record_date(20250214) is None


def test_a_local_files_record_says_so():
    from pipeline.core.act_id import parse_act_id

    record = EliRecord.for_local_file(parse_act_id("DU/2026/548"), "Ustawa o zarządzaniu danymi", "D20260548.pdf")
    assert record.is_local and record.raw["_provenance"] == "local file D20260548.pdf"
    assert record.relations is None and record.text_date is None


def test_titles():
    kp = mirror_meta("DU/2025/277")["title"]
    assert display_title(kp) == "ustawy - Kodeks pracy"
    assert consolidated_subject(kp) == "Kodeks pracy"
    assert consolidated_subject("Ustawa z dnia 27 marca 2026 r. o zarządzaniu danymi") is None
    assert act_name("Ustawa z dnia 26 czerwca 1974 r. Kodeks pracy.") == "Kodeks pracy"
    assert display_title(mirror_meta("DU/2018/1000")["title"]) == (
        "Ustawa z dnia 10 maja 2018 r. o ochronie danych osobowych")  # its first footnote left out


# The names of an ELI record's fields; a module reading one of them from a raw record re-states the
# reader. Only the record module may use them ("inForce" is also /acts/search's parameter: left out).
RECORD_FIELDS = ("textHTML", "textPDF", "entryIntoForce", "legalStatusDate", "announcementDate", "promulgation",
                 "expirationDate", "changeDate", "displayAddress", "Tekst jednolity dla aktu",
                 "Inf. o tekście jednolitym", "Nowelizacje po tekście jednolitym", "Akty zmieniające")


def _string_constants(path: Path) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_only_the_record_module_reads_a_records_fields():
    readers = {str(p.relative_to(REPO)) for p in (REPO / "pipeline").rglob("*.py")
               if _string_constants(p) & set(RECORD_FIELDS)}
    assert readers == {"pipeline/sources/record.py"}


@pytest.mark.parametrize("act", sorted(str(p.parent.relative_to(ELI_MIRROR / "acts"))
                                        for p in (ELI_MIRROR / "acts").rglob("meta.json")))
def test_every_record_of_the_mirror_reads(act):
    record = EliRecord.read(mirror_meta(act))
    assert record.eli == act and record.base_eli and (record.has_text or act in ("DU/2023/1465", "DU/2024/1061"))
