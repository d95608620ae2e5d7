"""The ELI text.html parser on the real files of the shared mirror."""
from __future__ import annotations

import json
import time
from functools import cache

import lxml.html
import pytest
from support.paths import require_mirror as _mirror

from pipeline.sources.parse.html import parse_html
from pipeline.sources.parse.model import ParsedAct, ParseError
from pipeline.core.numbering import check_sequence

# Every act of the mirror with an HTML text, and its article count (checked by hand on the files).
HTML_ACTS = {
    "DU/2024/581": 98,
    "DU/2024/917": 74,
    "DU/2019/1026": 64,
    "DU/2019/1781": 180,  # 131 units; "Art. 109-157. (pominięte)" stands for 49 articles
    "DU/2024/1513": 35,  # art. 15 is buried in art. 14's text; 4 articles printed in two versions
    "DU/2024/1564": 173,
    "DU/2024/1221": 450,
    "DU/2024/1222": 124,
    "DU/2019/730": 173,
    "DU/2019/914": 4,
    "DU/1964/93": 1088,
    "DU/1997/553": 363,
    "DU/1960/168": 196,
    "DU/2000/1037": 633,
    "DU/1997/939": 194,
    "DU/2018/1000": 176,
    "DU/2018/1560": 94,
    "DU/2002/1204": 30,
    "DU/2004/1800": 235,
}





def _html(act: str) -> bytes:
    return (_mirror() / "acts" / act / "text.html").read_bytes()


@cache
def _parsed(act: str) -> ParsedAct:
    return parse_html(_html(act))


def _article(act: str, number: str, wording: int | None = None):
    """The article (of two wordings, the first: the one in force at the text's date, unless ``wording``)."""
    found = [a for a in _parsed(act).articles if a.number == number
             and (a.wording == wording if wording is not None else a.wording in (0, 1))]
    assert len(found) == 1, f"{act}: art. {number} found {len(found)} times"
    return found[0]


def test_the_list_covers_every_html_act_in_the_mirror() -> None:
    acts = set()
    for meta in (_mirror() / "acts").glob("*/*/*/meta.json"):
        html = meta.parent / "text.html"
        if json.loads(meta.read_text())["textHTML"] and html.is_file() and html.stat().st_size:
            acts.add(str(meta.parent.relative_to(_mirror() / "acts")))
    assert acts == set(HTML_ACTS)


@pytest.mark.parametrize("act", sorted(HTML_ACTS))
def test_article_sequence_is_clean(act: str) -> None:
    parsed = _parsed(act)
    assert parsed.source_format == "html"
    articles = [a for a in parsed.articles if a.wording != 2]  # a second wording is the same article
    assert len(articles) == HTML_ACTS[act]
    assert check_sequence([a.number for a in articles]) == []
    for a in parsed.articles:
        assert a.text.startswith(f"Art. {a.number}."), a.text[:40]


def test_consolidated_text_takes_the_articles_of_the_annex() -> None:
    act = "DU/2024/581"
    parsed = _parsed(act)
    assert 90 <= len(parsed.articles) <= 110
    assert parsed.title is not None and parsed.title.startswith(
        "Obwieszczenie Marszałka Sejmu Rzeczypospolitej Polskiej z dnia 2 kwietnia 2024 r. w sprawie ogłoszenia"
    )
    assert parsed.articles[0].text.startswith("Art. 1. Ustawa określa:\n1) prawa pacjenta;")
    art21 = _article(act, "21")
    assert art21.text.startswith("Art. 21. 1. Na życzenie pacjenta przy udzielaniu świadczeń zdrowotnych może być obecna osoba bliska.")
    assert "odmówić obecności osoby bliskiej" in art21.text
    assert art21.heading_path == ["Rozdział 6 Prawo do poszanowania intymności i godności pacjenta"]
    assert _article(act, "28").text.startswith("Art. 28. 1. Za udostępnienie dokumentacji medycznej")
    assert _article(act, "31").text.startswith("Art. 31. 1. Pacjent lub jego przedstawiciel ustawowy mogą wnieść sprzeciw")
    assert _article(act, "67q").heading_path == [
        "Rozdział 13b Kompensacja szkód wynikających ze zdarzeń medycznych",
        "Oddział 1 Świadczenie kompensacyjne",
    ]
    everything = "\n".join(a.text for a in parsed.articles)
    # the announcement's own text and the articles it quotes ("art. 6-9 ... które stanowią") are not the act
    assert "ogłasza się w załączniku" not in everything
    assert "Tworzy się Fundusz Kompensacyjny Zdarzeń Medycznych" not in everything
    assert not parsed.warnings


def test_superscript_numbers_are_canonical() -> None:
    # the only top-level superscript article in the mirror: "Art. 3a<sup>1</sup>."
    assert _article("DU/2024/1513", "3a^1").text.startswith("Art. 3a^1. Świadczenie usług drogą elektroniczną w zakresie gier")
    # superscripts in running and quoted text, with the space the source leaves out ("22<SUP>1</SUP>otrzymuje")
    assert "Przepisu art. 87^1 tej ustawy nie stosuje się." in _article("DU/2019/914", "1").text
    art4 = _article("DU/2019/730", "4").text
    assert "1) art. 22^1 otrzymuje brzmienie:\n„Art. 22^1. § 1. Pracodawca żąda" in art4
    assert "art. 22^1a i art. 22^1b" in art4


def test_superscript_with_letter_suffix() -> None:
    # no real file has a "22<sup>1</sup>c" heading, so this one small document does
    doc = (
        '<html><body><section id="part_1"><div class="unit unit_arti" id="arti_22_1c">'
        "<h3><B>Art.&nbsp;22<sup>1</sup>c.</B></h3><div class=\"unit-inner\"><div>Zob. art.&nbsp;87<SUP>1</SUP>.</div>"
        "</div></div></section></body></html>"
    )
    (art,) = parse_html(doc.encode()).articles
    assert (art.number, art.text) == ("22^1c", "Art. 22^1c. Zob. art. 87^1.")


def test_amending_act_keeps_quoted_articles_inside_its_own() -> None:
    parsed = _parsed("DU/2019/914")
    assert [a.number for a in parsed.articles] == ["1", "2", "3", "4"]
    assert parsed.title == (
        "Ustawa z dnia 26 kwietnia 2019 r. o zmianie ustawy o Krajowej Radzie Sądownictwa "
        "oraz ustawy - Prawo o ustroju sądów administracyjnych"
    )
    art1 = parsed.articles[0].text
    assert art1.startswith(
        "Art. 1. W ustawie z dnia 12 maja 2011 r. o Krajowej Radzie Sądownictwa (Dz. U. z 2019 r. poz. 84, 609 i 730) "
        "wprowadza się następujące zmiany:\n1) w art. 43 w ust. 2 skreśla się wyrazy „z zastrzeżeniem art. 44 ust. 1b”;\n2) w art. 44:\n"
    )
    assert "c) ust. 2 i 3 otrzymują brzmienie:\n„2. Odwołanie wnosi się za pośrednictwem Przewodniczącego" in art1
    assert art1.endswith("d) uchyla się ust. 4.")
    assert parsed.articles[3].text == "Art. 4. Ustawa wchodzi w życie po upływie 7 dni od dnia ogłoszenia."
    # a large amending act: quoted units (whole chapters with their "Art. 19a.") stay inside art. 2
    art2 = _article("DU/2019/730", "2").text
    assert "„Rozdział III Przetwarzanie danych osobowych przez izby morskie\nArt. 19a. Izby morskie przekazują" in art2
    assert "19a" not in [a.number for a in _parsed("DU/2019/730").articles]


@pytest.mark.parametrize("act", sorted(HTML_ACTS))
def test_no_footnotes_or_entities_in_text(act: str) -> None:
    root = lxml.html.document_fromstring(_html(act), parser=lxml.html.HTMLParser(encoding="utf-8"))
    notes = {" ".join(n.text_content().split()) for n in root.xpath("//div[@class='gloss']/div[2]")}
    notes = {n for n in notes if len(n) > 30}  # short notes ("Zamieszczone w obwieszczeniu.") could be real text
    text = " ".join(" ".join(a.text for a in _parsed(act).articles).split())
    assert [n for n in notes if n in text] == []
    for bad in ("\xa0", "&nbsp;", "tooltip"):
        assert bad not in text


def test_footnote_markers_are_dropped() -> None:
    # "Art. 3b<a class=gloss-link><sup>6)</sup>…</a>." and "(uchylony)<a …><sup>9)</sup>…</a>"
    assert "^" not in _article("DU/2024/1513", "3b").text
    assert _article("DU/2024/1513", "16").text == "Art. 16. (uchylony)"
    assert "Zmiany tekstu jednolitego" not in _article("DU/2019/914", "1").text


def test_repealed_and_omitted_articles() -> None:
    art16 = _article("DU/2024/1513", "16")
    assert art16.repealed
    # "Art. 20-22. (uchylone)" is three repealed articles
    for n in ("20", "21", "22"):
        art = _article("DU/2024/1513", n)
        assert art.repealed and art.text == f"Art. {n}. (uchylone)"
    assert sum(a.repealed for a in _parsed("DU/2024/1564").articles) == 10
    # "Art. 109-157. (pominięte)": amending provisions left out of the consolidated text, not repealed
    art120 = _article("DU/2019/1781", "120")
    assert art120.text == "Art. 120. (pominięte)" and not art120.repealed
    assert not _article("DU/2024/581", "21").repealed


def test_heading_path_outermost_first() -> None:
    assert _article("DU/1964/93", "1").heading_path == ["Księga pierwsza", "Część ogólna", "Tytuł I Przepisy wstępne"]
    assert _article("DU/2024/1221", "1").heading_path == ["Dział I Przepisy ogólne", "Rozdział 1 Zakres ustawy"]
    assert _article("DU/2019/914", "1").heading_path == []


def test_source_defects_are_repaired() -> None:
    # Civil Code 1964: the heading over art. 536 misprints "Art. 538."; its bookmark says _a536
    art536 = _article("DU/1964/93", "536")
    assert art536.text.startswith("Art. 536. § 1. Cenę można określić przez wskazanie podstaw do jej ustalenia.")
    assert _article("DU/1964/93", "538").text.startswith("Art. 538. Jeżeli w miejscu i czasie zawarcia umowy sprzedaży")
    # "<B>Art. 15. </B>" sits inside art. 14 ust. 4 of the e-services act
    assert _article("DU/2024/1513", "14").text.endswith("w rozumieniu przepisów o ochronie konkurencji i konsumentów.")
    assert _article("DU/2024/1513", "15").text.startswith("Art. 15. Podmiot, który świadczy usługi określone w art. 12-14")
    # two wordings of art. 10 printed one after the other: in force until the change, and repealed by it
    art10, repeal = _article("DU/2024/1513", "10", 1), _article("DU/2024/1513", "10", 2)
    assert art10.text.startswith("Art. 10. 1. Zakazane jest przesyłanie niezamówionej informacji handlowej")
    assert "(uchylony)" not in art10.text and not art10.repealed
    assert repeal.text == "Art. 10. (uchylony)" and repeal.repealed
    assert [f.text for f in art10.footnotes] == ["Obowiązuje do wejścia w życie zmiany, o której mowa w odnośniku 9."]
    assert [f.number for f in repeal.footnotes] == [9]
    # a footnote with <div>s inside the <h1> makes libxml2 nest the whole body in the title
    parsed = _parsed("DU/2004/1800")
    assert parsed.title == "Ustawa z dnia 16 lipca 2004 r. Prawo telekomunikacyjne"
    assert parsed.articles[0].heading_path == ["Dział I Postanowienia ogólne", "Rozdział 1 Zakres ustawy"]
    assert parsed.articles[0].text.startswith("Art. 1. 1. Ustawa określa:\n1) zasady wykonywania i kontroli działalności")


def test_lists_keep_their_dash_on_the_line() -> None:
    text = _article("DU/1997/939", "105").text
    assert "\n- sprawą karną lub karną skarbową przeciwko osobie fizycznej będącej stroną umowy zawartej z bankiem," in text


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty HTML document"),
        (b"  \n\t", "empty HTML document"),
        (b"Ustawa z dnia 1 stycznia 2020 r.", "not an HTML document"),
        (b"\x00\x01\x02\xff<html>", "not an HTML document"),
        (b"<html><body><h1>Obwieszczenie</h1><p>Art. 1. Nic.</p></body></html>", "no articles found"),
    ],
)
def test_bad_input_raises(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_html(data)


def test_pdf_bytes_raise() -> None:
    with pytest.raises(ParseError, match="not an HTML document"):
        parse_html((_mirror() / "acts/DU/2026/548/text.pdf").read_bytes())


def test_largest_file_parses_quickly() -> None:
    data = _html("DU/2024/1221")  # 3.8 MB
    start = time.perf_counter()
    parse_html(data)
    assert time.perf_counter() - start < 5  # about 0.2 s measured; generous for a busy machine
