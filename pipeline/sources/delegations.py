"""The delegations of a statute, read from its articles: every unit that authorises an organ to issue an act
("Minister właściwy do spraw zdrowia określi, w drodze rozporządzenia, …"), by the form Polish legislative
technique gives them (Zasady techniki prawodawczej §§ 65–70: the organ, the form of the act, its matter, the
guidelines for its content; "w porozumieniu z" and "po zasięgnięciu opinii" the organs that take part).

A delegation is named by its form: "w drodze rozporządzenia / zarządzenia / uchwały" (normative acts), or
"w drodze obwieszczenia / komunikatu" (an announcement: not normative). "w drodze decyzji / postanowienia"
decides a single case and is no delegation. "określi" obliges; "może określić" permits. A delegation inside
an amending instruction's quoted wording is one of the act it amends (``in_amended_act``: that act as the
instruction names it). No database.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources.parse.model import Article

READER = "delegations-1"  # changes when what is read from the same text changes

# The form of the act, as "w drodze …" names it: normative ones first.
FORMS = {"rozporządzenia": "rozporządzenie", "zarządzenia": "zarządzenie", "uchwały": "uchwała",
         "uchwał": "uchwała", "obwieszczenia": "obwieszczenie", "komunikatu": "komunikat"}
NORMATIVE = ("rozporządzenie", "zarządzenie", "uchwała")
_FORM = re.compile(r"\bw\s+drodze\s+(?P<form>" + "|".join(sorted(FORMS, key=len, reverse=True)) + r")\b")
# The verb that delegates, before "w drodze …" (a comma, or an organ's clause, may stand between): a finite
# verb, never a participle ("w przepisach wydanych w drodze rozporządzenia" names an act, it delegates none).
_VERB = re.compile(r"\b(?P<may>(?:może|mogą)\s+(?:w\s+\S+\s+)?)?(?P<verb>określ(?:i|a|ą|ają|ić)|ustal(?:i|a|ą|ają|ić)|"
                   r"wyd(?:a|aje|adzą|ają|ać)|nad(?:a|aje|ać)|ogł(?:asza|osi|aszają|osić)|wprowadz(?:i|a|ić)|"
                   r"przyjm(?:uje|ie|ują)|uchwal(?:a|i|ają|ić)|zarządz(?:a|i)|podaj(?:e|ą)|poda|tworzy|utworzy|"
                   r"powoł(?:a|uje)|znosi|zniesie|ustan(?:awia|owi)|"
                   # a catalogue of a body's tasks names them as nouns: "3) określanie, w drodze zarządzenia, …"
                   r"określanie|ustalanie|wydawanie|nadawanie|uchwalanie)\b")
# What a collegial body gives by resolution that is no act of law: an opinion, a position, a motion.
_NOT_AN_ACT = re.compile(r"\b(?:opini\w*|stanowisk\w*|wnios\w*|ocen\w*|rekomendacj\w*)\b", re.IGNORECASE)
# Internal rules a body adopts (Zasady techniki prawodawczej: a statute may leave its rules of procedure to the
# body): "Tryb pracy Komisji określa regulamin uchwalany przez Komisję", "Komitet … uchwala … regulamin".
_RULES = re.compile(r"\b(?P<what>regulamin\w*|statut\w*)\b(?:[^.;]{0,80}?)\b(?P<how>uchwalan\w*|przyjęt\w*|przyjmowan\w*|"
                    r"nadawan\w*|nadan\w*|ustalan\w*)\s+przez\s+(?P<who>[^.;,]+)")
_ADOPTS = re.compile(r"^(?P<who>[^.;:]*?)\s+(?:opracowuje\s+i\s+)?(?P<verb>uchwala|uchwali|przyjmuje|przyjmie|nadaje|nada)"
                     r"\b(?P<rest>[^.;]*?\b(?:regulamin|statut)\w*[^.;]*)")
# The organs that take part: up to the verb or the other clause (a list of organs holds commas).
_CLAUSE_END = r"(?=,?\s+(?:określ\w*|ustal\w*|wyda\w*|nada\w*|może|mogą|w\s+porozumieniu|po\s+zasięgnięciu|każdy\s+w\s+zakresie)\b)"
_AGREEMENT = re.compile(r",?\s*w\s+porozumieniu\s+z\s+(?P<who>.+?)" + _CLAUSE_END)
_CONSULTING = re.compile(r",?\s*po\s+zasięgnięciu\s+opinii\s+(?P<who>.+?)" + _CLAUSE_END)
# Who acts where the sentence names the act first: "… określa statut nadany przez Prezesa Rady Ministrów".
_BY = re.compile(r"\bprzez\s+(?P<who>[^,.;]+?)(?=\s+w\s+drodze\b|[,.;]|$)")
# A catalogue of a body's tasks: "Do zadań Przewodniczącego Komisji należy: … 3) określanie, w drodze …".
_TASKS_OF = re.compile(r"\bDo\s+(?:zadań\s+|kompetencji\s+|właściwości\s+)?(?P<who>[^:]+?)\s+należ\w*")
_GERUNDS = ("określanie", "ustalanie", "wydawanie", "nadawanie", "uchwalanie")
_GUIDANCE = re.compile(r",?\s*(?:uwzględniając|mając\s+na\s+(?:względzie|uwadze)|kierując\s+się|biorąc\s+pod\s+uwagę)\b")
_SENTENCE_END = re.compile(r"(?<!\b[a-zA-Z])(?<!\bnr)(?<!\bpoz)(?<!\bart)(?<!\bust)(?<!\bpkt)(?<!\blit)\.\s+(?=[A-ZĄĆĘŁŃÓŚŹŻ])")
_AMENDING = re.compile(r"^\s*W\s+(?P<act>(?:ustawie|kodeksie|dekrecie|rozporządzeniu|Kodeksie)\b.{0,300}?)"
                       r"(?:\s*\((?:Dz\.|M\.\s*P\.)|\s+wprowadza\s+się|\s+w\s+art\.|\s+art\.)", re.S)


@dataclass(frozen=True)
class Delegation:
    article: str  # the article it is in ("12"; superscripts as "151^1")
    unit: str  # the unit that delegates, as cited: "ust. 5", "§ 4", "" the article itself
    organ: str  # who issues the act, as the text names it
    form: str  # rozporządzenie | zarządzenie | uchwała | obwieszczenie | komunikat
    obligatory: bool  # "określi": must; "może określić": may
    normative: bool  # a normative act (not an announcement)
    matter: str  # what the act is to determine
    guidance: str | None  # the guidelines for its content ("uwzględniając …"), None: none given
    in_agreement_with: str | None  # "w porozumieniu z …"
    after_consulting: str | None  # "po zasięgnięciu opinii …"
    in_amended_act: str | None  # the act an amending instruction gives this wording (as named), None: this act's own
    text: str  # the delegating sentence as printed

    def to_dict(self) -> dict:
        return asdict(self)


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip(" ,;:")


def _blocks(article: Article) -> list[tuple[str, str, list[tuple[int, str]]]]:
    """(unit, text, [(offset, path)]) of the article's units that open with their own words: each ustęp or
    paragraph (or the article itself) with the lines of its points and letters joined to it (a delegation whose
    matter is a list, "określi, w drodze rozporządzenia: 1) …, 2) …", is one sentence), and where each line
    starts in that text with the unit it stands in."""
    lines = article.text.split("\n")
    found: dict[str, list[tuple[str, str]]] = {}
    for line, path in zip(lines, units.paths(lines, label_end(lines[0]) if lines else 0), strict=True):
        top = units.block_of(path)
        found.setdefault(top, []).append((line, path))
    blocks = []
    for top, held in found.items():
        offsets, at = [], 0
        for line, path in held:
            offsets.append((at, path))
            at += len(line) + 1
        blocks.append((top, "\n".join(line for line, _ in held), offsets))
    return blocks


def _path_at(offsets: list[tuple[int, str]], at: int) -> str:
    return next((path for start, path in reversed(offsets) if start <= at), "")


# Where a sentence may begin besides after a full stop: a quoted wording (an amending instruction's "„"), a
# list item after the one before it (";" or ":" at a line's end).
_STARTS = re.compile(r"„|[;:]\s*\n")


def _without_article_label(text: str) -> str:
    text = text.lstrip()
    return text[label_end(text):] if text.startswith("Art.") else text


def _sentence(text: str, at: int) -> tuple[int, int]:
    """The sentence of ``text`` around ``at``: from after the previous sentence's end (or a quote's opening,
    or the list item before it) to the next sentence's end."""
    start = 0
    for m in _SENTENCE_END.finditer(text, 0, at):
        start = m.end()
    for m in _STARTS.finditer(text, start, at):
        start = m.end()
    end = _SENTENCE_END.search(text, at)
    return start, end.start() + 1 if end else len(text)


def read(article: Article) -> list[Delegation]:
    """The delegations of one article, in its order."""
    if article.repealed:
        return []
    amending = _AMENDING.match(_without_article_label(article.text))
    in_amended = _clean(amending.group("act")) if amending else None
    found: list[Delegation] = []
    for _top, block, offsets in _blocks(article):
        for m in _FORM.finditer(block):
            unit = _path_at(offsets, m.start())
            start, end = _sentence(block, m.start())
            head, tail = block[start:m.start()], block[m.end():end]
            verb = _delegating_verb(head, tail)
            if verb is None:
                continue
            object_words = _CONSULTING.sub(" ", head) + tail[:40]
            if verb.group("verb").startswith("wyd") and _NOT_AN_ACT.search(object_words):
                continue  # "(Opinie …) Rada wydaje w drodze uchwały": a body's decision, no act of law
            organ = head[:verb.start()]
            agreement = _AGREEMENT.search(head)
            consulting = _CONSULTING.search(head)
            for clause in (agreement, consulting):
                if clause is not None and clause.start() < verb.start():
                    organ = organ.replace(clause.group(0), " ")
            organ = units.without_label(_without_article_label(organ))
            if verb.group("verb") in _GERUNDS and (tasks := _TASKS_OF.search(block[:m.start()])) is not None:
                organ = tasks.group("who")  # the body whose tasks the catalogue lists
            elif (by := _BY.search(block[start:m.start()][verb.end():])) is not None:
                organ = by.group("who")  # the act named first, then who gives it
            elif _PASSIVE.search(head) and (by := _BY.search(tail)) is not None:
                organ = by.group("who")  # "nadany, w drodze zarządzenia, przez …"
                tail = tail[:by.start()] + tail[by.end():]
            if verb.start() > len(head):  # "w drodze rozporządzenia, określi …": the matter follows the verb
                tail = tail.lstrip(" ,")[len(verb.group(0)):]
            guidance_at = _GUIDANCE.search(tail)
            matter = tail[:guidance_at.start()] if guidance_at else tail
            form = FORMS[m.group("form")]
            found.append(Delegation(
                article=article.number, unit=unit, organ=_clean(organ), form=form,
                obligatory=verb.group("may") is None and not re.search(r"\bmoże\s*,?\s*$|\bmogą\s*,?\s*$", head[:verb.start()]),
                normative=form in NORMATIVE, matter=_clean(matter).rstrip("."),
                guidance=_clean(tail[guidance_at.start():]) if guidance_at else None,
                in_agreement_with=_clean(agreement.group("who")) if agreement and agreement.start() < verb.start() else None,
                after_consulting=_clean(consulting.group("who")) if consulting and consulting.start() < verb.start()
                else None,
                in_amended_act=in_amended, text=_clean(block[start:end])))
        found += _rules_of_procedure(article, block, offsets, {d.unit for d in found}, in_amended)
    return found


def _rules_of_procedure(article: Article, block: str, offsets: list[tuple[int, str]], taken: set[str],
                        in_amended: str | None) -> list[Delegation]:
    """A body's own rules left to it by resolution ("… określa regulamin uchwalany przez Komisję", "Komitet
    opracowuje i uchwala … regulamin"): an act the statute delegates, in the form of a resolution (uchwała) or,
    given by another organ ("nadany przez ministra"), of that organ's act."""
    found = []
    for sentence_start, sentence_end in _sentences(block):
        sentence = block[sentence_start:sentence_end]
        unit = _path_at(offsets, sentence_start + len(sentence) - len(sentence.lstrip()))
        if unit in taken or _FORM.search(sentence):
            continue
        body = units.without_label(_without_article_label(sentence))
        if (m := _RULES.search(body)) is not None:
            organ, form = m.group("who"), "uchwała" if m.group("how").startswith(("uchwal", "przyj")) else "zarządzenie"
            matter = body[:m.start()] + m.group("what")
        elif (m := _ADOPTS.search(body)) is not None:
            organ, form, matter = m.group("who"), "uchwała" if m.group("verb").startswith(("uchwal", "przyj")) \
                else "zarządzenie", m.group("rest")
        else:
            continue
        found.append(Delegation(article=article.number, unit=unit, organ=_clean(organ), form=form, obligatory=True,
                                normative=True, matter=_clean(matter), guidance=None, in_agreement_with=None,
                                after_consulting=None, in_amended_act=in_amended, text=_clean(sentence)))
        taken.add(unit)
    return found


def _delegating_verb(head: str, tail: str) -> re.Match[str] | None:
    """The verb that delegates by "w drodze …": the one right before it ("określi, w drodze rozporządzenia"; only
    the organs' clauses between) or right after it ("w drodze rozporządzenia, określi"), finite and personal: "w
    wysokości ustalonej w przepisach wydanych w drodze rozporządzenia" names an act, "ustala się" binds no organ."""
    verbs = list(_VERB.finditer(head))
    if verbs:
        verb = verbs[-1]
        between = _CONSULTING.sub(" ", _AGREEMENT.sub(" ", head[verb.end():]))
        if len(between.strip(" ,\n")) == 0 and not re.match(r"\s+się\b", head[verb.end():]):
            return verb
    # A passive with its agent names the organ: "statut nadany, w drodze zarządzenia, przez Prezesa Rady Ministrów"
    # (without one, "w przepisach wydanych w drodze rozporządzenia" only names an act).
    if _PASSIVE.search(head) and _BY.search(tail):
        return _AT_END.search(head + " nada")
    after = _VERB.match(tail.lstrip(" ,"))
    if after is not None and not re.match(r"\s+się\b", tail.lstrip(" ,")[after.end():]):
        # The verb after the form: read as if it stood at the head's end (the organ is what precedes the form).
        return _AT_END.search(head + " " + after.group(0))
    return None


_PASSIVE = re.compile(r"\b(?:nadan|uchwalon|ustalon|wydan|określon|przyjęt)\w*\s*,?\s*\Z")
# A verb moved to the head's end (see _delegating_verb).
_AT_END = re.compile(_VERB.pattern + r"\Z")


def _sentences(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.start() + 1))
        start = m.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def read_all(articles: Iterable[Article]) -> list[Delegation]:
    """The delegations of a text's articles, in order (one wording of an article: the first)."""
    return [d for a in articles if a.wording in (0, 1) for d in read(a)]
