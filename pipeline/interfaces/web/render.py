"""How the page shows what the service returns: marked hits, an article's units, the currency badge,
an answer with its citations as links."""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from pipeline.core import units as unit_grammar
from pipeline.core.numbering import printed
from pipeline.interfaces.web.urls import article_url

# A unit's kind as the page's CSS names it (static/web.css), and which kinds get an anchor (#par-2, #ust-3).
_CSS = {unit_grammar.PARAGRAPH: "par", unit_grammar.SECTION: "ust", unit_grammar.POINT: "pkt",
        unit_grammar.LETTER: "lit", unit_grammar.TIRET: "tir"}
_ANCHORED = (unit_grammar.PARAGRAPH, unit_grammar.SECTION)
_NOT_WORD = re.compile(r"[^\w]")


def highlight(text: str, stems: list[str]) -> Markup:
    """``text`` escaped, the words that begin with one of ``stems`` (the question's: Found.stems) in <mark>."""
    if not stems:
        return escape(text)
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(stems, key=len, reverse=True))) + r")\w*",
                         re.IGNORECASE)
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        out.append(Markup("<mark>%s</mark>") % m.group(0))
        pos = m.end()
    out.append(escape(text[pos:]))
    return Markup("").join(out)


def units(text: str) -> list[dict]:
    """The article's lines as units (pipeline.core.units: §, ust., pkt, lit., tiret) for indentation and
    anchors; the article's own label line, and any line that opens no unit, is "text"."""
    found = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        opens = unit_grammar.label(line)
        kind = _CSS[opens.kind] if opens else "text"
        anchor = f"{kind}-{_NOT_WORD.sub('', opens.number)}" if opens and opens.kind in _ANCHORED else None
        found.append({"kind": kind, "text": line, "anchor": anchor})
    return found


_BADGES = {"not_in_force": ("stale", "nie obowiązuje"), "unknown": ("unknown", "aktualność nieznana"),
           "current": ("current", "aktualny")}


def badge(currency: dict | None) -> dict:
    """The currency badge: a short Polish label and a kind for its colour, from the one state the
    service gives (pipeline.storage.currency.Currency.state); the full note goes in its title."""
    if not currency:
        return {"kind": "unknown", "label": "aktualność nieznana", "note": ""}
    note = currency.get("note") or ""
    state = currency.get("state") or "unknown"
    if state == "amended":
        amended = currency.get("amended_after") or []
        latest = max(amended, key=lambda a: str(a.get("date") or ""))
        more = len(amended) - 1
        since = latest.get("in_force_from")  # when its change takes effect, where that is known (revision 0010)
        when = "" if not since else f" — {'obowiązuje od' if latest.get('in_force') else 'wchodzi w życie'} {since}"
        return {"kind": "stale", "label": f"zmieniony później: {latest['eli']}{when}" + (f" (i {more} wcześniej)" if more else ""),
                "note": note}
    kind, label = _BADGES.get(state, _BADGES["unknown"])
    return {"kind": kind, "label": label, "note": note}


# The kinds of a timeline entry (docs/results.md), as the page names them.
_TIMELINE_KINDS = {"enters": "wejście w życie", "added": "dodanie", "wording": "brzmienie", "amended": "zmiana",
                   "renumbered": "zmiana oznaczenia", "repealed": "uchylenie", "loses_force": "utrata mocy"}


# A citation check's statuses, as the page names them (pipeline.storage.citations).
CHECK_STATUSES = {"ok": "poprawne", "not_found": "nie ma takiego przepisu", "not_in_force": "nie obowiązuje",
                  "undetermined": "data wejścia w życie nieokreślona", "act_not_stored": "akt spoza bazy",
                  "ambiguous": "niejednoznaczne"}


def marked_text(text: str, citations: Sequence[Mapping[str, Any]]) -> Markup:
    """The checked text, escaped, each citation marked with its status (a list of units cited in one place
    takes the worst of their statuses), in paragraphs."""
    worst = ["ok", "undetermined", "ambiguous", "act_not_stored", "not_in_force", "not_found"]
    spans: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for c in citations:
        spans.setdefault((c["start"], c["end"]), []).append(c)
    out: list[Markup] = []
    pos = 0
    for (start, end), found in sorted(spans.items()):
        if start < pos:
            continue
        status = max((c["status"] for c in found), key=worst.index)
        note = "; ".join(f"art. {c['article']}{' ' + c['unit'] if c['unit'] else ''}: {CHECK_STATUSES[c['status']]}"
                         + "".join(f" ({line})" for line in (c["why"], c.get("note")) if line) for c in found)
        out.append(escape(text[pos:start]))
        out.append(Markup('<mark class="cite {}" title="{}">{}</mark>').format(status, note, text[start:end]))
        pos = end
    out.append(escape(text[pos:]))
    html = Markup("").join(out)
    return Markup("").join(Markup("<p>{}</p>").format(Markup(p.replace("\n", "<br>")))
                           for p in str(html).split("\n\n") if p.strip())


def amending_units(changes: list[dict] | None) -> list[dict]:
    """The amending units that made a rebuilt wording, each once ({act, unit, in_force_from}): one unit may
    give several changes (renumber a paragraph, then add one)."""
    seen: dict[tuple, dict] = {}
    for c in changes or []:
        seen.setdefault((c["act"], c["unit"], c.get("in_force_from")), c)
    return list(seen.values())


def timeline_kind(kind: str) -> str:
    return _TIMELINE_KINDS.get(kind, kind)


def answer_html(segments: list[tuple[str, tuple[str, str] | None]], as_of: dt.date | None) -> Markup:
    """An answer (its text in pieces: Asked.segments()) escaped, in paragraphs, each citation a link to its
    article."""
    paragraphs: list[list[Markup]] = [[]]
    for text, cited in segments:
        if cited is None:
            for i, block in enumerate(re.split(r"\n\s*\n", text)):
                if i:
                    paragraphs.append([])
                paragraphs[-1].append(escape(printed(block)))
        else:
            act, article = cited
            paragraphs[-1].append(Markup('<a class="cite" href="%s">%s</a>') % (article_url(act, article, as_of=as_of),
                                                                              printed(text)))
    out = []
    for parts in paragraphs:
        body = Markup("").join(parts)
        if not body.strip():
            continue
        out.append(Markup("<p>%s</p>") % Markup("<br>").join(Markup(body.strip()).split("\n")))
    return Markup("").join(out)


def date_pl(value: Any) -> str:
    if not value:
        return "(data nieznana)"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)
