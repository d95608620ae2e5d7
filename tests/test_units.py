"""The one grammar of an article's units (pipeline.core.units), and every reader of units using it: the
chunker, the PDF parser, the definitions, the offline answer, the web page."""
from __future__ import annotations

import ast
import re

import pytest

from support.paths import REPO

from pipeline.core import units
from pipeline.core.numbering import label_end


@pytest.mark.parametrize(("line", "kind", "number", "cited"), [
    ("§ 2. Pracownik ma prawo", units.PARAGRAPH, "2", "§ 2"),
    ("§ 1^1. Zatrudnienie w warunkach", units.PARAGRAPH, "1^1", "§ 1^1"),
    ("2a. Przepis stosuje się", units.SECTION, "2a", "ust. 2a"),
    ("3) urlop macierzyński,", units.POINT, "3", "pkt 3"),
    ("5d) inne", units.POINT, "5d", "pkt 5d"),
    ("b) dzieci,", units.LETTER, "b", "lit. b"),
    ("za) Urzędzie Lotnictwa Cywilnego,", units.LETTER, "za", "lit. za"),
    ("– w przypadku", units.TIRET, "–", "tiret"),
])
def test_a_line_opens_a_unit(line, kind, number, cited):
    found = units.label(line)
    assert (found.kind, found.number, found.cited) == (kind, number, cited)
    assert line[found.end:] == line.split(" ", 2 if kind == units.PARAGRAPH else 1)[-1]


@pytest.mark.parametrize("line", ["Pracownik ma prawo", "Art. 5. Tekst", "§ 2 pkt 1 stosuje się", "2.", "2005 r. ustawa",
                                  "ABC) nie"])
def test_a_line_that_opens_no_unit(line):
    assert units.label(line) is None


def test_an_articles_first_line_opens_its_first_unit_after_its_label():
    line = "Art. 151^1. § 1. Praca w godzinach nadliczbowych"
    found = units.label(line, label_end(line))
    assert (found.kind, found.number, line[found.end:]) == (units.PARAGRAPH, "1", "Praca w godzinach nadliczbowych")
    assert units.label("Art. 5. Tekst.", label_end("Art. 5. Tekst.")) is None


def test_the_chunker_cuts_a_long_article_at_letters_of_two_letters_too():
    from pipeline.sources.chunk import _units
    from pipeline.sources.parse.model import Article

    text = "Art. 18. Organami są:\n" + "\n".join(f"{label}) Urzędzie numer {i} " + "w sprawach różnych " * 3 + ","
                                                for i, label in enumerate(("y", "z", "za", "zb", "zc")))
    assert [u.split(")")[0] for u in _units(Article("18", text).text)[1:]] == ["y", "z", "za", "zb", "zc"]


def test_the_offline_answer_keeps_a_paragraph_with_a_superscript_with_its_sentence():
    """ "§ 1^1." opens a unit whose sentence follows it; the old splitter cut the label off on its own."""
    from pipeline.answering.extractive import split_units

    found = split_units("Art. 22. § 1. Przez nawiązanie stosunku pracy pracownik zobowiązuje się do pracy.\n"
                        "§ 1^1. Zatrudnienie w tych warunkach jest zatrudnieniem na podstawie stosunku pracy.")
    assert found == ["§ 1. Przez nawiązanie stosunku pracy pracownik zobowiązuje się do pracy.",
                     "§ 1^1. Zatrudnienie w tych warunkach jest zatrudnieniem na podstawie stosunku pracy."]


def test_the_page_shows_units_with_anchors():
    from pipeline.interfaces.web.render import units as page_units

    shown = page_units("Art. 5. Tekst:\n§ 1. A\n§ 1^1. B\n2. C\n1) d\nza) e\n– f")
    assert [(u["kind"], u["anchor"]) for u in shown] == [
        ("text", None), ("par", "par-1"), ("par", "par-11"), ("ust", "ust-2"), ("pkt", None), ("lit", None),
        ("tir", None)]


# What a unit's label looks like written as a regex: "§" then a number ("§\s*\d"), a number then ")"
# ("\d+[a-z]*\)"), a letter then ")" ("[a-z]\)", "[a-z]{1,3}\)"). A module with such a pattern of its
# own re-states the grammar.
_OWN_GRAMMAR = re.compile(r"§\\s\*\\d|\\d\+\[a-z[^\]]*\][*+]?.{0,20}?\\\)|\[a-z\](?:\{1,[23]\})?\\\)")

# The copies the grammar replaced (web.py, sources/chunk.py, parse/pdf.py, definitions.py, extractive.py).
OLD_COPIES = [
    r"^(?:(?P<par>§\s*\d+\w*\.)|(?P<ust>\d+\w*\.)(?=\s)|(?P<pkt>\d+\w*\))|(?P<lit>[a-ząćęłńóśźż]{1,2}\))|(?P<tir>[–-]\s))",
    r"^(?:§\s*\d+[a-z^0-9]*\.|\d+[a-z^0-9]*\.|\d+[a-z^0-9]*\)|[a-z]\))\s",
    r"^(?:Art\.|§\s*\d|\d+[a-z]*(?:\^\S+)?\.\s|\d+[a-z]*(?:\^\S+)?\)\s|[a-z]{1,3}\)\s|[–-]\s)",
    r"^(\d+[a-z]*(?:\^\d+)?)\)\s+(.*)$",
    r"^[a-z]\)\s",
    r"\s*\n\s*(?=§\s*\d|\d+[a-z]*[.)]\s|[a-z]\)\s)",
]


def test_no_module_but_the_grammar_writes_a_units_label():
    holders = set()
    for path in (REPO / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _OWN_GRAMMAR.search(node.value):
                holders.add(str(path.relative_to(REPO)))
    assert holders <= {"pipeline/core/units.py"}


@pytest.mark.parametrize("pattern", OLD_COPIES)
def test_the_check_sees_each_copy_the_grammar_replaced(pattern):
    assert _OWN_GRAMMAR.search(pattern)
