"""Amending instructions read by rule (revision 0011), on the mirror's real amending acts: every operation, the
target act by its Dz. U. position, a code's name or its title and date, and the changes told after a stored
text of the act they amend (never applied to it)."""
from __future__ import annotations

import datetime as dt
import json
import re

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import parsed_act, store_mirror_act
from support.paths import require_mirror

from pipeline import Service
from pipeline.core.errors import ArticleNotFound
from pipeline.sources.instructions import read, read_all
from pipeline.sources.rewording import rebuild

D = dt.date


def _article(act: str, number: str):
    require_mirror()
    return next(a for a in parsed_act(act).articles if a.number == number)


def _short(changes) -> list[tuple]:
    return [(c.amending_unit, c.target_article, c.target_unit, c.operation) for c in changes]


def test_an_instruction_list_is_read_leaf_by_leaf_and_wordings_are_never_instructions():
    changes = read(_article("DU/2019/914", "1"))
    assert {c.target_act for c in changes} == {"DU/2019/84"}  # the first Dz. U. position of the target
    assert _short(changes) == [
        ("pkt 1", "43", "ust. 2", "delete_words"),
        ("pkt 2 lit. a", "44", "ust. 1 zdanie drugie", "set_wording"),
        ("pkt 2 lit. b", "44", "ust. 1b", "repeal"),
        ("pkt 2 lit. c", "44", "ust. 2", "set_wording"),  # "ust. 2 i 3 otrzymują brzmienie": one wording each
        ("pkt 2 lit. c", "44", "ust. 3", "set_wording"),
        ("pkt 2 lit. d", "44", "ust. 4", "repeal"),
    ]
    assert changes[0].old_words == "z zastrzeżeniem art. 44 ust. 1b"
    assert changes[3].wording.startswith("2. Odwołanie wnosi się")
    assert changes[4].wording.startswith("3. Do postępowania")
    # The wording of art. 2 cites "art. 44 ust. 1 zdanie drugie ustawy …": a wording, not an instruction.
    single = read(_article("DU/2019/914", "2"))
    assert _short(single) == [("", "49", "zdanie pierwsze", "set_wording")]
    assert single[0].target_name == "Prawo o ustroju sądów administracyjnych" and single[0].target_date == D(2002, 7, 25)
    assert read(_article("DU/2019/914", "3")) == []  # a transitional provision amends nothing


def test_add_renumber_and_the_unit_added_after():
    changes = {(c.amending_unit, c.target_article, c.target_unit): c for c in read(_article("DU/2019/730", "161"))}
    added = changes[("pkt 1", "5a", "")]
    assert (added.operation, added.after_unit, added.target_act) == ("add", "art. 5", "DU/2018/1000")
    assert added.wording.startswith("Art. 5a.")
    renumbered, second = changes[("pkt 6", "108", "")], changes[("pkt 6", "108", "ust. 2")]
    assert (renumbered.operation, renumbered.new_label) == ("renumber", "ust. 1")
    assert (second.operation, second.wording[:2]) == ("add", "2.")


def test_ranges_are_spelled_by_the_labels_the_wording_opens():
    changes = read_all([_article("DU/2026/252", "1")])
    added = [c.target_unit for c in changes if c.amending_unit == "pkt 4 lit. j"]
    # "po pkt 11 dodaje się pkt 11a–11n": which letters follow l is the wording's to say (ł in some acts).
    assert added == [f"pkt 11{x}" for x in "abcdefghijklmn"]
    assert all(c.after_unit == "pkt 11" for c in changes if c.amending_unit == "pkt 4 lit. j")
    # "kropkę zastępuje się średnikiem i dodaje się pkt 4": the punctuation, then the unit.
    punct, add = [c for c in changes if c.amending_unit == "pkt 3 lit. a"]
    assert (punct.operation, punct.target_unit, punct.old_words, punct.new_words) == ("replace_words", "ust. 1 pkt 3", ".", ";")
    assert (add.operation, add.target_unit) == ("add", "ust. 1 pkt 4")
    # Parts above the articles: "uchyla się rozdziały 4 i 5", a footnote of the title.
    assert [(c.target_article, c.target_unit) for c in changes if c.amending_unit == "pkt 27"] == [
        (None, "rozdział 4"), (None, "rozdział 5")]
    assert [(c.target_unit, c.operation) for c in changes if c.amending_unit == "pkt 1"] == [
        ("odnośnik nr 1 do tytułu", "set_wording")]


def test_words_replaced_in_several_places_and_a_whole_act_repealed():
    places = read(_article("DU/2018/1000", "113"))
    assert [(c.target_article, c.target_unit, c.operation) for c in places] == [
        ("1", "ust. 1 pkt 13", "replace_words"), ("36", "ust. 5 pkt 1", "replace_words"), ("48", "ust. 2", "replace_words")]
    assert len({(c.old_words, c.new_words) for c in places}) == 1
    repeal = read(_article("DU/2026/187", "160"))
    assert [(c.target_act, c.target_article, c.target_unit, c.operation) for c in repeal] == [
        ("DU/2019/1026", None, "", "repeal")]
    # A repeal with exceptions: a plain list of articles stays in force (kept); chapters or conditions kept
    # leave what stays undetermined by articles, so the repeal is kept as other and never applied.
    with_articles = read(_article("DU/2024/1564", "101"))
    assert [c.operation for c in with_articles] == ["repeal"]
    conditional = read(_article("DU/2018/1000", "175"))
    assert [(c.operation, c.target_act) for c in conditional] == [("other", "DU/2016/922")]
    own_units = read(_article("DU/2024/1222", "68"))  # "Traci moc ustawa … – Prawo telekomunikacyjne …, z wyjątkiem ust. 2 i 3"
    assert [(c.operation, c.amending_unit) for c in own_units] == [("other", "ust. 1")]
    # Quotes the official text does not pair: kept as other, its words quoted, never guessed at.
    broken = read(_article("DU/2024/1222", "51"))
    assert [c.operation for c in broken] == ["other"] and broken[0].instruction


@pytest.fixture(scope="module")
def amended(server_url) -> str:
    """The amending acts stored before what they amend: a change is resolved when read, not when stored."""
    require_mirror()
    from support.database import create_database

    url = create_database(server_url, "amendments")
    with psycopg.connect(url) as c:
        for act in ("DU/2019/730", "DU/2026/187", "DU/2018/1000", "DU/2019/1026", "DU/2025/277", "DU/2019/1781"):
            store_mirror_act(c, act)
        c.commit()
    return url


def test_rebuild_applies_whole_units_and_leaves_edits_of_words_undetermined():
    text = "Art. 44. 1. Pierwszy.\n2. Drugi:\n1) a;\n2) b.\n3. Trzeci."
    done = rebuild(text, [
        {"operation": "set_wording", "target_unit": "ust. 2", "text": "2. Nowy:\n1) x."},
        {"operation": "repeal", "target_unit": "ust. 1"},
        {"operation": "add", "target_unit": "ust. 2a", "after": "ust. 2", "text": "2a. Dodany."},
        {"operation": "add", "target_unit": "ust. 4", "after": None, "text": "4. Na końcu."},
        {"operation": "replace_words", "target_unit": "ust. 3", "old_words": "Trzeci", "new_words": "Inny"},
        {"operation": "set_wording", "target_unit": "ust. 9", "text": "9. Brak."},
        {"operation": "add", "target_unit": "ust. 2a", "after": "ust. 2", "text": "2a. Znowu."},
    ])
    assert done.text == "Art. 44. 1. (uchylony)\n2. Nowy:\n1) x.\n2a. Dodany.\n3. Trzeci.\n4. Na końcu."
    assert done.applied == (0, 1, 2, 3)
    assert [(i, why.split(":")[0]) for i, why in done.undetermined] == [
        (4, "an edit of words"), (5, "the text has no ust. 9"),
        (6, "the text already has ust. 2a")]
    # "dotychczasową treść oznacza się jako ust. 1 i dodaje się ust. 2": the article's text becomes its ust. 1.
    renumbered = rebuild("Art. 108. Kto utrudnia kontrolę,\npodlega grzywnie.", [
        {"operation": "renumber", "target_unit": "", "new_label": "ust. 1"},
        {"operation": "add", "target_unit": "ust. 2", "after": None, "text": "2. Tej samej karze."}])
    assert renumbered.text == "Art. 108. 1. Kto utrudnia kontrolę,\npodlega grzywnie.\n2. Tej samej karze."
    # Only an ustęp or a paragraph is written so: a text made a point ("pkt 1") is not rebuilt as "1.".
    assert rebuild("Art. 9. Tekst.", [{"operation": "renumber", "target_unit": "", "new_label": "pkt 1"}]).applied == ()
    # "po pkt 4 dodaje się pkt 4a–4c": in their order, each after the one added before it.
    group = [{"act": "DU/2026/252", "unit": "art. 1 pkt 19", "operation": "add", "target_unit": f"ust. 1 pkt 4{x}",
              "after": "pkt 4", "text": f"4{x}) nowy;"} for x in "abc"]
    chained = rebuild("Art. 11. 1. Operator:\n4) zgłasza;\n5) współdziała.", group + [
        {"operation": "set_wording", "target_unit": "ust. 1 wprowadzenie do wyliczenia", "text": "Podmiot ważny:"}])
    assert chained.text == "Art. 11. 1. Podmiot ważny:\n4) zgłasza;\n4a) nowy;\n4b) nowy;\n4c) nowy;\n5) współdziała."


def test_changes_after_a_text_are_told_beside_it_on_the_date_asked(amended):
    with Service(amended, pool_size=1, warm=False) as law:
        before = law.show("DU/2018/1000", "108", as_of=D(2019, 1, 1))
        assert before["official"] is True and before["text"].startswith("Art. 108.")  # nothing in force yet
        assert [(c["act"], c["unit"], c["operation"], c["status"], c["applied"]) for c in before["changes"]] == [
            ("DU/2019/730", "art. 161 pkt 6", "renumber", "pending", False),
            ("DU/2019/730", "art. 161 pkt 6", "add", "pending", False)]
        assert before["changes"][0]["in_force_from"] == D(2019, 5, 4)
        after = law.show("DU/2018/1000", "108", as_of=D(2019, 6, 1))
        assert [c["status"] for c in after["changes"]] == ["in_force", "in_force"]
        assert after["changes"][1]["text"].startswith("2. Tej samej karze podlega")
        # On that day the wording is rebuilt, never called official; the official text is one step away.
        assert after["official"] is False and [c["applied"] for c in after["changes"]] == [True, True]
        assert after["text"].startswith("Art. 108. 1. Kto") and "\n2. Tej samej karze podlega" in after["text"]
        assert after["official_text"] == before["text"]
        assert law.show("DU/2018/1000", "108", as_of=D(2019, 6, 1), official=True)["text"] == before["text"]
        # It says what the consolidated text of 2019 (DU/2019/1781) prints, whose footnote names DU/2019/730.
        later = law.show("DU/2019/1781", "108", official=True)["text"]
        assert " ".join(after["text"].split()) == " ".join(re.sub(r"(?<=\.)\d+\)(?=\s|$)", "", later).split())
        # An article the text lacks, added by a stored act: rebuilt from that act.
        added = law.show("DU/2018/1000", "5a", as_of=D(2019, 6, 1))
        assert added["official"] is False and added["text"].startswith("Art. 5a. 1. Administrator")
        assert added["in_force_from"] == D(2019, 5, 4) and added["timeline"][0]["source"]["act"] == "DU/2019/730"
        assert "wejdzie w życie" in before["changes"][0]["note"] and "w mocy od 2019-05-04" in after["changes"][0]["note"]
        # A whole act repealed by a later one, from that act's own final provisions.
        psych = law.show("DU/2019/1026", "8", as_of=D(2026, 12, 5))["changes"]
        whole = [c for c in psych if c["whole_act"]]
        assert [(c["act"], c["unit"], c["status"], c["in_force_from"]) for c in whole] == [
            ("DU/2026/187", "art. 160", "pending", D(2028, 5, 19))]
        # The repeal is determined: from its day the articles are no longer in force, and say why.
        ended = law.show("DU/2019/1026", "8", as_of=D(2028, 6, 1))
        assert ended["in_force"] is False and ended["in_force_until"] == D(2028, 5, 19)
        assert ("repealed", "DU/2026/187", "art. 160") in {(e["kind"], e["source"]["act"], e["source"]["unit"])
                                                           for e in ended["timeline"]}
        assert [c["status"] for c in ended["changes"] if c["whole_act"]] == ["in_force"]
        # `check` reads the same wording `show` gives: a unit or an article a later act added is found, and said
        # to be rebuilt.
        cited = law.check("Art. 5a ust. 1 ustawy z dnia 10 maja 2018 r. o ochronie danych osobowych (Dz. U. z 2018 r. "
                          "poz. 1000, z późn. zm.) oraz art. 108 ust. 2 tej ustawy.", as_of=D(2020, 1, 1)).citations
        assert [(c["status"], c["text"]) for c in cited] == [("ok", "DU/2018/1000"), ("ok", "DU/2018/1000")]
        assert all("rebuilt from later changes (DU/2019/730 art. 161" in c["note"] for c in cited)
        assert law.check("art. 108 ust. 2 ustawy z dnia 10 maja 2018 r. o ochronie danych osobowych (Dz. U. z 2018 r. "
                         "poz. 1000)", as_of=D(2019, 1, 1)).citations[0]["status"] == "not_found"
        # Kodeks pracy of 2025 already carries the 2019 changes (its footnotes name them): none after it.
        assert not [c for c in law.show("DU/2025/277", "22^1")["changes"] if c["act"] == "DU/2019/730"]


def test_the_changes_view_and_the_cli(amended):
    with psycopg.connect(amended) as c:
        rows = c.execute("SELECT target_base_act, count(*) FROM amendment_changes WHERE source_act = 'DU/2019/730' "
                         "AND target_base_act IS NOT NULL GROUP BY 1 ORDER BY 1").fetchall()
        # The data protection act by its Dz. U. position, Kodeks pracy by its code's name.
        assert dict(rows).keys() >= {"DU/1974/141", "DU/2018/1000"}
        assert c.execute("SELECT count(*) FROM amendment_changes WHERE target_base_act IS NULL").fetchone()[0] > 300
    env = {"DATABASE_URL": amended}
    shown = run_cli("show", "DU/2018/1000", "108", "--as-of", "2019-06-01", env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].endswith("[brzmienie odtworzone z późniejszych zmian, nie tekst urzędowy]")
    assert "[✓] DU/2019/730 art. 161 pkt 6: dodanie (ust. 2), w mocy od 2019-05-04" in shown.stdout
    official = run_cli("show", "DU/2018/1000", "108", "--as-of", "2019-06-01", "--official", env=env)
    assert "odtworzone" not in official.stdout.splitlines()[0]
    assert "Zmiany po tym tekście (tekst powyżej jest urzędowy" in official.stdout
    as_json = json.loads(run_cli("show", "DU/2018/1000", "108", "--json", env=env).stdout)
    assert as_json["official"] is False and {c["operation"] for c in as_json["changes"]} == {"renumber", "add"}
    assert as_json["official_text"].startswith("Art. 108. Kto")
    # An article added after the text: not yet on a date before, with what will add it.
    early = run_cli("show", "DU/2018/1000", "5a", "--as-of", "2019-01-01", env=env)
    assert early.returncode == 1 and early.stderr.strip() == (
        "Error: DU/2018/1000 has no art. 5a in the selected text (added by DU/2019/730 art. 161 pkt 1, in force "
        "from 2019-05-04)")


def test_removing_a_repealing_act_gives_the_articles_it_ended_back(server_url):
    """DU/2026/187 art. 160 repeals DU/2019/1026 from 2028-05-19; removed, its repeal goes with it."""
    require_mirror()
    from support.database import create_database

    from pipeline.storage import store

    url = create_database(server_url, "amendments_remove")
    with psycopg.connect(url) as c:
        for act in ("DU/2026/187", "DU/2019/1026"):  # as the module fixture: the repeal read when 1026 is stored
            store_mirror_act(c, act)
        c.commit()
    later = D(2028, 6, 1)
    with Service(url, pool_size=1, warm=False) as law:
        assert law.show("DU/2019/1026", "8", as_of=later)["in_force"] is False
        with psycopg.connect(url) as c:
            store.remove_act(c, "DU/2026/187")
        back = law.show("DU/2019/1026", "8", as_of=later)
    assert back["in_force"] is not False and back["in_force_until"] is None
    assert not [e for e in back["timeline"] if (e.get("source") or {}).get("act") == "DU/2026/187"]


def test_a_target_that_is_not_stored_stays_unresolved(server_url):
    """DU/2026/252 art. 20 amends "ustawie z dnia 12 lipca 2024 r. – Prawo komunikacji elektronicznej" (DU/2024/1221);
    with it not stored, the act of the same date introducing it ("– Przepisy wprowadzające ustawę – Prawo komunikacji
    elektronicznej", DU/2024/1222) is not it: the change stays unresolved, not listed on its art. 40 (issue 47)."""
    require_mirror()
    from support.database import create_database

    url = create_database(server_url, "amendments_unresolved")
    with psycopg.connect(url) as c:
        for act in ("DU/2024/1222", "DU/2026/252"):
            store_mirror_act(c, act)
        c.commit()
        resolved = dict(c.execute("SELECT source_unit, target_base_act FROM amendment_changes "
                                  "WHERE source_act = 'DU/2026/252' AND source_article IN ('20', '21')").fetchall())
    assert resolved == {"art. 20": None, "art. 21": "DU/2024/1222"}  # 21 names DU/2024/1222 by its Dz. U. position
    with Service(url, pool_size=1, warm=False) as law:
        changes = law.show("DU/2024/1222", "40", as_of=D(2026, 5, 1))["changes"]
    assert not [ch for ch in changes if ch["act"] == "DU/2026/252"]


def test_a_chapter_repealed_or_added_changes_the_articles_it_holds(server_url):
    """DU/2026/252 art. 1 pkt 27 "uchyla się rozdziały 4 i 5" and pkt 39 "po rozdziale 6 dodaje się rozdział 6a w
    brzmieniu: …" (in force 2026-04-03), on the cybersecurity act DU/2018/1560: art. 20 (rozdział 4) ends, art.
    36a (rozdział 6a) exists, rebuilt from the amending act (issue 47: the chapter was stored as the target and
    applied to no article)."""
    require_mirror()
    from support.database import create_database

    url = create_database(server_url, "amendments_chapters")
    with psycopg.connect(url) as c:
        for act in ("DU/2018/1560", "DU/2026/252"):
            store_mirror_act(c, act)
        c.commit()
    with Service(url, pool_size=1, warm=False) as law:
        assert law.show("DU/2018/1560", "20", as_of=D(2026, 3, 1))["in_force"] is not False
        gone = law.show("DU/2018/1560", "20", as_of=D(2026, 5, 1))
        assert (gone["in_force"], gone["in_force_until"]) == (False, D(2026, 4, 3))
        added = law.show("DU/2018/1560", "36a", as_of=D(2026, 5, 1))
        assert added["text"].startswith("Art. 36a. 1. CSIRT MON") and added["official"] is False
        assert added["in_force_from"] == D(2026, 4, 3)
        with pytest.raises(ArticleNotFound):
            law.show("DU/2018/1560", "36a", as_of=D(2026, 3, 1))
