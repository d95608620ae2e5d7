"""Currency of an act: is its stored text still the law, or was it amended (or repealed) since?

The ELI record says so (pipeline.sources.record): a consolidated text (tekst jednolity) lists the
amendments published after it, any other act its amending acts, and ``inForce`` whether it is in
force. :func:`columns` keeps that in the columns of ``acts`` when an act is stored; :func:`for_acts`
reads it back through the ``act_currency`` view; :attr:`Currency.state` names where the act stands on
the date asked, and :meth:`Currency.note` and :func:`warning` say it in Polish.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipeline.core import clock
from pipeline.sources.record import DATED_BY_ACT, Amendment, EliRecord, record_date
from pipeline.storage.db import read_only

NOT_IN_FORCE = "NOT_IN_FORCE"

# Where an act stands on the date asked (Currency.state), the one answer every face shows.
NOT_IN_FORCE_STATE = "not_in_force"  # repealed or expired on the date asked
AMENDED = "amended"  # amendments after the stored text bear on the date asked
UNKNOWN = "unknown"  # the record says nothing of amendments (a local file, a rebuilt record)
CURRENT = "current"  # in force, and no amendment after the text is known
STATES = (NOT_IN_FORCE_STATE, AMENDED, UNKNOWN, CURRENT)


@dataclass(frozen=True)
class Currency:
    eli: str
    base_eli: str
    in_force: str | None  # IN_FORCE | NOT_IN_FORCE | UNKNOWN | None
    status: str | None  # the API's Polish status, e.g. "obowiązujący", "wygaśnięcie aktu"
    text_as_of: dt.date | None  # the date the stored text states the law for
    expiration_date: dt.date | None
    change_date: dt.datetime | None
    checked_at: dt.datetime | None
    amended_after: tuple[Amendment, ...] | None  # None: the metadata says nothing about amendments
    is_current: bool = True  # holds the current text of its base act
    version_no: int | None = None  # its latest stored version
    # The date the reader asked about (search/ask/show --as-of); None: today. What happened to the act
    # after that date does not bear on the law as it stood then (amendments, going out of force).
    as_of: dt.date | None = None
    title: str | None = None  # the act's title from its record (None: the record has none)
    act_date: dt.date | None = None  # the act's own date ("z dnia …"), where its text or record names it

    @property
    def consolidated(self) -> bool:
        return self.base_eli != self.eli

    @property
    def amendments(self) -> tuple[Amendment, ...] | None:
        """The amendments after the text that bear on the date asked about: all of them, or with
        ``as_of`` those dated on or before it. An undated one is kept: it cannot be ruled out."""
        if self.amended_after is None or self.as_of is None:
            return self.amended_after
        return tuple(a for a in self.amended_after if a.date is None or a.date <= self.as_of)

    @property
    def amended(self) -> bool:
        return bool(self.amendments)

    @property
    def repealed_since(self) -> bool:
        """Not in force now, but in force on the date asked about (it expired after ``as_of``)."""
        return (self.in_force == NOT_IN_FORCE and self.as_of is not None and self.expiration_date is not None
                and self.expiration_date > self.as_of)

    @property
    def not_in_force(self) -> bool:
        """Not in force on the date asked about (today without ``as_of``)."""
        return self.in_force == NOT_IN_FORCE and not self.repealed_since

    @property
    def state(self) -> str:
        """Where the act stands on the date asked, one of STATES: not in force then; else amended after
        the text (by what bears on that date); else unknown (no record of amendments); else current."""
        if self.not_in_force:
            return NOT_IN_FORCE_STATE
        if self.amended:
            return AMENDED
        if self.amendments is None:
            return UNKNOWN
        return CURRENT

    def note(self) -> str:
        """One Polish line: text as of DATE; amended since by N acts (ids, dates); or not in force.
        With ``as_of``, only the amendments up to that date count."""
        kind = "tekst jednolity" if self.consolidated else "tekst"
        parts = [f"{self.eli}: {kind} według stanu na {self.text_as_of or 'nieznaną datę'}"]
        if self.in_force == NOT_IN_FORCE:
            parts.append("akt nie obowiązuje" + (f" od {self.expiration_date}" if self.expiration_date else "")
                         + (f" ({self.status})" if self.status else "")
                         + (f"; {self.as_of} jeszcze obowiązywał" if self.repealed_since else ""))
        amendments = self.amendments
        if amendments is None:
            # No check time: the record was made for a local file, no ELI metadata was read.
            parts.append("metadane ELI nie podają późniejszych zmian" if self.checked_at
                         else "metadanych ELI nie sprawdzono (tekst z pliku)")
        elif self.as_of is None:
            if amendments:
                parts.append(f"później zmieniony {_acts(len(amendments))}: "
                             f"{', '.join(_amendment(a, self.as_of) for a in amendments)}")
            elif not self.not_in_force:
                parts.append("bez późniejszych zmian według metadanych ELI")
        else:
            # An amendment's date is the amending act's own (or, for an act that is not a consolidated
            # text, its entry into force): dated before the day asked about, it may still have been
            # unpublished or not in force then. So: "dated up to", not "amended by".
            if amendments:
                parts.append(f"akty zmieniające datowane do {self.as_of}: {len(amendments)} – "
                             f"{', '.join(_amendment(a, self.as_of) for a in amendments)}")
            else:
                parts.append(f"brak aktów zmieniających datowanych do {self.as_of} według metadanych ELI")
            if later := len(self.amended_after or ()) - len(amendments):
                parts.append(f"późniejszych: {later}")
        if self.checked_at:
            parts.append(f"sprawdzono {self.checked_at:%Y-%m-%d}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The record's facts, with ``amended_after`` / ``amendments_after`` those that bear on ``as_of``
        (the note's), and ``amended_after_total`` all of them."""
        d = asdict(self)
        amendments = self.amendments
        d["amended_after"] = None if amendments is None else [
            {**asdict(a), "in_force": None if a.in_force_from is None else a.in_force_from <= (self.as_of or clock.today())}
            for a in amendments]
        d["amendments_after"] = None if amendments is None else len(amendments)
        d["amended_after_total"] = None if self.amended_after is None else len(self.amended_after)
        d["state"] = self.state
        d["repealed_since"] = self.repealed_since
        d["note"] = self.note()
        return d


def _amendment(a: Amendment, day: dt.date | None = None) -> str:
    """"DU/2026/473 (z 2026-03-11; wchodzi w życie 2026-07-08)": the act, its date, and whether its change
    is in force on ``day`` (None: today) and from when, where that is known."""
    day = day or clock.today()
    dated = "" if a.date is None or a.date_of != DATED_BY_ACT else f"z {a.date}"
    if a.in_force_from is not None:
        when = f"{'obowiązuje od' if a.in_force_from <= day else 'wchodzi w życie'} {a.in_force_from}"
    elif a.date is not None and a.date_of != DATED_BY_ACT:
        when = f"w życie od {a.date}"
    else:
        when = ""
    said = "; ".join(x for x in (dated, when) if x)
    return f"{a.eli} ({said})" if said else a.eli


def _acts(n: int) -> str:
    """'1 aktem', '2 aktami'; Polish instrumental is the same for every n > 1."""
    return "1 aktem" if n == 1 else f"{n} aktami"


def warning(currencies: Iterable[Currency]) -> str | None:
    """One Polish line under an answer when a cited act was amended after its text, or is not in force."""
    problems, amended = [], False
    for c in currencies:
        if amendments := c.amendments:
            last = max(amendments, key=lambda a: (a.date or dt.date.min))
            if c.as_of is None:
                problems.append(f"{c.eli} (tekst według stanu na {c.text_as_of}) zmieniono później "
                                f"{_acts(len(amendments))}, ostatnio {_amendment(last, c.as_of)}")
            else:
                problems.append(f"{c.eli} (tekst według stanu na {c.text_as_of}): akty zmieniające datowane do "
                                f"{c.as_of}: {len(amendments)}, ostatni {_amendment(last, c.as_of)}")
            amended = True
        if c.not_in_force:
            problems.append(f"{c.eli} nie obowiązuje" + (f" od {c.expiration_date}" if c.expiration_date else ""))
    if not problems:
        return None
    return "Uwaga: " + "; ".join(problems) + (". Odpowiedź może nie uwzględniać tych zmian." if amended else ".")


# --- record -> stored columns ----------------------------------------------------------------------


def columns(record: EliRecord) -> dict[str, Any]:
    """The currency columns of ``acts`` for this record (store.upsert_act writes them)."""
    amendments = record.amendments_after()
    return {
        "amended_after": None if amendments is None else Jsonb([a.to_dict() for a in amendments]),
        "change_date": record.dates.changed,
    }


def backfill(conn: psycopg.Connection) -> None:
    """Fill the currency columns from the records already stored (migration 0004)."""
    rows = conn.execute("SELECT eli, meta FROM acts").fetchall()
    for eli, meta in rows:
        cols = columns(EliRecord.read(meta, eli))
        conn.execute("UPDATE acts SET amended_after = %s, change_date = %s, checked_at = updated_at WHERE eli = %s",
                     (cols["amended_after"], cols["change_date"], eli))


# --- stored columns -> Currency ---------------------------------------------------------------------

_COLUMNS = ("eli, base_eli, in_force, status, text_as_of, expiration_date, change_date, checked_at, "
            "amendments_in_force, is_current, version_no, title, act_date")


def _from_row(row: tuple, asked: dt.date | None = None) -> Currency:
    eli, base, in_force, status, as_of, expiration, change, checked, amended, current, version, title, act_date = row
    amendments = None if amended is None else tuple(
        Amendment(a["eli"], record_date(a.get("date")), a.get("date_of") or DATED_BY_ACT,
                  record_date(a.get("in_force_from")), a.get("in_force_source")) for a in amended
    )
    return Currency(eli, base, in_force, status, as_of, expiration, change, checked, amendments, bool(current), version,
                    asked, title or None, act_date)


@read_only
def for_acts(conn: psycopg.Connection, elis: Iterable[str], as_of: dt.date | None = None) -> dict[str, Currency]:
    """Currency of the given acts (those stored), by ELI id, for the law as it stood on ``as_of``
    (None: today)."""
    wanted = sorted(set(elis))
    if not wanted:
        return {}
    rows = conn.execute(f"SELECT {_COLUMNS} FROM act_currency WHERE eli = ANY(%s)", (wanted,)).fetchall()
    return {row[0]: _from_row(row, as_of) for row in rows}


@read_only
def list_acts(conn: psycopg.Connection, *, current_only: bool = True) -> list[Currency]:
    """Stored acts with their currency: per base act the one holding its current text (the
    ``current_acts`` view), or every stored act, superseded consolidated texts included."""
    view = "current_acts" if current_only else "act_currency"  # fixed names
    rows = conn.execute(f"SELECT {_COLUMNS} FROM {view} ORDER BY base_eli, eli").fetchall()
    return [_from_row(row) for row in rows]
