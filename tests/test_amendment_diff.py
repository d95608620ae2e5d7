"""`diff` across official and rebuilt wordings, and edits of words applied where the wording they edit is known
to be current (issue 40), on the mirror's real acts: the 2018 cybersecurity act (DU/2018/1560, stored as
enacted) and DU/2026/252, whose art. 1 amends it (in force 2026-04-03: art. 11 set unit by unit, words
replaced, inserted and deleted in some sixty units).

The mirror's rebuilt records list no amending acts; a test gives DU/2018/1560's record the list the real API
has ("Akty zmieniające") by refreshing the stored record as ingest and sync do (store.upsert_act)."""
from __future__ import annotations

import datetime as dt
from dataclasses import replace

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import parsed_act, store_text
from support.paths import mirror_meta, require_mirror

from pipeline.retrieval.search import Scope, SearchSettings
from pipeline import Service
from pipeline.core.errors import ArticleNotFound
from pipeline.sources.rewording import rebuild
from pipeline.sources.record import AMENDING_ACTS, EliRecord

D = dt.date
CYBER, AMENDING = "DU/2018/1560", "DU/2026/252"
BEFORE, AFTER = D(2026, 1, 1), D(2026, 6, 1)  # DU/2026/252 is in force from 2026-04-03
NOT_STORED = {"id": "DU/2024/1222", "date": "2024-11-10"}  # a real amending act of DU/2018/1560, not stored here


@pytest.fixture(scope="module")
def cyber(server_url) -> str:
    """DU/2018/1560 as enacted, and of DU/2026/252 the articles that amend it and date it (art. 1, art. 49:
    "wchodzi w życie po upływie miesiąca od dnia ogłoszenia"): its other 47 articles change nothing here and
    would cost the module seconds to store."""
    require_mirror()
    from support.database import create_database

    url = create_database(server_url, "amendment_diff")
    amending = parsed_act(AMENDING)
    with psycopg.connect(url) as c:
        store_text(c, mirror_meta(CYBER), parsed_act(CYBER))
        store_text(c, mirror_meta(AMENDING), replace(amending, articles=[amending.articles[0], amending.articles[-1]]))
        c.commit()
    return url


def _listing(url: str, *acts: dict | None) -> None:
    """DU/2018/1560's stored record refreshed: "Akty zmieniające" listing ``acts``; no argument: none at all
    (the mirror's record, which has no relations)."""
    from pipeline.storage import store

    record = mirror_meta(CYBER)
    if acts:
        record["references"] = {AMENDING_ACTS: [a for a in acts if a]}
    with psycopg.connect(url) as c:
        store.refresh_act(c, EliRecord.read(record))  # as sync stores a changed record
        c.commit()


def _edits(article: dict) -> list[tuple]:
    return [(c["target_unit"], c["operation"], c["applied"]) for c in article["changes"]
            if c["operation"] in ("replace_words", "delete_words", "insert_words")]


# --- diff across official and rebuilt wordings --------------------------------------------------------

def test_diff_across_an_amending_act_marks_the_rebuilt_side(cyber):
    _listing(cyber)
    with Service(cyber, pool_size=1, warm=False) as law:
        d = law.diff(CYBER, "11", from_date=BEFORE, to_date=AFTER)
        # One stored text only: the change is DU/2026/252's, rebuilt on the later date and said to be.
        assert (d["from"]["act"], d["to"]["act"]) == (CYBER, CYBER) and not d["unchanged"]
        assert (d["from"]["official"], d["from"]["changes"]) == (True, [])
        assert d["to"]["official"] is False
        assert {(c["act"], c["in_force_from"]) for c in d["to"]["changes"]} == {(AMENDING, D(2026, 4, 3))}
        assert all(c["unit"].startswith("art. 1 pkt ") for c in d["to"]["changes"])
        old = "".join(op["text"] for op in d["ops"] if op["op"] != "insert")
        new = "".join(op["text"] for op in d["ops"] if op["op"] != "delete")
        # Each side is the wording `show --as-of` gives for its date.
        assert old == law.show(CYBER, "11", as_of=BEFORE)["text"] and old.startswith("Art. 11. 1. Operator usługi")
        assert new == law.show(CYBER, "11", as_of=AFTER)["text"] and new.startswith("Art. 11. 1. Podmiot kluczowy")
        # Without --from: against the wording before the newest change applied (here the official text).
        assert law.diff(CYBER, "11", to_date=AFTER)["ops"] == d["ops"]
        assert law.diff(CYBER, "11")["from"]["official"] is True
        # Dates on one side of every change still say so.
        with pytest.raises(ArticleNotFound, match="no stored change to art. 11 between them"):
            law.diff(CYBER, "11", from_date=D(2026, 5, 1), to_date=AFTER)
    out = run_cli("diff", CYBER, "11", "--from", "2026-01-01", "--to", "2026-06-01", env={"DATABASE_URL": cyber})
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()
    assert "[brzmienie odtworzone, nie tekst urzędowy]" in head[0] and head[0].count("odtworzone") == 1
    assert f"  to: rebuilt by {AMENDING} art. 1 pkt " in out.stdout and "{+Podmiot kluczowy" in out.stdout
    # The web page marks the rebuilt side, on a real server on loopback.
    page = _page(cyber, f"/acts/{CYBER}/art/11/diff?from=2026-01-01&to=2026-06-01")
    assert page.count("brzmienie odtworzone, nie tekst urzędowy") == 1 and "Do: brzmienie odtworzone" in page
    assert f"{AMENDING} art. 1 pkt " in page and "<ins>" in page


def _page(url: str, path: str) -> str:
    """``path`` of the web page over the database ``url``, served by uvicorn on 127.0.0.1 for the one request."""
    import httpx
    from support.servers import serving

    from pipeline.interfaces.web import build_app

    with serving(build_app(Service(url, pool_size=1), warm=False)) as base:
        response = httpx.get(base + path, timeout=30)
    assert response.status_code == 200, response.text
    return response.text


# --- edits of words: applied where determined ---------------------------------------------------------

def test_a_word_edit_is_applied_when_the_record_lists_every_amending_act(cyber):
    _listing(cyber, {"id": AMENDING, "date": "2026-04-03"})
    with Service(cyber, pool_size=1, warm=False) as law:
        art3 = law.show(CYBER, "3", as_of=AFTER)
        assert art3["official"] is False and _edits(art3) == [("", "replace_words", True)]
        assert "niezakłóconego świadczenia usług przez podmioty kluczowe lub podmioty ważne, przez osiągnięcie" \
            in art3["text"]
        assert art3["official_text"] == law.show(CYBER, "3", as_of=BEFORE)["text"]
        # Words inserted and replaced in one unit, one after the other; words deleted.
        art26 = law.show(CYBER, "26", as_of=AFTER)
        assert ("ust. 1", "insert_words", True) in _edits(art26) and ("ust. 1", "replace_words", True) in _edits(art26)
        assert ("ministrem właściwym do spraw informatyzacji, CSIRT sektorowymi oraz Pełnomocnikiem" in art26["text"]
                and "przeciwdziałania cyberzagrożeniom o charakterze" in art26["text"])
        art59 = law.show(CYBER, "59", as_of=AFTER)
        assert _edits(art59) == [("ust. 3", "delete_words", True)]
        assert "3. Podmiot kontrolowany, w wyznaczonym terminie, informuje organ właściwy do spraw " \
               "cyberbezpieczeństwa o sposobie wykonania zaleceń." in art59["text"]
        # Words in their grammatical forms ("w odpowiednim przypadku") are not written out: undetermined.
        art64 = law.show(CYBER, "64", as_of=AFTER)
        assert art64["official"] is True and "grammatical forms" in art64["changes"][0]["why"]
        # diff reads the same wording.
        d = law.diff(CYBER, "3", from_date=BEFORE, to_date=AFTER)
        assert "".join(op["text"] for op in d["ops"] if op["op"] != "delete") == art3["text"]
        assert "".join(op["text"] for op in d["ops"] if op["op"] != "insert") == art3["official_text"]
        assert d["to"]["official"] is False and d["to"]["changes"][0]["act"] == AMENDING


def test_the_same_edit_is_undetermined_where_the_wording_is_not_known_to_be_current(cyber):
    with Service(cyber, pool_size=1, warm=False) as law:
        # The record lists an act between the text and the change that is not stored.
        _listing(cyber, NOT_STORED, {"id": AMENDING, "date": "2026-04-03"})
        art3 = law.show(CYBER, "3", as_of=AFTER)
        assert art3["official"] is True and _edits(art3) == [("", "replace_words", False)]
        assert "DU/2024/1222, listed as amending DU/2018/1560 by then, not stored" in art3["changes"][0]["why"]
        # …but not an act listed after the change takes effect.
        _listing(cyber, {"id": AMENDING, "date": "2026-04-03"}, {"id": "DU/2027/1", "date": "2027-01-01"})
        assert law.show(CYBER, "3", as_of=AFTER)["official"] is False
        # The record lists no amending acts at all (as the mirror's rebuilt records).
        _listing(cyber)
        art3 = law.show(CYBER, "3", as_of=AFTER)
        assert art3["official"] is True and "lists no amending acts" in art3["changes"][0]["why"]
        with pytest.raises(ArticleNotFound, match="no stored change to art. 3"):
            law.diff(CYBER, "3", from_date=BEFORE, to_date=AFTER)
        # The whole-unit changes of the same act are applied all the same.
        assert law.show(CYBER, "11", as_of=AFTER)["official"] is False


def test_a_new_list_alone_rebuilds_the_searchable_wordings(cyber):
    """Sync stores a record whose list changed with no new text (store.refresh_act, which refreshes what is
    derived from it): the rebuilt wordings search reads (revision 0012) follow the list, as `show` does."""
    from pipeline.retrieval.search import search

    def art3_rows() -> list[str]:
        with psycopg.connect(cyber) as c:
            return [r[0] for r in c.execute("SELECT r.text FROM rebuilt_articles r JOIN act_versions v USING "
                                            "(version_id) WHERE v.eli = %s AND r.article = '3'", (CYBER,))]

    words = "niezakłóconego świadczenia usług przez podmioty kluczowe lub podmioty ważne"
    _listing(cyber)
    assert art3_rows() == []  # no list: the edit of words is undetermined, the official text holds
    _listing(cyber, {"id": AMENDING, "date": "2026-04-03"})
    rows = art3_rows()
    assert len(rows) == 1 and words in rows[0]
    with psycopg.connect(cyber) as c:
        hits = search(c, words, None, as_of=AFTER, scope=Scope(acts=[CYBER]), settings=SearchSettings(k=5, mode="text"))
    assert any(h.article == "3" and h.official is False for h in hits)
    _listing(cyber)
    assert art3_rows() == []


def _change(op: str, unit: str, old: str | None = None, new: str | None = None, **kw) -> dict:
    return {"operation": op, "target_unit": unit, "old_words": old, "new_words": new, "not_current": None,
            "instruction": "w … wyrazy „…” zastępuje się wyrazami „…”", **kw}


def test_words_are_edited_only_where_found_exactly_once():
    text = "Art. 59. 1. Organ lub minister przekazuje zalecenia.\n2. Od zaleceń nie przysługują środki.\n" \
           "3. Podmiot informuje organ lub ministra o sposobie wykonania zaleceń."
    found = rebuild(text, [_change("delete_words", "ust. 3", "lub ministra")])
    assert found.applied == (0,) and found.text.endswith("3. Podmiot informuje organ o sposobie wykonania zaleceń.")
    # Not found in the unit (only in another), found twice, part of a longer word: undetermined, with why.
    undetermined = rebuild(text, [
        _change("replace_words", "", "zaleceń", "wskazań"),
        _change("replace_words", "ust. 3", "minister", "Prezes"),
        _change("replace_words", "ust. 1", "zalecenia.", "x"),
        _change("delete_words", "ust. 2", "zalece")])
    assert undetermined.applied == (2,)
    assert [why for _, why in undetermined.undetermined][1:] == [
        "the words „minister” are not in ust. 3", "the words „zalece” are not in ust. 2"]
    assert rebuild(text, [_change("replace_words", "", "zaleceń", "wskazań")]).undetermined[0][1] == \
        "the words „zaleceń” are in the article 2 times"
    # An edit whose wording is not known to be current, or that follows an earlier change not applied to its
    # unit, is not made; nor one not checked at all (no not_current key).
    later = rebuild(text, [_change("replace_words", "ust. 3", "Podmiot", "Organ", not_current="DU/1 not stored"),
                           _change("replace_words", "ust. 3", "organ", "urząd"),
                           {**_change("replace_words", "ust. 1", "Organ", "Urząd"), "not_current": "x"}])
    assert later.applied == () and later.undetermined[1][1].startswith("an earlier change to ust. 3 was not applied")
    unchecked = _change("replace_words", "ust. 1", "Organ", "Urząd")
    del unchecked["not_current"]
    assert rebuild(text, [unchecked]).applied == ()
    # Punctuation at a unit's end ("kropkę zastępuje się średnikiem"), words inserted, a sentence added.
    marks = rebuild(text, [_change("replace_words", "ust. 2", ".", ";"),
                           _change("insert_words", "ust. 1", "Organ", "właściwy"),
                           _change("add_sentence", "ust. 3 zdanie drugie", text="Przepis stosuje się odpowiednio."),
                           _change("add_sentence", "ust. 1 zdanie trzecie", text="Nie ma drugiego.")])
    assert marks.applied == (0, 1, 2) and marks.undetermined == ((3, "ust. 1 has 1 sentence(s): no place for its "
                                                                      "zdanie trzecie"),)
    assert marks.text.split("\n") == [
        "Art. 59. 1. Organ właściwy lub minister przekazuje zalecenia.", "2. Od zaleceń nie przysługują środki;",
        "3. Podmiot informuje organ lub ministra o sposobie wykonania zaleceń. Przepis stosuje się odpowiednio."]


# --- one article on a day (storage.articles.ArticleOnDay) ------------------------------------------------------

def test_an_article_added_by_a_later_act_carries_its_acts_currency_as_any_article(cyber):
    """`show` without --as-of of an article a stored act added ("po art. 5 dodaje się art. 5a") read its act's
    currency as of today's date, where every other article reads the current one (as_of None): the same
    act, two notes. One article on a day, one currency."""
    with Service(cyber, pool_size=1, warm=False) as law:
        added, own = law.show(CYBER, "5a"), law.show(CYBER, "1")
        assert added["official"] is False and added["in_force_basis"] == "other_act"
        assert added["currency"] == own["currency"] and added["currency"]["as_of"] is None
        dated = law.show(CYBER, "5a", as_of=AFTER)
        assert dated["currency"] == law.show(CYBER, "1", as_of=AFTER)["currency"]


def test_diff_reads_each_side_as_show_reads_it(cyber):
    """Each side of `diff` is the article `show --as-of` gives on that date: the same wording, official or
    rebuilt, with the same changes applied (one function: storage.articles.article_on)."""
    with Service(cyber, pool_size=1, warm=False) as law:
        for article in ("11", "5a", "1"):
            for before, after in ((BEFORE, AFTER), (AFTER, D(2027, 1, 1))):
                try:
                    d = law.diff(CYBER, article, from_date=before, to_date=after)
                except ArticleNotFound:
                    continue  # no change between the dates
                new = "".join(op["text"] for op in d["ops"] if op["op"] != "delete")
                old = "".join(op["text"] for op in d["ops"] if op["op"] != "insert")
                for text, side, day in ((new, d["to"], after), (old, d["from"], before)):
                    try:
                        shown = law.show(CYBER, article, as_of=day)
                    except ArticleNotFound:
                        assert text == ""
                        continue
                    assert text == shown["text"] and side["official"] == shown["official"]
