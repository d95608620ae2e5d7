"""Dates as Polish legal texts write them, and periods counted as Polish law counts them.

"z dniem 1 stycznia 2025 r." names a day; "po upływie 14 dni od dnia ogłoszenia" counts a period from
an event. A period in days ends with its last day, the day of the event not counted (Kodeks cywilny
art. 111 § 2); in weeks, months or years it ends with the day that corresponds by name or number to
the event's day, or, in a month without that number, with the month's last day (art. 112). An act
that comes into force "po upływie" a period does so the day after the period ends (the act on
publishing normative acts, art. 4, and its reading in the Zasady techniki prawodawczej).
"""
from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

MONTHS = ("stycznia", "lutego", "marca", "kwietnia", "maja", "czerwca", "lipca", "sierpnia", "września",
          "października", "listopada", "grudnia")
MONTH = "(?:" + "|".join(MONTHS) + ")"
# "1 stycznia 2025 r.", "1 stycznia 2025 roku", "1 stycznia 2025"
DATE = rf"(?P<day>\d{{1,2}})\s+(?P<month>{MONTH})\s+(?P<year>\d{{4}})(?:\s*r\.|\s+roku)?"
_DATE = re.compile(DATE, re.IGNORECASE)

# Numbers as a period writes them, in the cases the phrase "po upływie N …" puts them in.
_NUMBER_WORDS = {
    "jednego": 1, "jeden": 1, "dwóch": 2, "dwu": 2, "dwa": 2, "trzech": 3, "trzy": 3, "czterech": 4, "cztery": 4,
    "pięciu": 5, "pięć": 5, "sześciu": 6, "sześć": 6, "siedmiu": 7, "siedem": 7, "ośmiu": 8, "osiem": 8,
    "dziewięciu": 9, "dziewięć": 9, "dziesięciu": 10, "dziesięć": 10, "jedenastu": 11, "dwunastu": 12,
    "czternastu": 14, "piętnastu": 15, "osiemnastu": 18, "dwudziestu": 20, "dwudziestu czterech": 24,
    "trzydziestu": 30, "sześćdziesięciu": 60, "dziewięćdziesięciu": 90,
}
NUMBER_WORD = "(?:" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True)) + ")"
# The units of a period, by the words that name them in any case and number.
_UNITS = {"dzień": "days", "dnia": "days", "dni": "days", "tydzień": "weeks", "tygodnia": "weeks", "tygodni": "weeks",
          "miesiąc": "months", "miesiąca": "months", "miesięcy": "months", "miesiące": "months",
          "rok": "years", "roku": "years", "lat": "years", "lata": "years"}
UNIT_WORD = "(?:" + "|".join(sorted(_UNITS, key=len, reverse=True)) + ")"
# One part of a period: "14 dni", "3 miesięcy", "miesiąca" (one), "trzech miesięcy", "2 lat"
PART = rf"(?:(?:\d+|{NUMBER_WORD})\s+)?{UNIT_WORD}"
PERIOD = rf"{PART}(?:\s+i\s+{PART})*"
_PART = re.compile(rf"(?:(?P<n>\d+|{NUMBER_WORD})\s+)?(?P<unit>{UNIT_WORD})\b", re.IGNORECASE)


def parse_date(text: str) -> dt.date | None:
    """The first date written in ``text`` ("1 stycznia 2025 r."); None when there is none or it is impossible."""
    m = _DATE.search(text)
    return date_of(m) if m else None


def date_of(m: re.Match[str]) -> dt.date | None:
    """The date a match of :data:`DATE` names (its groups day, month, year)."""
    try:
        return dt.date(int(m.group("year")), MONTHS.index(m.group("month").lower()) + 1, int(m.group("day")))
    except ValueError:  # "31 lutego"
        return None


@dataclass(frozen=True)
class Period:
    """A period of years, months, weeks and days ("2 lat i 3 miesięcy")."""

    years: int = 0
    months: int = 0
    weeks: int = 0
    days: int = 0

    @classmethod
    def parse(cls, text: str) -> Period | None:
        """The period ``text`` writes ("14 dni", "trzech miesięcy", "miesiąca", "2 lat i 3 miesięcy")."""
        found = {"years": 0, "months": 0, "weeks": 0, "days": 0}
        seen = False
        for m in _PART.finditer(text):
            n = m.group("n")
            count = 1 if n is None else int(n) if n.isdigit() else _NUMBER_WORDS[n.lower()]
            found[_UNITS[m.group("unit").lower()]] += count
            seen = True
        return cls(**found) if seen else None

    def end(self, start: dt.date) -> dt.date:
        """The last day of the period counted from the event on ``start`` (that day not counted)."""
        if not (self.years or self.months or self.weeks):
            return start + dt.timedelta(days=self.days)
        months = self.years * 12 + self.months
        year, month = divmod(start.month - 1 + months, 12)
        year, month = start.year + year, month + 1
        day = min(start.day, calendar.monthrange(year, month)[1])
        return dt.date(year, month, day) + dt.timedelta(weeks=self.weeks, days=self.days)

    def after(self, start: dt.date) -> dt.date:
        """The day after the period ends: when what comes "po upływie" it takes effect."""
        return self.end(start) + dt.timedelta(days=1)

    def __str__(self) -> str:
        parts = [(self.years, "lat"), (self.months, "mies."), (self.weeks, "tyg."), (self.days, "dni")]
        return " ".join(f"{n} {word}" for n, word in parts if n)
