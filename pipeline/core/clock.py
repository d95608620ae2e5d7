"""Today, as Polish law counts days: the date in Europe/Warsaw, whatever the time zone of the machine, the
process or the database session.

An act enters into force "z dniem …" at the start of a day in Poland, so "is it the law today" turns on the
Warsaw date: at 23:30 UTC in winter it is already tomorrow there. Python asks :func:`today`; SQL callers
who pass no date get ``legal_today()`` (sql/legal_time.sql), the same rule in the database. Nothing else
in the package reads the system's date.
"""
from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

LEGAL_TIME_ZONE = ZoneInfo("Europe/Warsaw")


def legal_day(at: dt.datetime) -> dt.date:
    """The Polish legal day of an instant (an aware datetime: a naive one is refused, it names no instant)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("legal_day needs an aware datetime (a naive one is no instant)")
    return at.astimezone(LEGAL_TIME_ZONE).date()


def today() -> dt.date:
    """Today's date in Europe/Warsaw: the day whose law is "the law today"."""
    return legal_day(dt.datetime.now(dt.UTC))
