"""When each article of a text, and each of its units, is the law: the dates its final provisions set
(pipeline.sources.provisions), those another act sets for it (the act introducing it), and the history
its footnotes tell (pipeline.sources.footnotes), brought together per article of the text.

An article is in force from ``in_force_from`` up to (not including) ``in_force_until``. Where the texts
do not determine a date, it is None and ``undetermined`` quotes the clause (or says what is missing):
a date is never guessed. The rules, in order:

- A text published as itself (not a consolidated text): each article from the date its final provisions
  give it (an exception naming it, its chapter, else the act's main rule), counted from the act's
  publication; the record's entry into force where the provisions give no rule; else undetermined.
  A rule for a unit of an article ("art. 125 ust. 4") dates that unit: the article is in force from the
  earliest of its units' dates, the others enter later (the timeline says when).
- A consolidated text states the law on its own date: an article is in force from it unless its
  provisions (counted from the act's publication as a footnote prints it, "Ustawa została ogłoszona w
  dniu …", or the stored record of the act) or its footnotes date it later; the act's main rule, when
  its date cannot be counted, is taken as met by the text's date (the announcement consolidates an act
  in force; its pending parts are footnoted).
- Two wordings of an article (a consolidated text prints the wording in force and the one an amendment
  brings): the first holds until the change its footnote waits for takes effect, the second from then.
- A footnote's repeal or loss of force of the whole article ends it on its date; of a unit, or "w
  zakresie …", it is only told in the timeline.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources import footnotes as notes
from pipeline.sources import provisions
from pipeline.sources.parse.model import Article, Footnote
from pipeline.sources.provisions import Rule

EXTRACTOR = f"time 6; {provisions.EXTRACTOR}; {notes.EXTRACTOR}"  # bump when the rules change (6: a chapter repealed)

# The kinds of a timeline entry (docs/results.md): the footnotes' changes, and these.
ENTERS, APPLIES, WORDING, REPEALED, LOSES_FORCE = "enters", "applies", "wording", "repealed", "loses_force"
KINDS = (ENTERS, APPLIES, notes.ADDED, WORDING, notes.AMENDED, notes.RENUMBERED, REPEALED, LOSES_FORCE)

# How an article's ``in_force_from`` was found.
BY_PROVISIONS, BY_OTHER_ACT, BY_CONSOLIDATED, BY_FOOTNOTE, BY_RECORD, UNDETERMINED = (
    "provisions", "other_act", "consolidated_text", "footnote", "record", "undetermined")


@dataclass(frozen=True)
class Event:
    """One entry of an article's timeline: ``kind`` of ``unit`` ("" the article) from ``start`` until
    ``end`` (None: not given), by ``source_act``'s ``source_unit``, as ``text`` says it."""

    kind: str
    unit: str
    start: dt.date | None
    end: dt.date | None
    text: str
    source_act: str | None = None
    source_unit: str | None = None
    determined: bool = True  # False: the text does not determine ``start`` (the clause is quoted)
    partial: bool = False  # a loss of force "w zakresie …": the unit's text stays
    heading: bool = False  # ``unit`` is a heading above the article (a chapter's footnote): said of its articles

    def to_dict(self) -> dict:
        return {"from": self.start, "until": self.end, "kind": self.kind, "unit": self.unit,
                "source": {"act": self.source_act, "unit": self.source_unit}, "text": self.text,
                "determined": self.determined}


@dataclass
class ArticleTime:
    """When one article (one wording of it) is the law, and why."""

    in_force_from: dt.date | None
    in_force_until: dt.date | None = None
    undetermined: str | None = None  # the clause (or what is missing) where in_force_from is not determined
    basis: str = UNDETERMINED
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class ElsewhereRule:
    """A rule another act's text states for this act (DU/2024/1222 art. 1 for DU/2024/1221), with the
    publication date of the act that states it."""

    rule: Rule
    source_act: str
    published: dt.date | None


@dataclass(frozen=True)
class TextFacts:
    """What a text's time is read from."""

    articles: list[Article]
    consolidated: bool
    text_date: dt.date | None  # a consolidated text: the date it states the law on; else None
    published: dt.date | None  # the act's publication (a consolidated text: the act's, not the text's)
    record_entry: dt.date | None = None  # the record's entry into force of the act
    notes: list[Footnote] = field(default_factory=list)  # footnotes marked outside the articles
    elsewhere: list[ElsewhereRule] = field(default_factory=list)
    act: str = ""  # the act's ELI id (what ``elsewhere`` rules name)


@dataclass
class TextTime:
    articles: list[ArticleTime]  # one per article of TextFacts.articles, in order
    rules: list[Rule]  # the text's own final provisions (for this act and for others)
    published: dt.date | None  # the publication date the rules were counted from
    states_from: dt.date | None  # the earliest day any article is in force (None: not determined)
    footnotes: dict[int, notes.Reading] = field(default_factory=dict)


def _all_footnotes(facts: TextFacts) -> dict[int, str]:
    texts = {f.number: f.text for f in facts.notes}
    for a in facts.articles:
        texts.update((f.number, f.text) for f in a.footnotes)
    return texts


def published_of(readings: dict[int, notes.Reading], published: dt.date | None, consolidated: bool) -> dt.date | None:
    """The act's publication date: a consolidated text's footnote "Ustawa została ogłoszona w dniu …" (its
    own masthead's date is the announcement's, not the act's), else what the caller knows."""
    printed = next((r.date for r in readings.values() if r.kind == notes.PUBLISHED and r.date), None)
    return printed or published


def _covers(rule: Rule, article: Article) -> bool:
    if rule.chapter is not None:
        return any(h == rule.chapter or h.startswith(rule.chapter + " ") for h in article.heading_path)
    return rule.article == article.number


def _main(rules: list[Rule]) -> Rule | None:
    return next((r for r in rules if r.article is None and r.chapter is None), None)


def read(facts: TextFacts) -> TextTime:
    """When each article of the text is the law (see the module's rules)."""
    readings = notes.read(_all_footnotes(facts))
    published = published_of(readings, facts.published, facts.consolidated)
    own = provisions.read([a for a in facts.articles if a.wording in (0, 1)])
    mine = [r for r in own if r.act is None or r.act == facts.act]
    counted: list[tuple[Rule, dt.date | None, str, str | None]] = [  # (rule, its date, basis, source act)
        (r, r.when.on(published), BY_PROVISIONS, None) for r in mine]
    main = _main(mine)
    if facts.elsewhere and (main is None or main.when.kind in (provisions.OTHER_ACT, provisions.UNKNOWN)):
        # The act's term stands in another act: its rules replace the one that points there.
        counted = [c for c in counted if c[0] is not main]
        counted += [(e.rule, e.rule.when.on(published or e.published), BY_OTHER_ACT, e.source_act)
                    for e in facts.elsewhere]
    # A consolidated text's footnote on the act's own entry into force ("Ustawa weszła w życie z dniem …").
    for r in readings.values():
        if r.kind == notes.ENTERS:
            counted += [(rule, rule.when.on(published), BY_FOOTNOTE, rule.when.act)
                        for rule in provisions.read_clause(r.text)]
    times = [_article_time(a, facts, counted, readings) for a in facts.articles]
    _date_wordings(facts.articles, times)
    dated = [t.in_force_from for t, a in zip(times, facts.articles, strict=True) if t.in_force_from and not a.repealed]
    states_from = None if facts.consolidated else min(dated + ([facts.record_entry] if facts.record_entry else []),
                                                      default=None)
    return TextTime(times, own, published, states_from, readings)


def _article_time(article: Article, facts: TextFacts, counted: list, readings: dict[int, notes.Reading]) -> ArticleTime:
    by_text = [c for c in counted if c[2] != BY_FOOTNOTE]
    by_footnote = [c for c in counted if c[2] == BY_FOOTNOTE]

    def whole_article(group: list, kind: str) -> list:
        if kind == "article":
            return [c for c in group if c[0].article == article.number and not c[0].unit and not c[0].scope]
        if kind == "chapter":
            return [c for c in group if c[0].chapter is not None and _covers(c[0], article)]
        return [c for c in group if c[0].article is None and c[0].chapter is None]

    # The most specific rule that dates the whole article: its own, its chapter's, the act's (a determined
    # date before an undetermined one: a footnote's "Ustawa weszła w życie z dniem …" before a period that
    # cannot be counted).
    ranked = (whole_article(by_text, "article") + whole_article(by_footnote, "article")
              + whole_article(by_text, "chapter") + whole_article(by_footnote, "chapter")
              + [c for c in whole_article(by_text, "act") if c[1] is not None] + whole_article(by_footnote, "act")
              + whole_article(by_text, "act"))
    whole = ranked[0] if ranked else None
    unreadable = next((c[0] for c in counted if c[0].article == "?"), None)
    events: list[Event] = []
    seen: set[tuple[str, dt.date | None]] = set()
    for rule, day, _basis, source in by_text + by_footnote:
        if rule.article == article.number and (rule.unit or rule.scope):
            unit = f"{rule.unit} ({rule.scope})".strip() if rule.scope else rule.unit
            if (unit, day) not in seen:
                seen.add((unit, day))
                events.append(Event(APPLIES if rule.verb == "applies" else ENTERS, unit, day, None, rule.clause,
                                    source or facts.act or None,
                                    f"art. {rule.source_article}" if rule.source_article else None, day is not None))
    if whole is not None and unreadable is not None and whole[0].article is None and whole[0].chapter is None:
        # The article may be among the units of an exception that could not be read: not dated by the main rule.
        time = ArticleTime(None, undetermined=f"an exception of the final provisions could not be read: "
                                              f"{unreadable.when.text}")
    elif whole is not None:
        rule, day, basis, source = whole
        if day is None and facts.consolidated and rule.article is None and rule.chapter is None:
            time = ArticleTime(facts.text_date, basis=BY_CONSOLIDATED)
        else:
            time = ArticleTime(day, None, None if day else rule.clause, basis if day else UNDETERMINED)
            events.insert(0, Event(APPLIES if rule.verb == "applies" else ENTERS, "", day, None, rule.clause,
                                   source or facts.act or None,
                                   f"art. {rule.source_article}" if rule.source_article else None, day is not None))
    elif facts.consolidated:
        time = ArticleTime(facts.text_date, basis=BY_CONSOLIDATED)
    elif facts.record_entry:
        time = ArticleTime(facts.record_entry, basis=BY_RECORD)
    else:
        time = ArticleTime(None, undetermined="the final provisions give no rule and the record no date")
    # A unit in force before the article's main date (an earlier exception) brings the article in; its other
    # ustępy (paragraphs), named by no rule, follow the main rule: they enter on its date (issue 47).
    earlier = [e.start for e in events if e.unit and e.start and time.in_force_from and e.start < time.in_force_from]
    if earlier and whole is not None and time.basis != BY_CONSOLIDATED:
        named = [e.unit for e in events if e.unit]
        rule = whole[0]
        events += [Event(ENTERS, top, time.in_force_from, None, rule.clause, whole[3] or facts.act or None,
                         f"art. {rule.source_article}" if rule.source_article else None)
                   for top in _top_units(article) if not any(n == top or n.startswith(top + " ") for n in named)]
    if earlier:
        time.in_force_from = min(earlier)
    history = _footnote_events(article, readings)
    time.events = events + history
    for e in history:
        if e.unit and not (e.heading and e.kind == notes.ADDED):
            continue
        if e.kind == notes.ADDED and e.start and time.in_force_from and e.start > time.in_force_from:
            # Added later than the act entered (itself, or with the chapter it stands in: "Rozdział dodany
            # przez …"): in force from its addition.
            time.in_force_from, time.basis = e.start, BY_FOOTNOTE
        if e.kind in (REPEALED, LOSES_FORCE) and e.start and not e.partial and not article.repealed:
            if time.in_force_until is None or e.start < time.in_force_until:
                time.in_force_until = e.start
    return time


def _top_units(article: Article) -> list[str]:
    """The article's ustępy or paragraphs as cited ("ust. 1", "§ 2"), in order; [] where it has none."""
    lines = article.text.split("\n")
    tops: list[str] = []
    for path in units.paths(lines, label_end(lines[0]) if lines else 0):
        top = " ".join(path.split()[:2])
        if top.startswith(("ust.", "§")) and top not in tops:
            tops.append(top)
    return tops


def _footnote_events(article: Article, readings: dict[int, notes.Reading]) -> list[Event]:
    """The timeline entries an article's footnotes give (each footnote once, where its mark stands); a
    wording's end ("W tym brzmieniu obowiązuje do wejścia w życie zmiany …") closes the entry that opened it."""
    events: list[Event] = []
    endings: list[tuple[str, Event]] = []
    seen: set[tuple[int, str]] = set()
    for f in article.footnotes:
        r = readings.get(f.number)
        if r is None or (f.number, f.unit) in seen or r.kind not in notes.CHANGES + (notes.UNTIL_CHANGE,):
            continue
        seen.add((f.number, f.unit))
        part = r.part if r.part not in ("rozdział", "oddział", "dział", "tytuł") else ""
        unit = f.heading if f.heading is not None else " ".join(x for x in (f.unit, part) if x)
        if r.kind == notes.UNTIL_CHANGE:
            endings.append((unit, Event(WORDING, unit, None, r.date, r.text, determined=r.date is not None)))
            continue
        events.append(Event(r.kind, unit, r.date, None, r.text, r.source_act, r.source_unit, partial=r.partial,
                            heading=f.heading is not None))
    for unit, ending in endings:
        opened = next((i for i, e in enumerate(events)
                       if e.unit == unit and e.end is None and e.kind in (WORDING, notes.ADDED, notes.AMENDED,
                                                                          notes.RENUMBERED)), None)
        if opened is None:
            events.append(ending)  # the wording's own start is not told
        else:
            e = events[opened]
            events[opened] = Event(e.kind, e.unit, e.start, ending.end, e.text, e.source_act, e.source_unit)
    return events


def _date_wordings(articles: list[Article], times: list[ArticleTime]) -> None:
    """The two wordings of an article: the first until the change its footnote waits for, the second from
    it. Without a footnote that dates it, the second is undetermined (the first still holds)."""
    for i, (a, t) in enumerate(zip(articles, times, strict=True)):
        if a.wording != 1 or i + 1 >= len(articles) or articles[i + 1].number != a.number:
            continue
        second = times[i + 1]
        ends = [e.end for e in t.events if e.end is not None]
        change = min(ends) if ends else None
        if change is None:
            second.in_force_from, second.basis = None, UNDETERMINED
            second.undetermined = ("the consolidated text prints this wording after the one in force, without "
                                   "the date of the change that brings it")
            continue
        t.in_force_until = change if t.in_force_until is None else min(t.in_force_until, change)
        second.in_force_from, second.basis, second.undetermined = change, BY_FOOTNOTE, None
        if t.in_force_from is not None and change < t.in_force_from:  # the change came first: it holds
            t.in_force_from = None
            t.undetermined = "the change that ends this wording took effect before the article"


def not_in_force(events: Iterable[Event], day: dt.date) -> list[Event]:
    """The entries of an article's timeline that say one of its units is not the law on ``day``: not yet
    in force (or on an undetermined date), in a wording that starts later, or ended (a reader of the
    article's text on that day is told so beside it)."""
    out = []
    for e in events:
        if not e.unit:
            continue
        if e.kind in (ENTERS, APPLIES, notes.ADDED) and (not e.determined or (e.start is not None and e.start > day)):
            out.append(e)
        elif e.kind in (WORDING, notes.AMENDED) and e.start is not None and e.start > day:
            out.append(e)
        elif e.kind in (REPEALED, LOSES_FORCE) and not e.partial and e.start is not None and e.start <= day:
            out.append(e)
        elif e.end is not None and e.end <= day:
            out.append(e)
    return out


# --- as a reader is told it (Polish: the user's language) -------------------------------------------------

def _day_before(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=1)


def in_force_note(day: dt.date, start: dt.date | None, end: dt.date | None, undetermined: str | None,
                  repealed: bool = False, basis: str | None = None) -> str:
    """One line on whether an article is the law on ``day`` ("obowiązuje od 2003-03-10 do 2024-11-09",
    "wchodzi w życie 2028-05-19", "data wejścia w życie nieokreślona w tekstach: „…”"). ``basis``
    "consolidated_text": the date is the consolidated text's own, which states the law on it; when the
    article came into force the text does not say, and the line does not pretend it does."""
    if repealed:
        return (f"uchylony z dniem {end}; brzmienie sprzed uchylenia nie jest w przechowywanych tekstach"
                if end is not None and day < end else "uchylony")
    if end is not None and day >= end:
        return f"obowiązywał do {_day_before(end)}"
    if start is None:  # a clause of the act is quoted; what is missing is said plainly
        missing = undetermined is not None and undetermined.startswith("the ")
        return "data wejścia w życie nieokreślona w tekstach" + (
            "" if not undetermined or missing else f": „{undetermined}”")
    if basis == UNDETERMINED and undetermined:  # dated, but not on this day: the texts do not say (a day long before the text)
        return ("nieokreślone: tekst jednolity podaje zmiany od poprzedniego tekstu, nie starsze; czy i w jakim "
                "brzmieniu przepis wtedy obowiązywał, przechowywane teksty nie mówią")
    if day < start and basis == BY_CONSOLIDATED:  # before the text's own date: it does not say
        return (f"nieokreślone: tekst jednolity stanowi prawo na {start}, a od kiedy wcześniej ten przepis "
                "obowiązuje, nie podaje")
    if day < start:
        return f"wchodzi w życie {start}"
    if basis == BY_CONSOLIDATED:
        return (f"obowiązuje (według tekstu jednolitego na {start}; od kiedy, ten tekst nie podaje)"
                + (f", do {_day_before(end)}" if end else ""))
    return f"obowiązuje od {start}" + (f" do {_day_before(end)}" if end else "")


def unit_note(event: Event, day: dt.date) -> str:
    """Why a unit of an article is not the law on ``day`` (one of :func:`not_in_force`)."""
    unit = event.unit or "artykuł"
    if event.kind in (ENTERS, APPLIES, notes.ADDED) and not event.determined:
        return f"{unit}: data wejścia w życie nieokreślona w tekstach („{event.text}”)"
    if event.kind == APPLIES and event.start is not None and event.start > day:
        return f"{unit} stosuje się od {event.start}"
    if event.kind in (ENTERS, notes.ADDED) and event.start is not None and event.start > day:
        return f"{unit} wchodzi w życie {event.start}"
    if event.kind in (WORDING, notes.AMENDED) and event.start is not None and event.start > day:
        return f"{unit}: to brzmienie obowiązuje od {event.start}"
    if event.kind == REPEALED:
        return f"{unit} uchylony z dniem {event.start}"
    if event.kind == LOSES_FORCE:
        return f"{unit} utracił moc z dniem {event.start}"
    return f"{unit}: to brzmienie obowiązywało do {_day_before(event.end)}" if event.end else unit
