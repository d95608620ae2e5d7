"""`pipeline check`: the citations of any Polish text found and checked against the stored acts, on the
mirror's real texts (Kodeks pracy, patients' rights, e-services, the two psychologist acts, an amending act)."""
from __future__ import annotations

import datetime as dt
import json

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import store_mirror_act
from support.paths import CORPUS_ACTS, require_mirror

from pipeline import Service
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
        ("art. 8–10 k. p.", "8", "", "DU/1974/141", False), ("art. 8–10 k. p.", "9", "", "DU/1974/141", False),
        ("art. 8–10 k. p.", "10", "", "DU/1974/141", False),
        ("art. 1 ustawy (Dz. U. z 2024 r. poz. 1513)", "1", "", "DU/2024/1513", False),
        ("Art. 5 k.p.k.", "5", "", "DU/1997/555", False), ("art. 3 KC", "3", "", "DU/1964/93", False),
    ]  # "Art. 5 reguluje …" names no act: no citation of this kind
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
        assert (early["status"], early["why"]) == ("not_found", "no stored text of DU/2026/187 has art. 400 "
                                                                "(its last article is art. 161)")
        # A superscript pasted as a plain digit: the article meant.
        pasted = law.check("art. 183a k.p.", as_of=day).citations[0]
        assert pasted["status"] == "not_found" and "(did you mean art. 18^3a?)" in pasted["why"]
        eu = law.check("art. 6 ust. 1 lit. e RODO", as_of=day).citations[0]
        assert eu["status"] == "act_not_stored" and eu["ingest"] is None and "Dziennik Ustaw" in eu["why"]
