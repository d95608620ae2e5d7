"""`pipeline check`: the citations of any Polish text found and checked against the stored acts, on the
mirror's real texts (Kodeks pracy, patients' rights, e-services, the two psychologist acts, an amending act)."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import store_mirror_act
from support.paths import CORPUS_ACTS, require_mirror

from pipeline import Service
from pipeline.core.errors import UsageError
from pipeline.core.numbering import expand_range
from pipeline.sources import citations as finder_module
from pipeline.sources import references as references_module
from pipeline.sources.citations import find

D = dt.date
KP = "DU/2025/277"


def test_citations_are_found_in_the_ways_polish_writing_names_acts():
    text = ("Zgodnie z art. 154 § 1 pkt 2 k.p. oraz art. 30 Kodeksu pracy pracownikowi przysługuje urlop. Na podstawie "
            "art. 5 ust. 2 ustawy z dnia 6 listopada 2008 r. o prawach pacjenta i Rzeczniku Praw Pacjenta (Dz. U. z "
            "2024 r. poz. 581) pacjent ma prawo. Ustawa o prawach pacjenta w art. 9 ust. 2 stanowi inaczej. Zob. "
            "art. 22 DU/2025/277 i art. 8–10 k. p. oraz art. 1 ustawy (Dz. U. z 2024 r. poz. 1513). Art. 5 reguluje "
            "coś innego. Art. 5 k.p.k. i art. 3 KC.")
    got = [(c.quote, c.article, c.unit, c.act, c.from_context) for c in find(text)]
    assert got == [
        ("art. 154 § 1 pkt 2 k.p.", "154", "§ 1 pkt 2", "DU/1974/141", False),
        ("art. 30 Kodeksu pracy", "30", "", "DU/1974/141", False),
        ("art. 5 ust. 2 ustawy z dnia 6 listopada 2008 r. o prawach pacjenta i Rzeczniku Praw Pacjenta", "5", "ust. 2",
         "DU/2024/581", False),
        ("art. 9 ust. 2", "9", "ust. 2", None, True),  # the act named earlier in the sentence
        ("art. 22 DU/2025/277", "22", "", "DU/2025/277", False),
        # a range: its first article and its last, the articles between being the act's own (the check's to list)
        ("art. 8–10 k. p.", "8", "", "DU/1974/141", False), ("art. 8–10 k. p.", "10", "", "DU/1974/141", False),
        ("art. 1 ustawy (Dz. U. z 2024 r. poz. 1513)", "1", "", "DU/2024/1513", False),
        ("Art. 5 k.p.k.", "5", "", "DU/1997/555", False), ("art. 3 KC", "3", "", "DU/1964/93", False),
    ]  # "Art. 5 reguluje …" names no act: no citation of this kind
    assert [c.after for c in find(text)][5:7] == [None, "8"]
    assert find("Art. 5. Pracownik ma prawo, o którym mowa w art. 6 ust. 2.") == []


def test_acts_named_by_title_alone_by_its_genitive_and_by_this_act():
    text = ("Zgodnie z art. 4 ust. 1 ustawy – Prawo przedsiębiorców oraz art. 451 Prawa komunikacji elektronicznej, "
            "a także art. 2 Konstytucji RP i art. 6 ust. 1 lit. e RODO. Ustawa o prawach pacjenta przewiduje to w "
            "art. 9 ust. 2. Na podstawie art. 14 ust. 1 tej ustawy pacjent ma prawo.")
    got = [(c.article, c.unit, c.act_words, c.act, c.name, c.foreign is not None) for c in find(text)]
    assert got == [
        ("4", "ust. 1", "ustawy – Prawo przedsiębiorców oraz", None, "Prawo przedsiębiorców oraz", False),
        ("451", "", "Prawa komunikacji elektronicznej", None, "Prawo komunikacji elektronicznej", False),
        ("2", "", "Konstytucji RP", "DU/1997/483", "Konstytucja", False),
        ("6", "ust. 1 lit. e", "RODO", None, "RODO", True),  # EU law: never stored here
        ("9", "ust. 2", "Ustawa o prawach pacjenta", None, "o prawach pacjenta", False),
        ("14", "ust. 1", "tej ustawy (Ustawa o prawach pacjenta)", None, "o prawach pacjenta", False),  # the last named
    ]
    # "tej ustawy" after a citation: that citation's act, also from an earlier sentence.
    assert [(c.article, c.act) for c in find("Stosuje się art. 5 k.p. Zob. też art. 6 tego kodeksu.")] == [
        ("5", "DU/1974/141"), ("6", "DU/1974/141")]
    # A statute's own text: the act of an "art. …" list is that list's, not the topic of the next clause; a clause
    # ends at ";"; an article's label in a quoted statute is not a citation.
    statute = ("1) odpisu, o którym mowa w art. 97 ust. 3i ustawy z dnia 27 sierpnia 2004 r. o świadczeniach opieki "
               "zdrowotnej finansowanych ze środków publicznych; 2) opłat, o których mowa w art. 67t ust. 4. "
               "Ustawa o prawach pacjenta stosuje się; art. 5 ust. 1 nie. (Dz. U. z 2025 r. poz. 621). Art. 12a. "
               "Przepisów ustawy o prawach pacjenta nie stosuje się.")
    assert [(c.article, c.unit) for c in find(statute)] == [("97", "ust. 3i")]


class _Scanned:
    """A compiled pattern (the real one) that adds up how much text it is asked to scan, the regex engine's
    work: a search or a finditer from ``pos`` to ``endpos``; a match anchored at ``pos`` counts one."""

    def __init__(self, pattern: re.Pattern, tally: list[int]) -> None:
        self.real, self.tally = pattern, tally

    def _span(self, string: str, pos: int = 0, endpos: int | None = None) -> None:
        self.tally[0] += min(len(string), len(string) if endpos is None else endpos) - pos

    def search(self, string, pos=0, endpos=None):
        self._span(string, pos, endpos)
        return self.real.search(string, pos, len(string) if endpos is None else endpos)

    def finditer(self, string, pos=0, endpos=None):
        self._span(string, pos, endpos)
        return self.real.finditer(string, pos, len(string) if endpos is None else endpos)

    def match(self, string, pos=0, endpos=None):
        self.tally[0] += 1
        return self.real.match(string, pos, len(string) if endpos is None else endpos)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _finder_work(monkeypatch, text: str) -> int:
    """How much text the finder's patterns scan to find the citations of ``text``."""
    tally = [0]
    with monkeypatch.context() as m:
        for module in (finder_module, references_module):
            for name, value in list(vars(module).items()):
                if isinstance(value, re.Pattern):
                    m.setattr(module, name, _Scanned(value, tally))
        find(text)
    return tally[0]


def test_the_finder_reads_a_text_in_linear_work(monkeypatch):
    """Issue 49: each citation naming no act made the finder read the text again from its start (100 000
    characters of "art. 1 ": 259 s of CPU). Ten times the text is about ten times the work, not a hundred."""
    mixed = ("Ustawa o prawach pacjenta w art. 9 ust. 2 stanowi inaczej; zob. art. 5 tej ustawy. Zgodnie z art. 154 "
             "§ 1 pkt 2 k.p. oraz art. 8–10 k.p. urlop przysługuje. Art. 5 reguluje coś innego.\n")
    for unit in ("art. 1 ", mixed):
        small, large = ((unit * (100_000 // len(unit) + 1))[:n] for n in (10_000, 100_000))
        assert _finder_work(monkeypatch, large) <= 12 * _finder_work(monkeypatch, small), unit


def test_a_range_is_never_listed_past_its_bound_and_past_a_limit_citations_are_counted():
    """A range of numbers is bounded before it is listed (MAX_RANGE; units MAX_UNIT_RANGE: "pkt 1–100000" is
    its last point alone); the finder lists at most the limit it is given and counts the rest."""
    from pipeline.core.limits import MAX_RANGE

    assert expand_range("1", "100000000") == [] and len(expand_range("1", str(MAX_RANGE))) == MAX_RANGE
    assert [c.unit for c in find("art. 5 pkt 1–100000 k.p.")] == ["pkt 1", "pkt 100000"]
    listed, more = finder_module.found_in("art. 5 pkt 1–50" + ", 1–50" * 2000 + " k.p.", 1000)
    assert len(listed) == 1000 and more == 50 * 2001 - 1000  # each "1–50": points 1 to 50
    listed, more = finder_module.found_in("art. 1–100000000 k.p. " * 3, 2)
    assert [(c.article, c.after) for c in listed] == [("1", None), ("100000000", "1")]
    assert more == 2 * 100_000_000  # two more ranges: each its first article, then the numbers after it


@pytest.fixture(scope="module")
def stored(server_url, _corpus_text) -> str:
    require_mirror()
    from support.database import create_database

    # Kodeks pracy and the patient rights act, stored first: a copy of the session's stored corpus (which
    # holds just those two, stored in that order) instead of storing them again (seconds of server CPU).
    assert CORPUS_ACTS == (KP, "DU/2024/581")
    url = create_database(server_url, "citations", copy_of=_corpus_text)
    with psycopg.connect(url) as c:
        for act in ("DU/2024/1513", "DU/2019/1026", "DU/2026/187", "DU/2019/914", "DU/2002/1204"):
            store_mirror_act(c, act)
        c.commit()
    return url


LETTER = ("Szanowni Państwo, zgodnie z art. 154 § 1 pkt 2 k.p. urlop wynosi 26 dni, a art. 350 k.p. i art. 177 § 7 "
          "k.p. nic tu nie zmieniają. Art. 10 ustawy (Dz. U. z 2024 r. poz. 1513) zakazuje spamu. Zgodnie z art. 17 "
          "ustawy o zawodzie psychologa psycholog jest niezależny. Art. 5 k.p.k. stosuje się odpowiednio. "
          "Art. 1 ustawy (Dz. U. z 2019 r. poz. 914) zmienia inne ustawy.")


def test_each_citation_gets_one_status_with_what_it_was_checked_against(stored):
    with Service(stored, pool_size=1, warm=False) as law:
        checked = law.check(LETTER, as_of=D(2026, 12, 5))
        got = [(c["quote"], c["status"]) for c in checked.citations]
        assert got == [("art. 154 § 1 pkt 2 k.p.", "ok"), ("art. 350 k.p.", "not_found"),
                       ("art. 177 § 7 k.p.", "not_found"), ("Art. 10 ustawy (Dz. U. z 2024 r. poz. 1513)", "not_in_force"),
                       ("art. 17 ustawy o zawodzie psychologa", "ambiguous"), ("Art. 5 k.p.k.", "act_not_stored"),
                       ("Art. 1 ustawy (Dz. U. z 2019 r. poz. 914)", "undetermined")]
        ok, last, unit, repealed, ambiguous, unknown, undetermined = checked.citations
        assert (ok["act"], ok["text"], ok["version_no"], ok["checked_as_of"]) == ("DU/1974/141", KP, 1, D(2026, 12, 5))
        assert len(ok["sha256"]) == 64 and ok["why"] is None
        assert "last article is art. 305" in last["why"] and "§ 4^1" in unit["why"]
        assert "repealed" in repealed["why"]
        assert ambiguous["candidates"] == ["DU/2019/1026", "DU/2026/187"]
        assert unknown["ingest"] == "pipeline ingest --act DU/1997/555 --latest"
        assert checked.to_dict()["ok"] is False and checked.counts()["not_found"] == 2
        # The same unit's wording, checked again: the same hash.
        assert law.check("art. 154 § 1 pkt 2 k.p.").citations[0]["sha256"] == ok["sha256"]


def test_what_is_not_yet_in_force_on_the_date_is_said_with_its_date(stored):
    with Service(stored, pool_size=1, warm=False) as law:
        early = law.check("Art. 17 ust. 1 ustawy z dnia 23 stycznia 2026 r. o zawodzie psychologa oraz samorządzie "
                          "zawodowym psychologów.", as_of=D(2026, 4, 1)).citations
        assert [(c["status"], c["text"]) for c in early] == [("not_in_force", "DU/2026/187")]
        assert "in force from 2028-05-19" in early[0]["why"]
        unit = law.check("Art. 17 ust. 3 ustawy z dnia 23 stycznia 2026 r. o zawodzie psychologa oraz samorządzie "
                         "zawodowym psychologów.", as_of=D(2028, 6, 1)).citations
        assert [c["status"] for c in unit] == ["not_in_force"] and unit[0]["why"] == "ust. 3 wchodzi w życie 2031-05-19"
        # Kodeks pracy art. 184 on a day before its second wording: checked against the first.
        before = law.check("art. 184 k.p.", as_of=D(2025, 3, 1)).citations[0]
        assert before["status"] == "ok" and before["in_force_until"] == D(2025, 3, 19)


def test_cli_exit_status_says_whether_every_citation_is_ok(stored, tmp_path):
    env = {"DATABASE_URL": stored}
    good = tmp_path / "pismo.txt"
    good.write_text("Zgodnie z art. 154 § 1 pkt 2 k.p. urlop wynosi 26 dni.", encoding="utf-8")
    out = run_cli("check", str(good), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok") and "DU/2025/277 v1" in out.stdout
    bad = run_cli("check", "-", "--json", env=env, input="Art. 350 k.p. i art. 154 k.p.")
    report = json.loads(bad.stdout)
    assert bad.returncode == 1 and report["counts"] == {"not_found": 1, "ok": 1} and report["ok"] is False
    none = run_cli("check", "-", env=env, input="Ten tekst nie cytuje żadnego przepisu.")
    assert none.returncode == 1 and "no citations found" in none.stderr
    missing = run_cli("check", str(tmp_path / "nie-ma.txt"), env=env)
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "No such file" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_an_act_is_found_by_its_title_and_date_as_lawyers_cite_it(stored):
    with Service(stored, pool_size=1, warm=False) as law:
        day = D(2026, 12, 5)
        # An older consolidated text's Dz. U. position, with the act's title and date: the stored text of that act.
        older = law.check("art. 5 ustawy z dnia 6 listopada 2008 r. o prawach pacjenta i Rzeczniku Praw Pacjenta "
                          "(Dz. U. z 2023 r. poz. 1545)", as_of=day).citations[0]
        assert (older["status"], older["text"]) == ("ok", "DU/2024/581")
        assert older["note"].startswith("DU/2023/1545 (the position cited) is not stored")
        # The act and its consolidated text stored apart (the records do not link them): the text in force.
        apart = law.check("art. 3 ustawy o świadczeniu usług drogą elektroniczną", as_of=day).citations[0]
        assert (apart["status"], apart["text"]) == ("ok", "DU/2024/1513") and "stored apart" in apart["note"]
        # A title named without its date runs on into the sentence: the stored name it begins with.
        run_on = law.check("Art. 3 ustawy – Kodeks pracy stosuje się odpowiednio.", as_of=day).citations[0]
        assert (run_on["status"], run_on["act"]) == ("ok", "DU/1974/141")
        # The act's date as cited tells the act: no psychologists' act of 24 January 2026 is stored.
        wrong_date = law.check("art. 17 ustawy z dnia 24 stycznia 2026 r. o zawodzie psychologa oraz samorządzie "
                               "zawodowym psychologów", as_of=day).citations[0]
        assert wrong_date["status"] == "act_not_stored"
        # A unit of a repealed article: repealed, whichever unit; no such article in any text: not found, also
        # before the act's own date.
        gone = law.check("Art. 10 ust. 1 ustawy (Dz. U. z 2024 r. poz. 1513)", as_of=day).citations[0]
        assert gone["status"] == "not_in_force" and "repealed" in gone["why"]
        early = law.check("art. 400 ustawy z dnia 23 stycznia 2026 r. o zawodzie psychologa oraz samorządzie "
                          "zawodowym psychologów", as_of=D(2026, 2, 1)).citations[0]
        assert (early["status"], early["why"]) == ("not_found", "DU/2026/187 has no art. 400 "
                                                                "(its last article is art. 161)")
        # A superscript pasted as a plain digit: the article meant.
        pasted = law.check("art. 183a k.p.", as_of=day).citations[0]
        assert pasted["status"] == "not_found" and "(did you mean art. 18^3a?)" in pasted["why"]
        eu = law.check("art. 6 ust. 1 lit. e RODO", as_of=day).citations[0]
        assert eu["status"] == "act_not_stored" and eu["ingest"] is None and "Dziennik Ustaw" in eu["why"]


def test_a_huge_range_spans_the_act_s_own_articles_and_no_more(stored):
    """Issue 49: "art. 1–20000 k.p." was 20 000 citations (35.7 s, a 7.7 MB page), "art. 1–100000000 k.p." a
    MemoryError. A range spans the articles its act's stored text has (inserted ones too) and its end,
    where the act lacks it; an act not stored, its numbers up to MAX_RANGE, past that its ends alone."""
    day = D(2026, 12, 5)
    with psycopg.connect(stored) as c:
        own = [r[0] for r in c.execute("SELECT DISTINCT ON (article) article, ordinal FROM articles JOIN act_versions "
                                       "USING (version_id) WHERE eli = %s ORDER BY article, ordinal", (KP,))]
    with Service(stored, pool_size=1, warm=False) as law:
        for text in ("art. 1–20000 k.p.", "art. 1–100000000 k.p."):
            checked = law.check(text, as_of=day)
            articles = [c["article"] for c in checked.citations]
            assert len(articles) == len(own) + 1 and set(articles[:-1]) == set(own) and "151^1" in articles
            last = checked.citations[-1]
            assert last["article"] == text[7:-5] and last["status"] == "not_found" and "art. 305" in last["why"]
            assert checked.not_checked == 0 and checked.warnings == []
        small = law.check("art. 8–10 k.p.", as_of=day).citations
        assert [(c["quote"], c["article"], c["status"]) for c in small] == [
            ("art. 8–10 k.p.", "8", "ok"), ("art. 8–10 k.p.", "9", "ok"), ("art. 8–10 k.p.", "9^1", "ok"),
            ("art. 8–10 k.p.", "10", "ok")]  # the article inserted between is in the range
        near = law.check("art. 1–30 ustawy o ochronie zwierząt", as_of=day)
        assert [c["article"] for c in near.citations] == [str(n) for n in range(1, 31)] and near.not_checked == 0
        far = law.check("art. 1–100000000 ustawy o ochronie zwierząt", as_of=day)
        assert [(c["article"], c["status"]) for c in far.citations] == [("1", "act_not_stored"),
                                                                          ("100000000", "act_not_stored")]
        assert far.not_checked == 100_000_000 - 2 and far.ok is False
        # A list of hundreds of numbers: its words are not repeated whole in each of its records.
        numbers = "art. " + ", ".join(map(str, range(1, 400))) + " k.p."
        listed = law.check(numbers, as_of=day).citations
        quotes = {c["quote"] for c in listed}
        assert len(listed) == 399 and len(quotes) == 1 and len(quotes.pop()) < 320
        assert listed[0]["quote"].startswith("art. 1, 2, 3,") and listed[0]["quote"].endswith("398, 399 k.p.")
        assert (listed[0]["start"], listed[0]["end"]) == (0, len(numbers))


# Pasted letters and briefs (issue 47): citations in parentheses, act names and "art. …" broken at a line end, words
# hyphenated at a line end ("postępo-⏎wania"), a CRLF text, lists whose line breaks are the list's. Written from how
# letters are written before the finder was run on them; each with what a reader of the letter takes it to cite,
# checked on 2026-12-05 ("Kodeks postępowania administracyjnego" is not stored: act_not_stored, by its base act).
LC, PAT, KPA = "DU/1974/141", "DU/2024/581", "DU/1960/168"  # the stored patients' act is its own base act
WRAPPED = [
    ("paren-title",
     "Pacjent ma prawo wglądu w dokumentację medyczną (art. 23 ust. 1 ustawy z dnia 6 listopada 2008 r. o prawach "
     "pacjenta i Rzeczniku Praw Pacjenta) i może żądać jej udostępnienia.",
     [("23", "ust. 1", PAT, "ok")]),
    ("paren-title-journal",
     "Szpital naruszył prawa pacjenta (art. 4 ust. 1 ustawy z dnia 6 listopada 2008 r. o prawach pacjenta i Rzeczniku\n"
     "Praw Pacjenta, Dz. U. z 2024 r. poz. 581), co uzasadnia zadośćuczynienie.",
     [("4", "ust. 1", PAT, "ok")]),
    ("kpa-dash-wrapped",
     "Skarga zostanie rozpatrzona w trybie art. 227 ustawy z dnia 14 czerwca 1960 r. – Kodeks\n"
     "postępowania administracyjnego, o czym zawiadamiam.",
     [("227", "", KPA, "act_not_stored")]),
    ("kpa-hyphenated",
     "Wniosek wszczyna postępowanie z chwilą doręczenia organowi (art. 61 § 3 Kodeksu postępo-\n"
     "wania administracyjnego).",
     [("61", "§ 3", KPA, "act_not_stored")]),
    ("kpa-paren-dash",
     "Termin na załatwienie sprawy upłynął (art. 35 § 3 ustawy z dnia 14 czerwca 1960 r. – Kodeks postępowania "
     "administracyjnego), dlatego wnoszę ponaglenie.",
     [("35", "§ 3", KPA, "act_not_stored")]),
    ("art-number-wrapped",
     "Szanowny Panie,\nzgodnie z art.\n154 § 1 pkt 2 k.p. przysługuje Panu 26 dni urlopu wypoczynkowego.",
     [("154", "§ 1 pkt 2", LC, "ok")]),
    ("kp-name-wrapped",
     "Pracodawca rozwiązał umowę bez wypowiedzenia na podstawie art. 52 § 1 pkt 1 Kodeksu\n"
     "pracy, choć nie wskazał przyczyny.",
     [("52", "§ 1 pkt 1", LC, "ok")]),
    ("patients-hyphenated",
     "Lekarz odmówił informacji, do której pacjent ma prawo na mocy art. 9 ust. 2 ustawy o prawach pa-\n"
     "cjenta i Rzeczniku Praw Pacjenta.",
     [("9", "ust. 2", PAT, "ok")]),
    ("paren-superscript",
     "Nie wypłacono mi dodatku za pracę w godzinach nadliczbowych (art. 151¹ § 1 k.p.), mimo wezwania.",
     [("151^1", "§ 1", LC, "ok")]),
    ("paren-two",
     "Wypowiedzenie było nieuzasadnione (zob. art. 45 § 1 k.p. oraz art. 30 § 4 k.p.), a więc przysługuje mi "
     "odszkodowanie.",
     [("45", "§ 1", LC, "ok"), ("30", "§ 4", LC, "ok")]),
    ("date-wrapped",
     "Na podstawie art. 26 ust. 1 ustawy z dnia 6 listopada\n2008 r. o prawach pacjenta i Rzeczniku Praw\n"
     "Pacjenta wnoszę o udostępnienie kopii dokumentacji.",
     [("26", "ust. 1", PAT, "ok")]),
    ("paren-by-name",
     "Przepis ten (art. 13 ustawy o prawach pacjenta i Rzeczniku Praw Pacjenta) chroni tajemnicę informacji.",
     [("13", "", PAT, "ok")]),
    ("paren-topic",
     "Ustawa o prawach pacjenta i Rzeczniku Praw Pacjenta gwarantuje prawo do informacji (art. 9 ust. 1).",
     [("9", "ust. 1", PAT, "ok")]),
    ("eservices-wrapped",
     "Przypominam, że art. 10 ust. 1 ustawy o świadczeniu usług drogą\nelektroniczną został uchylony.",
     [("10", "ust. 1", "DU/2024/1513", "not_in_force")]),
    ("psychologists-hyphenated",
     "Obowiązek ten wynika z art. 17 ust. 1 ustawy z dnia 23 stycznia 2026 r. o zawodzie psychologa oraz samo-\n"
     "rządzie zawodowym psychologów.",
     [("17", "ust. 1", "DU/2026/187", "not_in_force")]),
    ("range-wrapped",
     "Zasady ogólne prawa pracy wyrażają art. 8–\n10 k.p.",
     [("8", "", LC, "ok"), ("9", "", LC, "ok"), ("9^1", "", LC, "ok"), ("10", "", LC, "ok")]),
    ("journal-wrapped",
     "Usługodawca musi określić regulamin (art. 8 ust. 1 pkt 1 ustawy z dnia 18 lipca 2002 r. o świadczeniu usług\n"
     "drogą elektroniczną (Dz. U. z 2024 r.\npoz. 1513)).",
     [("8", "ust. 1 pkt 1", "DU/2024/1513", "ok")]),
    ("paren-code-name",
     "Wynagrodzenie wypłaca się co najmniej raz w miesiącu (art. 85 § 1 Kodeksu pracy).",
     [("85", "§ 1", LC, "ok")]),
    ("this-act-wrapped",
     "Zgody udziela pacjent (art. 16 ustawy o prawach\npacjenta i Rzeczniku Praw Pacjenta), a szczegóły określa "
     "art. 17 ust. 1 tej\nustawy.",
     [("16", "", PAT, "ok"), ("17", "ust. 1", PAT, "ok")]),
    ("crlf",
     "Domagam się zadośćuczynienia zgodnie z art. 4 ust. 1 ustawy o prawach pacjenta i\r\n"
     "Rzeczniku Praw Pacjenta.\r\n",
     [("4", "ust. 1", PAT, "ok")]),
    ("title-hyphenated-capital-line",
     "Podstawą jest art. 6 ust. 1 ustawy z dnia 6 listopada 2008 r. o prawach pacjenta i Rzeczni-\n"
     "ku Praw Pacjenta.",
     [("6", "ust. 1", PAT, "ok")]),
    ("numbered-list",
     "Podstawa prawna:\n1) art. 30 § 1 pkt 2 k.p.,\n2) art. 36 § 1 pkt 1 k.p.",
     [("30", "§ 1 pkt 2", LC, "ok"), ("36", "§ 1 pkt 1", LC, "ok")]),
    ("dash-list",
     "Wskazuję na:\n– art. 9 ust. 2 ustawy o prawach pacjenta,\n– art. 13 tej ustawy.",
     [("9", "ust. 2", PAT, "ok"), ("13", "", PAT, "ok")]),
    ("nested-paren-journal",
     "Pacjent może wyrazić sprzeciw wobec opinii lekarza (art. 31 ust. 1 ustawy o prawach pacjenta i Rzeczniku Praw\n"
     "Pacjenta (Dz. U. z 2024 r. poz. 581)).",
     [("31", "ust. 1", PAT, "ok")]),
    ("paren-dash-wrapped-kp",
     "Pracownik ma prawo do urlopu (art. 152 § 1 ustawy z dnia 26 czerwca 1974 r. –\nKodeks pracy).",
     [("152", "§ 1", LC, "ok")]),
]


def _words_at(text: str, start: int, end: int) -> str:
    """What a reader reads at text[start:end]: its words, a word hyphenated at a line end whole again, a range
    wrapped after its dash one."""
    span = re.sub(r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[a-ząćęłńóśźż])", "", text[start:end])
    return " ".join(re.sub(r"(?<=\d)([-–])[ \t]*\r?\n[ \t]*(?=\d)", r"\1", span).split())


@pytest.mark.parametrize("text,expected", [pytest.param(t, e, id=i) for i, t, e in WRAPPED])
def test_a_pasted_letter_is_read_through_parentheses_line_ends_and_hyphenation(stored, text, expected):
    day = D(2026, 12, 5)
    with Service(stored, pool_size=1, warm=False) as law:
        checked = law.check(text, as_of=day).citations
        assert [(c["article"], c["unit"], c["act"], c["status"]) for c in checked] == expected
        for c in checked:
            # start and end are the citation's place in the text as pasted; the quote is what is read there
            assert _words_at(text, c["start"], c["end"]) == c["quote"]
            assert c["quote"].lower().startswith("art") and not c["quote"].endswith("-")
            assert not re.match(r"[\w-]", text[c["end"]:c["end"] + 1])  # no word is cut
            if c["text"] is not None and c["status"] in ("ok", "not_in_force") and not c["unit"]:
                shown = law.show(c["text"], c["article"], as_of=day)  # check reads what show shows
                assert hashlib.sha256(shown["text"].encode("utf-8")).hexdigest() == c["sha256"]
                assert shown["in_force"] is (c["status"] == "ok")


def test_a_name_run_on_into_the_sentence_ends_where_it_ends_in_the_pasted_text(stored):
    """The quote is cut where the stored name it matched ends; its end was counted in the quote's characters, one
    short for each blank the quote collapses ("art. 17  ustawy": the page marked "… zawodzie psychologa" less its
    last letter)."""
    text = "Zgodnie z art. 17  ustawy o zawodzie\npsychologa psycholog jest niezależny."
    with Service(stored, pool_size=1, warm=False) as law:
        c = law.check(text, as_of=D(2026, 12, 5)).citations[0]
    assert (c["status"], c["quote"]) == ("ambiguous", "art. 17 ustawy o zawodzie psychologa")
    assert text[c["start"]:c["end"]] == "art. 17  ustawy o zawodzie\npsychologa"


def test_past_the_cap_citations_are_counted_and_said_not_checked(stored):
    """A check checks at most MAX_CHECK_CITATIONS; the rest are counted in the record (``not_checked``, a line
    in ``warnings``), the check is not ok, and the CLI says so (--json: the record itself)."""
    from pipeline.core.limits import MAX_CHECK_CITATIONS, MAX_RANGE

    text = "art. 154 k.p. " * (MAX_CHECK_CITATIONS + 3)
    report = run_cli("check", "-", "--json", env={"DATABASE_URL": stored}, input=text)
    record = json.loads(report.stdout)
    assert len(record["citations"]) == MAX_CHECK_CITATIONS and {c["status"] for c in record["citations"]} == {"ok"}
    assert record["not_checked"] == 3 and record["ok"] is False and report.returncode == 1
    assert record["warnings"] == [f"3 more citation(s) not checked: a check reads at most {MAX_CHECK_CITATIONS} "
                                  f"(a range of an act whose text is not stored, at most {MAX_RANGE} of its numbers); "
                                  "check the rest of the text apart"]
    plain = run_cli("check", "-", env={"DATABASE_URL": stored}, input=text)
    assert plain.returncode == 1 and "3 more citation(s) not checked" in plain.stderr


def test_a_text_with_control_characters_is_refused(stored):
    with Service(stored, pool_size=1, warm=False) as law:
        with pytest.raises(UsageError, match="the text contains a NUL character"):
            law.check("art. 154 k.p.\x00")
        with pytest.raises(UsageError, match=r"a control character \(U\+001B\)"):
            law.check("art. 154 k.p.\x1b[2J")
        assert law.check("art. 154 k.p.\r\n\tart. 30 k.p.\f").ok  # line breaks, tabs, a page break are text
