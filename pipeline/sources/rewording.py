"""An article's wording on a date, rebuilt from its official text and the changes in force by then: the
changes pipeline.sources.instructions reads, as pipeline.storage.amendments lists them for a text and a day
(the records of `show`'s ``changes``: docs/results.md).

A change that sets, adds, repeals or renumbers a whole unit (one with a label on a line of its own) is
applied where its unit is found; an edit of words or of a sentence only where the wording it edits is known
to be current and its words are found once. Anything else is undetermined, with why: its unit stays as the
official text has it. A rebuilt wording is never an official text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources.instructions import (ADD, ADD_SENTENCE, DELETE_WORDS, INSERT_WORDS, ORDINALS_READ, RENUMBER,
                                           REPEAL, REPLACE_WORDS, SET_WORDING)

# The units a change may set, add or repeal whole: those with a label of their own on a line.
_LINE_UNITS = ("§", "ust.", "pkt", "lit.")


@dataclass(frozen=True)
class Rebuilt:
    """An article's wording with the changes applied that set, add, repeal or renumber whole units; ``applied``
    and ``undetermined`` (with why) index the changes given. Never an official text."""

    text: str
    applied: tuple[int, ...]
    undetermined: tuple[tuple[int, str], ...]


def _block(paths: list[str], unit: str) -> list[int]:
    return [i for i, p in enumerate(paths) if units.within(p, unit)]


def _whole_units(unit: str) -> bool:
    steps = unit.split(" ")
    return len(steps) % 2 == 0 and all(steps[i] in _LINE_UNITS for i in range(0, len(steps), 2))


# --- edits of words and sentences: applied only to a wording known to be current --------------------------

EDITS = (REPLACE_WORDS, DELETE_WORDS, INSERT_WORDS, ADD_SENTENCE)
_UNCHECKED = "an edit of words: whether the wording it edits is the current one was not checked"
_SENTENCE = re.compile(r"(?:^| )zdanie (\S+)$")
# "w odpowiednim przypadku", "w różnej liczbie": the forms the words take in the text are not written out.
_INFLECTED = re.compile(r"przypadk|\bliczb", re.IGNORECASE)
_MARK = (".", ";", ",", ":")
# A dot after these may stand before a capital letter inside one sentence ("Dz. U.", "z późn. zm.").
_ABBREVIATION = re.compile(r"(?:\b(?:Dz|U|r|poz|nr|Nr|późn|zm|tj|ww|np|pkt|ust|art|lit|godz|ok|im|św|m\.in|[A-ZĄĆĘŁŃÓŚŹŻ])"
                           r"|\d)\.$")


def _sentences(line: str) -> list[str] | None:
    """A unit's one line split into its sentences; None where a split is not certain (a dot after an
    abbreviation or a number before a capital letter: "Dz. U. Nr", "art. 5. Przepis")."""
    parts = re.split(r"(?<=\.)\s+(?=[A-ZĄĆĘŁŃÓŚŹŻ])", line.strip())
    if any(_ABBREVIATION.search(p) for p in parts[:-1]) or not line.strip().endswith("."):
        return None
    return parts


def _pattern(words: str) -> re.Pattern:
    """The words as written (any dash for a dash: texts print "-" and "–" alike), any run of spaces between
    them, not inside a longer word."""
    body = r"[^\S\n]+".join("".join("[-–—]" if ch in "-–—" else re.escape(ch) for ch in w) for w in words.split())
    return re.compile((r"(?<!\w)" if words[:1].isalnum() else "") + body + (r"(?!\w)" if words[-1:].isalnum() else ""))


def edits_words(c: dict) -> bool:
    """An edit of words or of a sentence: applied only where the wording it edits is known to be current."""
    return c["operation"] in EDITS or (c["operation"] == SET_WORDING and bool(_SENTENCE.search(c["target_unit"])))


def overlap(a: str, b: str) -> bool:
    return not a or not b or units.within(a, b) or units.within(b, a)


def _join_at(left: str, right: str) -> str:
    """Two pieces of a line joined where words were taken out: one space, none before punctuation."""
    left, right = left.rstrip(" "), right.lstrip(" ")
    return left + right if not left or not right or right[0] in ",.;:)" or left[-1] == "(" else f"{left} {right}"


def _edit(lines: list[str], start: int, paths: list[str], c: dict) -> list[str] | str:
    """``lines`` with the edit ``c`` made (replace, delete or insert words; add, delete or set a sentence), or
    why it is not determined: the words not found, or found more than once, in the unit's current wording."""
    unit, op = c["target_unit"], c["operation"]
    sentence = _SENTENCE.search(unit)
    owner = unit[:sentence.start()].strip() if sentence else unit
    for tail in ("wprowadzenie do wyliczenia", "część wspólna"):
        owner = owner.removesuffix(tail).strip()
    if owner and not _whole_units(owner):
        return f"{owner} is not a unit with a line of its own"
    block = _block(paths, owner) if owner else list(range(len(lines)))
    if not block:
        return f"the text has no {owner}"
    where = owner or "the article"
    if sentence and op in (DELETE_WORDS, ADD_SENTENCE, SET_WORDING) and not c.get("old_words"):
        which = sentence.group(1)
        if which not in ORDINALS_READ or len(block) > 1:
            return f"{unit}: a sentence of a unit with points is not rebuilt"
        opened = units.label(lines[block[0]], start if block[0] == 0 else 0)
        at = opened.end if opened else start if block[0] == 0 else 0
        line = lines[block[0]]
        found = _sentences(line[at:])
        n = ORDINALS_READ.index(which)
        if found is None:
            return f"the sentences of {where} are not told apart by rule"
        if op == ADD_SENTENCE and n != len(found):
            return f"{where} has {len(found)} sentence(s): no place for its zdanie {which}"
        if op != ADD_SENTENCE and n >= len(found):
            return f"{where} has no zdanie {which}"
        wording = " ".join((c.get("text") or "").split())
        if op != DELETE_WORDS and not wording:
            return "no wording was read for it"
        found = found[:n] + ([wording] if op != DELETE_WORDS else []) + found[n + (op != ADD_SENTENCE):]
        lines = list(lines)
        lines[block[0]] = line[:at] + " ".join(found)
        return lines
    old, new = c.get("old_words"), c.get("new_words") or ""
    if not old or op not in (REPLACE_WORDS, DELETE_WORDS, INSERT_WORDS) or (op != DELETE_WORDS and not new):
        return "an edit this cannot apply by rule"
    if _INFLECTED.search(c.get("instruction") or ""):
        return "the words change in their grammatical forms, which the instruction does not write out"
    lines = list(lines)
    if op == REPLACE_WORDS and old in _MARK and new in _MARK:  # "kropkę zastępuje się średnikiem": the unit's end
        last = block[-1]
        if not lines[last].rstrip().endswith(old):
            return f"{where} does not end with „{old}”"
        lines[last] = lines[last].rstrip()[:-1] + new
        return lines
    pattern = _pattern(old)
    hits = [(i, m) for i in block for m in pattern.finditer(lines[i], start if i == 0 else 0)]
    if len(hits) != 1:
        return (f"the words „{old}” are not in {where}" if not hits else
                f"the words „{old}” are in {where} {len(hits)} times")
    (i, m), line = hits[0], lines[hits[0][0]]
    if op == REPLACE_WORDS:
        lines[i] = line[:m.start()] + new + line[m.end():]
    elif op == DELETE_WORDS:
        lines[i] = _join_at(line[:m.start()], line[m.end():])
    else:  # insert_words: after the words found
        lines[i] = line[:m.end()] + ("" if new[0] in ",.;:)" else " ") + new + line[m.end():]
    return lines


def rebuild(text: str, changes: list[dict]) -> Rebuilt:
    """``text`` (an article's official wording, a unit a line) with ``changes`` applied in order (each {operation,
    target_unit, after, text, new_label, old_words, new_words, not_current}: a record of `show`'s changes,
    whose ``after`` and ``text`` are a Change's after_unit and wording): a whole unit set, added after
    another or at the end of its parent, repealed, or the article's text made its ust. 1 / § 1; and an edit of
    words or of a sentence where the wording it edits is known to be current (``not_current`` None, no earlier
    change to its unit left undetermined) and its words are found once in the unit (:func:`_edit`). Any other
    change (a unit not found, a unit already there, words not found or found twice) is undetermined, with why:
    the text it would change is not known to be the one the change was written for."""
    applied: list[int] = []
    undetermined: list[tuple[int, str]] = []
    # "po pkt 4 dodaje się pkt 4a–4c": each unit of one instruction follows the one added before it.
    added: dict[tuple, str] = {}
    for i, c in enumerate(changes):
        lines = text.split("\n")
        start = label_end(lines[0])
        paths = units.paths(lines, start)
        op, unit, wording = c["operation"], c["target_unit"], c.get("text") or ""
        if op in (SET_WORDING, ADD) and not wording:
            undetermined.append((i, "no wording was read for it"))
            continue
        intro = unit == "wprowadzenie do wyliczenia" or unit.endswith(" wprowadzenie do wyliczenia")
        if op == SET_WORDING and intro:  # the words of a unit before its points: its first line, after its label
            owner = unit.removesuffix("wprowadzenie do wyliczenia").strip()
            block = _block(paths, owner) if owner else [0]
            opened = units.label(lines[block[0]], start if block[0] == 0 else 0) if block and owner else None
            if not block or (owner and opened is None) or len(block) < 2:
                undetermined.append((i, f"the text has no {unit}"))
                continue
            head = lines[block[0]][:opened.end] if opened else lines[0][:start]
            lines[block[0]] = head + wording
            text = "\n".join(lines)
            applied.append(i)
            continue
        if edits_words(c):
            if c.get("not_current", _UNCHECKED):  # the words may not be those the instruction was written for
                undetermined.append((i, c.get("not_current") or _UNCHECKED))
                continue
            if earlier := next((changes[j]["target_unit"] for j, _ in undetermined
                                if overlap(changes[j]["target_unit"], unit)), None):
                undetermined.append((i, f"an earlier change to {earlier or 'the article'} was not applied: the "
                                        "wording it edits is not known"))
                continue
            if (edited := _edit(lines, start, paths, c)) is None or isinstance(edited, str):
                undetermined.append((i, edited or "an edit this cannot apply by rule"))
                continue
            text = "\n".join(edited)
            applied.append(i)
            continue
        if unit and not _whole_units(unit):
            undetermined.append((i, f"{unit} is not a unit with a line of its own: only the words are changed"))
            continue
        if op == SET_WORDING and not unit:
            text = wording if wording.startswith("Art.") else lines[0][:start] + wording
        elif op == SET_WORDING:
            block = _block(paths, unit)
            if not block:
                undetermined.append((i, f"the text has no {unit}"))
                continue
            new = wording.split("\n")
            if block[0] == 0:  # the article's first unit sits on its label's line: "Art. 5. 1. …"
                new[0] = lines[0][:start] + new[0]
            text = "\n".join(lines[:block[0]] + new + lines[block[-1] + 1:])
        elif op == ADD and unit:
            if _block(paths, unit):
                undetermined.append((i, f"the text already has {unit}"))
                continue
            parent = " ".join(unit.split(" ")[:-2])
            group = (c.get("act"), c.get("unit"), parent, c.get("after"))
            anchor = added.get(group) or (" ".join(filter(None, (parent, c.get("after")))) if c.get("after") else parent)
            added[group] = unit
            block = _block(paths, anchor) if anchor else list(range(len(lines)))
            if not block:
                undetermined.append((i, f"the text has no {anchor}"))
                continue
            text = "\n".join(lines[:block[-1] + 1] + wording.split("\n") + lines[block[-1] + 1:])
        elif op == REPEAL and unit:
            block = _block(paths, unit)
            if not block:
                undetermined.append((i, f"the text has no {unit}"))
                continue
            first = lines[block[0]]
            at = start if block[0] == 0 else 0
            opened = units.label(first, at)
            if opened is None:
                undetermined.append((i, f"{unit} has no label of its own to keep"))
                continue
            text = "\n".join(lines[:block[0]] + [first[:opened.end].rstrip() + " (uchylony)"] + lines[block[-1] + 1:])
        elif op == REPEAL:
            text = lines[0][:start] + "(uchylony)"
        elif op == RENUMBER and not unit and all(p == "" for p in paths) and c.get("new_label"):
            # "dotychczasową treść oznacza się jako ust. 1 / § 1": the article's text becomes its first unit.
            word, _, number = c["new_label"].partition(" ")
            if word not in ("§", "ust.") or not number:
                undetermined.append((i, f"{c['new_label']} is not a label this can write"))
                continue
            label = f"§ {number}." if word == "§" else f"{number}."
            text = lines[0][:start] + label + " " + "\n".join(lines)[start:]
        else:
            undetermined.append((i, "an edit of words, a sentence or a part of the act: its effect on the wording "
                                    "is not rebuilt"))
            continue
        applied.append(i)
    return Rebuilt(text, tuple(applied), tuple(undetermined))
