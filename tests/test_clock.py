"""One clock: "today" is the date in Europe/Warsaw, in Python (pipeline.core.clock) and in SQL
(legal_today()), whatever the time zone of the process or of the database session."""
from __future__ import annotations

import datetime as dt
import os
import re
import time
from pathlib import Path

import pytest

from pipeline.core import clock

REPO = Path(__file__).resolve().parents[1]
# 23:30 UTC on a winter day is 00:30 of the next day in Warsaw; on a summer day 01:30.
LATE_WINTER = dt.datetime(2026, 12, 8, 23, 30, tzinfo=dt.timezone.utc)
LATE_SUMMER = dt.datetime(2026, 7, 1, 23, 30, tzinfo=dt.timezone.utc)


@pytest.fixture()
def western_process():
    """The process in a zone far west of Warsaw (where 23:30 UTC is still the same afternoon)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "America/Los_Angeles"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_the_legal_day_at_23_30_utc_is_the_next_day_whatever_the_process_zone(western_process) -> None:
    assert dt.datetime.fromtimestamp(LATE_WINTER.timestamp()).date() == dt.date(2026, 12, 8)  # the process' own day
    assert clock.legal_day(LATE_WINTER) == dt.date(2026, 12, 9)
    assert clock.legal_day(LATE_SUMMER) == dt.date(2026, 7, 2)
    assert clock.legal_day(dt.datetime(2026, 12, 8, 22, 59, tzinfo=dt.timezone.utc)) == dt.date(2026, 12, 8)
    with pytest.raises(ValueError):
        clock.legal_day(dt.datetime(2026, 12, 8, 23, 30))  # naive: no instant


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Pacific/Kiritimati", "UTC"])
def test_sql_counts_the_same_day_in_any_session_time_zone(conn, western_process, zone: str) -> None:
    conn.execute(f"SET TimeZone = '{zone}'")
    for instant in (LATE_WINTER, LATE_SUMMER):
        assert conn.execute("SELECT legal_day(%s)", (instant,)).fetchone()[0] == clock.legal_day(instant)
    # now() and the Python clock read one instant (give or take the call): the same legal day, unless
    # the call straddles midnight in Warsaw
    before = clock.today()
    assert conn.execute("SELECT legal_today()").fetchone()[0] in {before, clock.today()}


def test_no_other_clock_is_read() -> None:
    """"Today" is decided in one place: no module reads the system's date, no SQL says current_date."""
    python = re.compile(r"\b(?:date\.today|datetime\.now|datetime\.today|datetime\.utcnow)\(")
    for path in (REPO / "pipeline").rglob("*.py"):
        if path.name == "clock.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert not python.search(line), f"{path.relative_to(REPO)}:{n} reads the system's date: use pipeline.core.clock"
    for path in (REPO / "sql").glob("*.sql"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("--", 1)[0]
            assert not re.search(r"\bcurrent_date\b|\blocaltimestamp\b", code, re.I), \
                f"{path.relative_to(REPO)}:{n} reads the session's date: use legal_today()"
