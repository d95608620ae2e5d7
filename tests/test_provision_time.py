"""When each provision is the law (revision 0010): final provisions, the act introducing another, the
footnotes of consolidated texts, on the mirror's real texts, and as-of at the unit level on the faces."""
from __future__ import annotations

import datetime as dt
import json

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import ingestion, store_mirror_act
from support.paths import ELI_MIRROR, require_mirror

from pipeline import Service
from pipeline.core.dates import Period, parse_date
from pipeline.sources import footnotes, provisions
from pipeline.sources.record import EliRecord
from pipeline.storage import derived, legal_time, store

D = dt.date


# --- counting as Polish law counts ------------------------------------------------------------------------

@pytest.mark.parametrize(("published", "period", "enters"), [
    (D(2025, 7, 2), "14 dni", D(2025, 7, 17)),  # the day of publication not counted; the day after the end
    (D(2026, 2, 18), "2 lat i 3 miesięcy", D(2028, 5, 19)),
    (D(2024, 8, 9), "3 miesięcy", D(2024, 11, 10)),
    (D(2024, 8, 31), "miesiąca", D(2024, 10, 1)),  # no 31 September: the month's last day ends it
    (D(2024, 2, 29), "roku", D(2025, 3, 1)),  # no 29 February 2025
    (D(2024, 8, 9), "trzech miesięcy", D(2024, 11, 10)),
])
def test_a_period_ends_as_the_civil_code_counts_and_the_act_enters_the_day_after(published, period, enters):
    assert Period.parse(period).after(published) == enters


def test_a_date_as_written():
    assert parse_date("wchodzi w życie z dniem 1 stycznia 2025 r.") == D(2025, 1, 1)
    assert parse_date("z dniem 31 lutego 2025 r.") is None  # no such day: not guessed


# --- the rules, read by their form --------------------------------------------------------------------------

def test_final_provisions_with_a_list_of_exceptions_by_article_unit_and_chapter():
    clause = ("Ustawa wchodzi w życie po upływie 14 dni od dnia ogłoszenia, z wyjątkiem: 1) art. 125 ust. 4, który "
              "wchodzi w życie z dniem następującym po dniu ogłoszenia; 2) art. 8–10 oraz rozdziałów 3–5 i 9, które "
              "wchodzą w życie po upływie 3 miesięcy od dnia ogłoszenia.")
    rules = provisions.read_clause(clause, "133", ["8", "9", "10"])
    published = D(2026, 7, 27)
    got = [(r.target, r.when.kind, r.when.on(published)) for r in rules]
    assert got == [("the act", "period", D(2026, 8, 11)), ("art. 125 ust. 4", "next_day", D(2026, 7, 28)),
                   ("rozdział 3", "period", D(2026, 10, 28)), ("rozdział 4", "period", D(2026, 10, 28)),
                   ("rozdział 5", "period", D(2026, 10, 28)), ("rozdział 9", "period", D(2026, 10, 28)),
                   ("art. 8", "period", D(2026, 10, 28)), ("art. 9", "period", D(2026, 10, 28)),
                   ("art. 10", "period", D(2026, 10, 28))]


def test_a_term_set_elsewhere_or_an_event_is_no_date():
    other = provisions.read_clause("Ustawa wchodzi w życie w terminie określonym w ustawie z dnia 12 lipca 2024 r. – "
                                   "Przepisy wprowadzające ustawę – Prawo komunikacji elektronicznej (Dz. U. poz. 1222).")
    assert [(r.when.kind, r.when.act, r.when.on(D(2024, 8, 9))) for r in other] == [("other_act", "DU/2024/1222", None)]
    event = provisions.when("od dnia uzyskania przez Rzeczpospolitą Polską członkostwa w Unii Europejskiej")
    assert event.kind == "event" and event.on(D(2002, 9, 9)) is None


def test_footnotes_are_read_by_form_and_take_the_act_and_date_of_the_footnote_they_refer_to():
    read = footnotes.read({
        3: "Ze zmianą wprowadzoną przez art. 26 pkt 1 lit. a ustawy z dnia 12 lipca 2024 r. - Przepisy wprowadzające "
           "ustawę - Prawo komunikacji elektronicznej (Dz. U. poz. 1222), która wejdzie w życie z dniem 10 listopada 2024 r.",
        2: "W tym brzmieniu obowiązuje do wejścia w życie zmiany, o której mowa w odnośniku 3.",
        9: "Przez art. 26 pkt 3 ustawy, o której mowa w odnośniku 3.",
        7: "Zdanie drugie ze zmianą wprowadzoną przez art. 2 pkt 4 lit. b ustawy, o której mowa w odnośniku 3; weszła "
           "w życie z dniem 22 czerwca 2025 r.",
        15: "Oznaczenie ust. 1 nadane przez art. 87 ustawy z dnia 17 sierpnia 2023 r. o niektórych zawodach medycznych "
            "(Dz. U. poz. 1972); wszedł w życie z dniem 1 stycznia 2024 r.",
        8: "Utracił moc z dniem 15 czerwca 2022 r. w zakresie, w jakim pomija osoby …, na podstawie wyroku Trybunału "
           "Konstytucyjnego z dnia 7 czerwca 2022 r.",
        16: "Ustawa została ogłoszona w dniu 9 września 2002 r.",
        1: "Zmiany tekstu jednolitego wymienionej ustawy zostały ogłoszone w Dz. U. z 2024 r. poz. 1222.",
    })
    seen = {n: (r.kind, r.part, r.source_act, r.source_unit, r.date, r.future) for n, r in read.items()}
    assert seen == {
        3: ("amended", "", "DU/2024/1222", "art. 26 pkt 1 lit. a", D(2024, 11, 10), True),
        2: ("until_change", "", "DU/2024/1222", "art. 26 pkt 1 lit. a", D(2024, 11, 10), True),
        9: ("repealed", "", "DU/2024/1222", "art. 26 pkt 3", D(2024, 11, 10), True),
        7: ("amended", "zdanie drugie", "DU/2024/1222", "art. 2 pkt 4 lit. b", D(2025, 6, 22), False),
        15: ("renumbered", "ust. 1", "DU/2023/1972", "art. 87", D(2024, 1, 1), False),
        8: ("loses_force", "", None, None, D(2022, 6, 15), False),
        16: ("published", "", None, None, D(2002, 9, 9), False),
        1: ("note", "", None, None, None, False),
    }
    assert read[8].partial and not read[9].partial


# --- stored texts ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def timed(server_url) -> str:
    """DU/2026/187 (most of it in force from 2028), Kodeks pracy (two wordings of art. 184 from 2025-03-19),
    DU/2026/156 (art. 96 repealed from 2028), and the Labour Code's base act's record (DU/1974/141: its
    "Akty zmieniające" date each amendment), as a sync of the base act would store it."""
    require_mirror()
    from support.database import create_database

    url = create_database(server_url, "provision_time")
    with psycopg.connect(url) as c:
        for act in ("DU/2026/187", "DU/2025/277", "DU/2026/156"):
            store_mirror_act(c, act)
        base = json.loads((ELI_MIRROR / "other" / "DU-1974-141-meta.EXCERPT.json").read_text())
        base.pop("_excerpt_note")
        store.upsert_act(c, EliRecord.read(base))
        c.commit()
    return url


def _times(conn: psycopg.Connection, eli: str, article: str) -> list[tuple]:
    """(wording, in_force_from, in_force_until, undetermined, basis) of each wording of the article."""
    return conn.execute(
        "SELECT ar.wording, t.in_force_from, t.in_force_until, t.undetermined, t.basis "
        "FROM articles ar JOIN act_versions v USING (version_id) JOIN article_times t USING (article_id) "
        "WHERE v.eli = %s AND ar.article = %s ORDER BY v.version_no DESC, ar.ordinal", (eli, article)).fetchall()


def _events(conn: psycopg.Connection, eli: str, article: str) -> list[tuple]:
    return conn.execute(
        "SELECT wording, kind, unit, from_date, until_date, determined, source_act, source_unit FROM article_timelines "
        "WHERE eli = %s AND article = %s ORDER BY version_no DESC, wording, ordinal", (eli, article)).fetchall()


def test_a_period_with_exceptions_earlier_and_later_than_the_main_date(conn):
    """DU/2026/187 (published 2026-02-18): most of it after 2 years and 3 months, art. 139 and 151–159 after
    14 days, art. 145 after 12 months, art. 17 ust. 3 after 5 years and 3 months."""
    require_mirror()
    store_mirror_act(conn, "DU/2026/187")
    assert _times(conn, "DU/2026/187", "1") == [(0, D(2028, 5, 19), None, None, "provisions")]
    assert _times(conn, "DU/2026/187", "152")[0][1] == D(2026, 3, 5)
    assert _times(conn, "DU/2026/187", "145")[0][1] == D(2027, 2, 19)
    assert _times(conn, "DU/2026/187", "17")[0][1] == D(2028, 5, 19)
    assert ("enters", "ust. 3", D(2031, 5, 19)) in [e[1:4] for e in _events(conn, "DU/2026/187", "17")]
    # The text states the law from its earliest article, not from its publication.
    assert conn.execute("SELECT valid_from FROM act_versions WHERE eli = 'DU/2026/187'").fetchone()[0] == D(2026, 3, 5)


def test_a_chapter_exception_and_an_earlier_unit(conn):
    """DU/2026/1003: 14 days; art. 125 ust. 4 the day after publication; art. 8–18 and chapters 3–5, 8, 9
    after 3 months."""
    require_mirror()
    store_mirror_act(conn, "DU/2026/1003")
    headings = dict(conn.execute("SELECT article, heading_path[1] FROM current_articles WHERE eli = 'DU/2026/1003'"))
    in_chapter_3 = next(a for a, h in headings.items() if h.startswith("Rozdział 3 "))
    in_chapter_2 = next(a for a, h in headings.items() if h.startswith("Rozdział 2 ") and a not in map(str, range(8, 19)))
    assert _times(conn, "DU/2026/1003", in_chapter_3)[0][1] == D(2026, 10, 28)
    assert _times(conn, "DU/2026/1003", in_chapter_2)[0][1] == D(2026, 8, 11)
    assert _times(conn, "DU/2026/1003", "8")[0][1] == D(2026, 10, 28)
    # Art. 125 as a whole comes in with its ust. 4, the day after publication.
    assert _times(conn, "DU/2026/1003", "125")[0][1] == D(2026, 7, 28)


def test_dates_set_in_the_act_that_introduces_it(server_url):
    """DU/2024/1221 enters "w terminie określonym" in DU/2024/1222: undetermined (the clause quoted) until
    1222 is stored, then dated by 1222's art. 1, exceptions included."""
    require_mirror()
    from support.database import create_database

    url = create_database(server_url, "introduced")
    with psycopg.connect(url) as c, ingestion(c, url) as run:
        assert run.act("DU/2024/1221", source_dir=ELI_MIRROR).status == "new"
        ((_, start, _, why, basis),) = _times(c, "DU/2024/1221", "1")
        c.rollback()
        assert start is None and basis == "undetermined" and "Przepisy wprowadzające" in why
        assert run.act("DU/2024/1222", source_dir=ELI_MIRROR).status == "new"
        assert _times(c, "DU/2024/1221", "1")[0][1:3] == (D(2024, 11, 10), None)
        assert _times(c, "DU/2024/1221", "278")[0][1] == D(2024, 12, 28)
        assert _times(c, "DU/2024/1221", "1")[0][4] == "other_act"
        entry = [e for e in _events(c, "DU/2024/1221", "278") if e[1] == "enters"][0]
        assert entry[6:] == ("DU/2024/1222", "art. 1")


def test_units_that_follow_the_main_rule_are_pending_while_an_exception_starts_earlier(conn):
    """DU/2024/1222 art. 124: the act after 3 months (2024-11-10), "z wyjątkiem: 1) … art. 80 ust. 3 i 5-8 …,
    które wchodzą w życie z dniem następującym po dniu ogłoszenia" (2024-08-10): art. 80 is in force from then,
    its ust. 1, 2 and 4 enter on the main date (issue 47: they were listed nowhere)."""
    require_mirror()
    store_mirror_act(conn, "DU/2024/1222")
    assert _times(conn, "DU/2024/1222", "80")[0][1] == D(2024, 8, 10)
    entering = {e[2]: e[3] for e in _events(conn, "DU/2024/1222", "80") if e[1] == "enters" and e[2]}
    assert {u: entering.get(u) for u in ("ust. 1", "ust. 2", "ust. 4")} == dict.fromkeys(
        ("ust. 1", "ust. 2", "ust. 4"), D(2024, 11, 10))
    assert entering["ust. 3"] == D(2024, 8, 10) and entering["ust. 5"] == D(2024, 8, 10)


def test_a_fixed_date_beside_a_main_rule_that_cannot_be_counted(conn):
    """DU/2004/1800 as enacted: 30 days from a publication its record does not give (undetermined), and
    art. 100 from 1 January 2005."""
    require_mirror()
    store_mirror_act(conn, "DU/2004/1800")
    assert _times(conn, "DU/2004/1800", "100")[0][1:3] == (D(2005, 1, 1), None)
    ((_, start, _, why, _),) = _times(conn, "DU/2004/1800", "1")
    assert start is None and "po upływie 30 dni od dnia ogłoszenia" in why


def test_two_wordings_with_dates_and_a_future_repeal(timed):
    conn = psycopg.connect(timed)
    assert [t[:3] for t in _times(conn, "DU/2025/277", "177")] == [
        (1, D(2025, 2, 7), D(2025, 3, 19)), (2, D(2025, 3, 19), None)]
    # DU/2026/156 art. 96: repealed by a 2018 act from 2028
    (first, second) = _times(conn, "DU/2026/156", "96")
    assert first[2] == D(2028, 1, 1) and second[1] == D(2028, 1, 1)
    assert conn.execute("SELECT repealed FROM current_articles WHERE eli = 'DU/2026/156' AND article = '96' "
                        "AND wording = 2").fetchone() == (True,)
    repeal = [e for e in _events(conn, "DU/2026/156", "96") if e[1] == "repealed"]
    assert [e[3:4] + e[6:] for e in repeal] == [(D(2028, 1, 1), "DU/2018/1532", "art. 3 pkt 2")]
    conn.close()


def test_a_footnote_history_entry(conn):
    """DU/2024/581 art. 3 ust. 1 pkt 11: "Dodany przez art. 1 pkt 2 ustawy, o której mowa w odnośniku 1",
    whose footnote 1 names DU/2023/1675, in force from 6 September 2023."""
    require_mirror()
    store_mirror_act(conn, "DU/2024/581")
    added = [e for e in _events(conn, "DU/2024/581", "3") if e[1] == "added"]
    assert (0, "added", "ust. 1 pkt 11", D(2023, 9, 6), None, True, "DU/2023/1675", "art. 1 pkt 2") in added
    # The act entered as its footnote on the last article says, art. 41-46 earlier.
    assert _times(conn, "DU/2024/581", "1")[0][1] == D(2009, 6, 5)
    assert _times(conn, "DU/2024/581", "41")[0][1] == D(2009, 5, 21)


def test_an_event_leaves_the_unit_undetermined_with_the_clause(conn):
    require_mirror()
    store_mirror_act(conn, "DU/2002/1204")
    (entry,) = [e for e in _events(conn, "DU/2002/1204", "5") if e[2] == "ust. 5"]
    assert entry[1] == "applies" and entry[3] is None and entry[5] is False  # "… który stosuje się od dnia …"
    why = conn.execute("SELECT text FROM article_timelines WHERE eli = 'DU/2002/1204' AND article = '5' "
                       "AND unit = 'ust. 5'").fetchone()[0]
    assert "członkostwa w Unii Europejskiej" in why


# --- as of a date, on the faces ----------------------------------------------------------------------------

def test_show_gives_the_wording_in_force_on_the_date_and_the_timeline(timed):
    with Service(timed, pool_size=1, warm=False) as law:
        before, after = law.show("DU/2025/277", "184", as_of=D(2025, 3, 1)), law.show("DU/2025/277", "184",
                                                                                       as_of=D(2025, 4, 1))
        assert (before["wording"], before["in_force"], before["in_force_until"]) == (1, True, D(2025, 3, 19))
        assert (after["wording"], after["in_force"], after["in_force_from"]) == (2, True, D(2025, 3, 19))
        assert "uzupełniającego urlopu macierzyńskiego" in after["text"] and before["text"] != after["text"]
        assert {e["kind"] for e in after["timeline"]} >= {"wording"}
        assert any(e["until"] == D(2025, 3, 19) for e in after["timeline"] if e["wording"] == 1)
        early = law.show("DU/2026/187", "17", as_of=D(2026, 4, 1))
        assert early["in_force"] is False and early["in_force_note"] == "wchodzi w życie 2028-05-19"
        later = law.show("DU/2026/187", "17", as_of=D(2028, 6, 1))
        assert later["in_force"] is True
        assert [u["note"] for u in later["units_not_in_force"]] == ["ust. 3 wchodzi w życie 2031-05-19"]
    out = run_cli("show", "DU/2026/187", "17", "--as-of", "2026-04-01", env={"DATABASE_URL": timed})
    assert out.returncode == 0 and "W mocy (2026-04-01): wchodzi w życie 2028-05-19" in out.stdout
    assert "Timeline:" in out.stdout and "ust. 3" in out.stdout


def test_a_day_before_the_stored_text_is_answered_as_far_as_its_dates_speak(timed):
    """Before every stored text's own date (issue 47): a published act not yet in force gives its text, not in
    force, from when; a consolidated text gives what its footnotes and provisions date, the rest undetermined
    (it states the law on its own date), never "wchodzi w życie" on its own date. Both refused before."""
    with Service(timed, pool_size=1, warm=False) as law:
        early = law.show("DU/2026/187", "1", as_of=D(2026, 3, 1))  # published 2026-02-18, the earliest 2026-03-05
        assert (early["in_force"], early["in_force_from"]) == (False, D(2028, 5, 19))
        assert early["text"].startswith("Art. 1.") and early["in_force_note"] == "wchodzi w życie 2028-05-19"
        added = law.show("DU/2025/277", "180^2", as_of=D(2025, 1, 15))  # footnote: added, in force 2025-03-19
        assert (added["in_force"], added["in_force_from"]) == (False, D(2025, 3, 19))
        plain = law.show("DU/2025/277", "1", as_of=D(2024, 6, 1))  # the text of 2025-02-07 says no earlier date
        assert plain["in_force"] is None and plain["in_force_undetermined"]
        assert plain["in_force_note"].startswith("nieokreślone: tekst jednolity stanowi prawo na 2025-02-07")
        gone = law.show("DU/2025/277", "266", as_of=D(1980, 1, 1))  # "(uchylony)", footnote: from 1985-07-01
        assert (gone["in_force"], gone["in_force_until"]) == (None, D(1985, 7, 1))
        assert law.show("DU/2025/277", "266", as_of=D(1990, 1, 1))["in_force"] is False
        # Dated by the act's rule (2011-07-01), but the text of 2026-02-11 prints only the changes since the text
        # before it: on a day before them, whether and in which wording the article stood it does not say.
        old = law.show("DU/2026/156", "1", as_of=D(2015, 1, 1))
        assert (old["in_force"], old["in_force_from"]) == (None, D(2011, 7, 1))
        assert old["in_force_note"].startswith("nieokreślone: tekst jednolity podaje zmiany od poprzedniego tekstu")
    out = run_cli("show", "DU/2026/187", "1", "--as-of", "2026-03-01", env={"DATABASE_URL": timed})
    assert out.returncode == 0 and "W mocy (2026-03-01): wchodzi w życie 2028-05-19" in out.stdout


def test_a_chapter_added_later_dates_its_articles(timed):
    """DU/2026/156 rozdział 3a (art. 88a–88b): "Rozdział dodany przez art. 2 pkt 15 ustawy, o której mowa w
    odnośniku 4" (in force 2025-09-17); its articles read the act's 2011-07-01 before (issue 47)."""
    with Service(timed, pool_size=1, warm=False) as law:
        after = law.show("DU/2026/156", "88a", as_of=D(2025, 10, 1))
        assert (after["in_force"], after["in_force_from"]) == (True, D(2025, 9, 17))
        assert law.show("DU/2026/156", "88a", as_of=D(2025, 9, 16))["in_force"] is False


def test_search_leaves_out_what_is_not_yet_the_law(timed):
    with Service(timed, pool_size=1, warm=False) as law:
        question = "obowiązki psychologa wobec klienta"
        early = law.search(question, mode="text", acts=["DU/2026/187"], as_of=D(2026, 4, 1), k=10)
        late = law.search(question, mode="text", acts=["DU/2026/187"], as_of=D(2028, 6, 1), k=10)
        in_force_early = {"139", "145", *map(str, range(151, 160))}
        assert {h.article for h in early.hits} <= in_force_early - {"145"}
        assert {h.article for h in late.hits} - in_force_early and all(h.in_force for h in late.hits)
        records = late.records()
        assert all(r["in_force"] is True and r["in_force_note"].startswith("obowiązuje od") for r in records)


def test_sql_interface_gives_the_timelines_and_the_articles_in_force(timed):
    with psycopg.connect(timed) as c:
        assert c.execute("SELECT count(*) FROM articles_as_of('2026-04-01') WHERE eli = 'DU/2026/187'").fetchone()[0] == 10
        assert c.execute("SELECT count(*) FROM articles_as_of('2028-06-01') WHERE eli = 'DU/2026/187'").fetchone()[0] > 150
        wording = c.execute("SELECT wording FROM articles_as_of('2025-04-01') WHERE eli = 'DU/2025/277' "
                            "AND article = '184'").fetchall()
        assert wording == [(2,)]
        assert c.execute("SELECT count(*) FROM entry_rules WHERE eli = 'DU/2026/187'").fetchone()[0] >= 13
        kinds = {k for (k,) in c.execute("SELECT DISTINCT kind FROM article_timelines WHERE eli = 'DU/2025/277'")}
        assert {"wording", "loses_force"} <= kinds


def test_a_version_read_before_the_revision_is_worked_out_on_backfill(conn):
    require_mirror()
    store_mirror_act(conn, "DU/2026/548")
    conn.execute("DELETE FROM version_times")
    conn.execute("DELETE FROM article_times")
    conn.commit()
    time = next(layer for layer in derived.LAYERS if layer.name == "legal_time")
    assert derived.stale(conn, time)
    assert derived.backfill(conn) >= 1 and not derived.stale(conn, time)
    assert _times(conn, "DU/2026/548", "1")[0][1] == D(2026, 7, 23)
    assert conn.execute("SELECT footnotes FROM version_times").fetchone() == (False,)  # not read: re-ingest reads them


# --- currency per amendment --------------------------------------------------------------------------------

def test_each_later_amendment_says_whether_it_is_in_force_and_from_when(timed, conn):
    """The consolidated Labour Code lists five amendments after it (by their own dates); the base act's
    record ("Akty zmieniające") dates when each takes effect; an amending act whose text is stored is dated
    by its own final provisions."""
    from pipeline.storage import currency
    from support.paths import mirror_meta

    with psycopg.connect(timed) as c:
        kp = currency.for_acts(c, ["DU/2025/277"], D(2026, 5, 1))["DU/2025/277"]
        now = currency.for_acts(c, ["DU/2025/277"], D(2026, 12, 1))["DU/2025/277"]
    latest = {a.eli: a for a in kp.amendments}["DU/2026/473"]
    assert (latest.in_force_from, latest.in_force_source) == (D(2026, 7, 8), "base_record")
    assert "DU/2026/473 (z 2026-03-11; wchodzi w życie 2026-07-08)" in kp.note()
    assert "DU/2026/473 (z 2026-03-11; obowiązuje od 2026-07-08)" in now.note()
    assert {a["eli"]: a["in_force"] for a in now.to_dict()["amended_after"]}["DU/2026/473"] is True

    # An amending act stored with its text: its own final provisions date the change.
    cyber = {**mirror_meta("DU/2018/1560"), "references": {"Akty zmieniające": [{"id": "DU/2026/252"}]}}
    from support.corpus import store_text, parsed_act

    store_text(conn, cyber, parsed_act("DU/2018/1560"))
    store_mirror_act(conn, "DU/2026/252")
    conn.commit()
    (amendment,) = currency.for_acts(conn, ["DU/2018/1560"], D(2026, 3, 20))["DU/2018/1560"].amended_after
    assert (amendment.in_force_from, amendment.in_force_source) == (D(2026, 4, 3), "amending_text")


def test_an_answer_is_told_which_units_are_not_the_law_on_the_day():
    """The model reads, beside a fragment, which of its units are not in force on the day asked; the offline
    answer leaves such an ustęp out of what it quotes as law, and says why."""
    from pipeline.answering.extractive import extractive_answer
    from pipeline.answering.fragments import Fragment
    from pipeline.answering.prompts import SYSTEM_PROMPT, build_messages

    text = ("Art. 17. 1. Psycholog wykonuje zawód z należytą starannością.\n2. Psycholog prowadzi dokumentację.\n"
            "3. Psycholog odbywa superwizję zawodową.")
    fragment = Fragment("DU/2026/187", "17", text, time_notes=["ust. 3 wchodzi w życie 2031-05-19"],
                        units_out=["ust. 3"])
    user = build_messages("Czy psycholog musi odbywać superwizję?", [fragment])[1]["content"]
    assert "[Stan w dniu, którego dotyczy pytanie: ust. 3 wchodzi w życie 2031-05-19]" in user
    assert "nie przedstawiaj jej jako obowiązującej" in SYSTEM_PROMPT
    answer = extractive_answer("Czy psycholog musi odbywać superwizję zawodową?", [fragment])
    assert "superwizję" not in answer.text.split("Uwaga:")[0]
    assert "Uwaga: [DU/2026/187, art. 17]: ust. 3 wchodzi w życie 2031-05-19." in answer.text


def test_units_as_the_subject_and_calendar_terms():
    """Final provisions that name units as their subject ("Art. 12 wchodzi w życie …", "Przepisy art. 1 stosuje
    się od dnia …", "Rozdział 2 wchodzi w życie …"), calendar terms counted from publication, and a provision
    that only applies others "odpowiednio" (no rule)."""
    from pipeline.sources.parse.model import Article

    last = Article("13", "Art. 13. 1. Ustawa wchodzi w życie po upływie 14 dni od dnia ogłoszenia.\n"
                         "2. Art. 12 wchodzi w życie z dniem 1 stycznia 2027 r.\n"
                         "3. Przepisy art. 1, w zakresie spraw wszczętych po dniu wejścia w życie ustawy, stosuje się "
                         "od dnia 1 lipca 2027 r.\n"
                         "4. Przepisy art. 1 stosuje się odpowiednio do spraw wszczętych.\n"
                         "5. Rozdział 2 wchodzi w życie z pierwszym dniem miesiąca następującego po miesiącu ogłoszenia.\n"
                         "6. Art. 5 wchodzi w życie z dniem 1 stycznia roku następującego po roku, w którym ustawa "
                         "została ogłoszona.")
    rules = provisions.read([Article("1", "Art. 1. A."), Article("5", "Art. 5. B."), Article("12", "Art. 12. C."), last])
    published = D(2026, 12, 20)
    assert [(r.target, r.verb, r.when.kind, r.when.on(published), bool(r.scope)) for r in rules] == [
        ("the act", "enters", "period", D(2027, 1, 4), False),
        ("art. 12", "enters", "date", D(2027, 1, 1), False),
        ("art. 1", "applies", "date", D(2027, 7, 1), True),
        ("rozdział 2", "enters", "next_month", D(2027, 1, 1), False),
        ("art. 5", "enters", "next_year", D(2027, 1, 1), False)]
    after_period = provisions.when("z pierwszym dniem miesiąca następującego po upływie 14 dni od dnia ogłoszenia")
    assert after_period.on(D(2026, 12, 20)) == D(2027, 2, 1) and after_period.on(D(2026, 12, 10)) == D(2027, 1, 1)
