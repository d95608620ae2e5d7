"""The Dziennik Ustaw PDF parser on the real files of the shared mirror."""
from __future__ import annotations

import io
import re

import pytest
from support.corpus import parsed_act
from support.paths import require_mirror as _mirror
from pypdf import PdfWriter

from pipeline.sources.parse.articles import TWO_PARAGRAPH_WORDINGS, TWO_WORDINGS
from pipeline.sources.parse.model import ParsedAct, ParseError
from pipeline.core.numbering import check_sequence
from pipeline.sources.parse.pdf import parse_pdf

# Every PDF of the mirror, with its page count and last article (read off the files).
PDF_ACTS = {
    "DU/2025/277": (97, "305"),
    "DU/2025/1480": (30, "72"),
    "DU/2025/644": (67, "198"),
    "DU/2025/869": (30, "88"),
    "DU/2025/1461": (204, "252"),
    "DU/2026/156": (61, "221"),
    "DU/2026/187": (43, "161"),
    "DU/2026/252": (102, "49"),
    "DU/2026/548": (7, "39"),
    "DU/2026/1003": (34, "127"),
}


_HEADER = re.compile(r"Dziennik Ustaw\s*–\s*\d+\s*–\s*Poz\.")




def _parsed(act: str) -> ParsedAct:
    # Parsed once per session: the corpus fixtures store the same parse of the Labour Code.
    parsed = parsed_act(act)
    assert parsed.source_format == "pdf"
    return parsed


def _article(act: str, number: str, wording: int | None = None):
    """The article (of two wordings, the first: the one in force at the text's date, unless ``wording``)."""
    found = [a for a in _parsed(act).articles if a.number == number
             and (a.wording == wording if wording is not None else a.wording in (0, 1))]
    assert len(found) == 1, f"{act}: art. {number} found {len(found)} times"
    return found[0]


@pytest.mark.parametrize("act", sorted(PDF_ACTS))
def test_article_sequence_is_complete_and_ordered(act: str) -> None:
    parsed = _parsed(act)
    pages, last = PDF_ACTS[act]
    numbers = [a.number for a in parsed.articles if a.wording != 2]  # a second wording is the same article
    assert parsed.source_format == "pdf" and parsed.pages == pages
    assert numbers[0] == "1" and numbers[-1] == last
    problems = check_sequence(numbers)
    assert not problems, sorted(problems)
    for article in parsed.articles:
        assert article.text.startswith(f"Art. {article.number}."), article.text[:40]
        assert not _HEADER.search(article.text), f"running header in art. {article.number}"
        assert not re.search(r"\w-\n", article.text), f"unjoined hyphenation in art. {article.number}"


def test_kodeks_pracy_superscript_articles_are_recovered() -> None:
    numbers = {a.number for a in _parsed("DU/2025/277").articles}
    assert {"22^1", "94^3", "151^1", "151^8", "167^2", "18^3e"} <= numbers
    # the text layer reads them as "943", "1511", …; (art. 221 exists in its own right)
    assert not {"943", "1511", "1518", "1672", "183e"} & numbers
    assert _article("DU/2025/277", "151^1").text.startswith("Art. 151^1. § 1. Za pracę w godzinach nadliczbowych")
    # superscripts inside the text: paragraph numbers and references
    assert "§ 2^1. Przepis § 2 stosuje się także" in _article("DU/2025/277", "291").text
    assert "art. 22^2 § 6" in "\n".join(a.text for a in _parsed("DU/2025/277").articles)


def test_kodeks_pracy_texts() -> None:
    assert "2) 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat." in _article("DU/2025/277", "154").text
    assert "nie więcej niż 4 dni urlopu w każdym roku kalendarzowym" in _article("DU/2025/277", "167^2").text
    # a word hyphenated across a line end is joined
    assert "niekorzystnego traktowania pracownika" in _article("DU/2025/277", "18^3e").text
    for article in _parsed("DU/2025/277").articles:
        assert "Dziennik Ustaw" not in article.text and "Poz. 277" not in article.text
        assert "W tym brzmieniu obowiązuje" not in article.text  # footnotes are dropped


def test_kodeks_pracy_headings_and_title() -> None:
    parsed = _parsed("DU/2025/277")
    assert parsed.title == "USTAWA z dnia 26 czerwca 1974 r. Kodeks pracy"
    assert _article("DU/2025/277", "151^1").heading_path == [
        "DZIAŁ SZÓSTY Czas pracy",
        "Rozdział V Praca w godzinach nadliczbowych",
    ]
    assert _article("DU/2025/277", "1").heading_path == ["DZIAŁ PIERWSZY Przepisy ogólne", "Rozdział I Przepisy wstępne"]


def test_consolidated_text_yields_the_annexed_act_only() -> None:
    articles = _parsed("DU/2025/277").articles
    # the announcement's own items and its list of amendments ("„Art. 32. Ustawa wchodzi…”") are not articles
    assert [a.number for a in articles].count("1") == 1
    assert articles[0].text == "Art. 1. Kodeks pracy określa prawa i obowiązki pracowników i pracodawców."


def test_repealed_articles() -> None:
    assert _article("DU/2025/277", "27").repealed and _article("DU/2025/277", "27").text == "Art. 27. (uchylony)"
    # a repealed chapter "(zawierający art. 19–21 – uchylony)" still accounts for its articles
    for number in ("19", "20", "21", "67^1", "67^17", "284", "290^1"):
        assert _article("DU/2025/277", number).repealed, number
    assert not _article("DU/2025/277", "22").repealed
    # "Art. 266–280." with only a footnote (the division no longer includes them): no text in force
    for number in ("266", "273", "280"):
        assert _article("DU/2025/277", number).repealed and _article("DU/2025/277", number).text == f"Art. {number}."
    assert not _article("DU/2025/277", "265").repealed and not _article("DU/2025/277", "281").repealed
    # "Art. 61–85. (pominięte)": one article per number, omitted but not repealed
    omitted = [a for a in _parsed("DU/2025/869").articles if a.text.endswith("(pominięte)")]
    assert [a.number for a in omitted] == [str(n) for n in range(61, 86)]


def test_two_wordings_of_a_paragraph_make_two_dated_wordings_of_the_article() -> None:
    """Art. 177 (protection in pregnancy) prints § 1, § 1^1 and § 4 twice: now, and as an amendment
    (uzupełniający urlop macierzyński) has it later. A reader must not take both for one rule: the article
    becomes two wordings, each with the footnotes that date it."""
    first, later = _article("DU/2025/277", "177", 1), _article("DU/2025/277", "177", 2)
    assert first.text.startswith("Art. 177. § 1. W okresie ciąży") and "uzupełniającego" not in first.text
    assert later.text.startswith("Art. 177. § 1. W okresie ciąży") and "uzupełniającego urlopu macierzyńskiego" in later.text
    for wording in (first, later):  # the paragraphs printed once are in both
        assert "§ 3. Umowa o pracę zawarta na czas określony" in wording.text and wording.text.count("§ 1.") == 1
    assert {f.number for f in first.footnotes} == {11, 13} and {f.number for f in later.footnotes} == {12, 14}
    assert all("obowiązuje do wejścia w życie zmiany" in f.text for f in first.footnotes)
    assert _article("DU/2025/277", "176").wording == 0


def test_an_article_printed_twice_makes_two_wordings() -> None:
    """Art. 184 of the Labour Code is printed twice: in force at the text's date, and as amended later
    (footnotes 17 and 18 of the PDF). Two wordings of one article, each with its footnote."""
    now, later = _article("DU/2025/277", "184", 1), _article("DU/2025/277", "184", 2)
    assert now.text.startswith("Art. 184. ") and later.text.startswith("Art. 184. ")
    assert "uzupełniającego urlopu macierzyńskiego" not in now.text
    assert "uzupełniającego urlopu macierzyńskiego" in later.text
    assert [f.number for f in now.footnotes] == [17] and [f.number for f in later.footnotes] == [18]
    warning = "art. 184: two wordings (now, and after an amendment): kept as two wordings"
    assert warning in _parsed("DU/2025/277").warnings


def test_amending_act_keeps_quoted_articles_inside_the_enclosing_article() -> None:
    articles = _parsed("DU/2026/252").articles
    assert [a.number for a in articles] == [str(n) for n in range(1, 50)]
    first = articles[0].text
    assert first.startswith("Art. 1. W ustawie z dnia 5 lipca 2018 r. o krajowym systemie cyberbezpieczeństwa")
    assert "„Art. 5a." in first and "\nArt. 7b." in first  # added articles quoted in the amendment


def test_new_act_headings_and_real_hyphens() -> None:
    assert _article("DU/2026/548", "3").heading_path == [
        "Rozdział 2 Ponowne wykorzystywanie danych",
        "Oddział 1 Pojedynczy punkt informacyjny",
    ]
    # a real hyphen at a line end is printed twice ("pielęgnacyjno-" / "-opiekuńczym"): one is kept
    text = _article("DU/2025/1461", "18").text
    assert "pielęgnacyjno-opiekuńczym" in text and "pielęgnacyjno--" not in text


def _pdf_bytes(writer: PdfWriter) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_bad_input_raises_parse_error() -> None:
    with pytest.raises(ParseError, match="not a PDF"):
        parse_pdf(b"<html>not a pdf</html>")
    real = (_mirror() / "acts" / "DU/2026/548" / "text.pdf").read_bytes()
    with pytest.raises(ParseError):
        parse_pdf(real[:2000])  # truncated
    blank = PdfWriter()
    blank.add_blank_page(595, 842)
    with pytest.raises(ParseError, match="no articles"):
        parse_pdf(_pdf_bytes(blank))
    blank.encrypt("secret")
    with pytest.raises(ParseError, match="encrypted"):
        parse_pdf(_pdf_bytes(blank))
