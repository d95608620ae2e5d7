"""Search and ask on a date read the article's wording on that date: rebuilt from the stored changes where they
make one (revision 0012, pipeline.storage.rebuilt), marked as not official; the official text before.

DU/2018/1000 art. 108 (the data protection act, 2018) gets a second ustęp from DU/2019/730 art. 161 pkt 6, in
force from 2019-05-04 (docs/amendments.md). Both acts are ingested from the mirror as `pipeline ingest` does
(the amended act first: storing the amending act re-works its target), embedded with the stand-in model.
"""
from __future__ import annotations

import datetime as dt
import json
import re

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import embed_in_bulk, ingestion
from support.database import create_database
from support.paths import ELI_MIRROR, require_mirror

try:
    from chat_stand_in import ChatStandIn
    from embedding_stand_in import MODEL, StandInEmbedder
except ImportError:  # tests/ imported as a package
    from tests.chat_stand_in import ChatStandIn
    from tests.embedding_stand_in import MODEL, StandInEmbedder

from pipeline.answering.citations import REBUILT_MARK
from pipeline.retrieval.search import Scope, SearchSettings, search
from pipeline.storage import db

AFTER, BEFORE = dt.date(2019, 6, 1), dt.date(2019, 1, 1)
# Words only the rebuilt wording of art. 108 has (its ust. 2, added by DU/2019/730).
REBUILT_WORDS = "toczącym się postępowaniem w sprawie nałożenia administracyjnej kary pieniężnej"
QUESTION = "Czy grozi kara za utrudnianie postępowania w sprawie nałożenia administracyjnej kary pieniężnej?"


@pytest.fixture(scope="module")
def amended(server_url) -> str:
    require_mirror()
    url = create_database(server_url, "rebuilt_search")
    with psycopg.connect(url) as conn, ingestion(conn, url, model=MODEL) as ingest:
        for act in ("DU/2018/1000", "DU/2019/730"):
            assert ingest.act(act, source_dir=ELI_MIRROR).status == "new"
    return url


def _found(url: str, query: str, as_of: dt.date | None) -> list:
    with psycopg.connect(url) as conn:
        return search(conn, query, None, as_of=as_of, scope=Scope(acts=["DU/2018/1000"]), settings=SearchSettings(k=10, mode="text"))


def test_rebuilt_chunks_are_queued_by_content_hash_and_searched_on_their_dates(amended):
    with psycopg.connect(amended) as conn:
        rows = conn.execute(
            "SELECT r.article, r.in_force_from, r.in_force_until, r.rebuilt_from, c.content_sha256, "
            "EXISTS (SELECT 1 FROM embedding_queue q WHERE q.content_sha256 = c.content_sha256 AND q.model = %s) "
            "FROM rebuilt_articles r JOIN chunks c USING (rebuilt_id) WHERE r.article = '108'", (MODEL,)).fetchall()
        assert rows, "art. 108 has no rebuilt wording"
        for article, start, until, made_by, sha, queued in rows:
            assert (start, until) == (dt.date(2019, 5, 4), None)
            assert {c["act"] for c in made_by} == {"DU/2019/730"}
            assert queued, "a rebuilt chunk's text is not on the embedding queue"
    after = _found(amended, REBUILT_WORDS, AFTER)
    hit = next(h for h in after if h.article == "108")
    assert hit.official is False and REBUILT_WORDS.split()[0] in hit.text
    assert {c["unit"] for c in hit.rebuilt_from} == {"art. 161 pkt 6"}
    assert [h.article for h in after].count("108") == 1  # never both wordings
    # Without a date: today, after the change.
    assert next(h for h in _found(amended, REBUILT_WORDS, None) if h.article == "108").official is False
    before = _found(amended, REBUILT_WORDS, BEFORE)
    assert all(REBUILT_WORDS.split()[0] not in h.text for h in before)  # the rebuilt-only words are not there
    official = next(h for h in _found(amended, "udaremnia lub utrudnia kontrolującemu prowadzenie kontroli", BEFORE)
                    if h.article == "108")
    assert official.official is True and official.rebuilt_from is None and "2. Tej samej karze" not in official.text


def test_the_cli_and_sql_say_which_wording_a_hit_is(amended):
    env = {"DATABASE_URL": amended}
    found = json.loads(run_cli("search", REBUILT_WORDS, "--mode", "text", "--act", "DU/2018/1000", "--as-of",
                               AFTER.isoformat(), "--json", env=env).stdout)
    hit = next(h for h in found if h["article"] == "108")
    assert hit["official"] is False and hit["rebuilt_from"][0]["act"] == "DU/2019/730"
    assert list(hit)[-2:] == ["official", "rebuilt_from"]  # appended last
    with psycopg.connect(amended) as conn:
        rows = conn.execute("SELECT article, official, rebuilt_from FROM search_chunks(%s, mode => 'text', "
                            "as_of => %s, acts => ARRAY['DU/2018/1000'])", (REBUILT_WORDS, AFTER)).fetchall()
    assert ("108", False) in [(a, o) for a, o, _ in rows]


def test_an_answer_citing_a_rebuilt_wording_says_so(amended, embedding_stand_in):
    with db.connect(amended) as conn:  # with the vector types registered
        embed_in_bulk(conn, StandInEmbedder())
    env = {"DATABASE_URL": amended, **embedding_stand_in.env()}
    args = ("ask", QUESTION, "--act", "DU/2018/1000", "-k", "3")
    offline = run_cli(*args, "--as-of", AFTER.isoformat(), "--offline", "--json", env=env)
    assert offline.returncode == 0, offline.stderr
    answer = json.loads(offline.stdout)
    assert re.search(r"\[DU/2018/1000, art\. 108[^\]]*\] " + re.escape(REBUILT_MARK), answer["answer"]), answer["answer"]
    assert {c["article"]: c["official"] for c in answer["citations"]}["108"] is False
    early = json.loads(run_cli(*args, "--as-of", BEFORE.isoformat(), "--offline", "--json", env=env).stdout)
    assert REBUILT_MARK not in early["answer"]
    assert all(c["official"] for c in early["citations"])
    reply = "Tak, grzywna, kara ograniczenia wolności albo pozbawienia wolności [DU/2018/1000, art. 108]."
    with ChatStandIn(reply) as server:
        shown = run_cli(*args, "--as-of", AFTER.isoformat(), env={
            **env, "ANSWER_BASE_URL": server.base_url, "ANSWER_MODEL": "test-model", "ANSWER_API_KEY": "sk-test"})
    assert shown.returncode == 0, shown.stderr
    assert "[DU/2018/1000, art. 108] " + REBUILT_MARK in shown.stdout
    # The model was told the fragment is no official text.
    user = server.requests[0].body["messages"][1]["content"]
    assert "[DU/2018/1000, art. 108]" in user and "brzmienie odtworzone ze zmian wprowadzonych przez DU/2019/730" in user


def test_the_search_page_marks_a_rebuilt_hit(amended):
    from starlette.testclient import TestClient

    from pipeline import Service
    from pipeline.interfaces.web import build_app

    with Service(amended, embedder=StandInEmbedder(), warm=False) as law:
        client = TestClient(build_app(law, warm=False), base_url="http://127.0.0.1:8000")
        after = client.get("/search", params={"q": REBUILT_WORDS, "act": "DU/2018/1000", "as_of": AFTER.isoformat()})
        before = client.get("/search", params={"q": "udaremnia lub utrudnia kontrolującemu prowadzenie kontroli",
                                               "act": "DU/2018/1000", "as_of": BEFORE.isoformat()})
    assert after.status_code == 200 and before.status_code == 200
    assert "Brzmienie odtworzone ze zmian (DU/2019/730 art. 161 pkt 6)" in after.text
    assert "Brzmienie odtworzone" not in before.text


def test_removing_the_amending_act_removes_the_rebuilt_wordings(server_url):
    require_mirror()
    url = create_database(server_url, "rebuilt_remove")
    with psycopg.connect(url) as conn, ingestion(conn, url) as ingest:
        for act in ("DU/2019/730", "DU/2018/1000"):  # the other order: the amended act reads what is stored
            assert ingest.act(act, source_dir=ELI_MIRROR).status == "new"
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM rebuilt_articles WHERE article = '108'").fetchone()[0] == 1
    removed = run_cli("remove", "DU/2019/730", "--yes", env={"DATABASE_URL": url})
    assert removed.returncode == 0, removed.stderr
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM rebuilt_articles").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM chunks WHERE rebuilt_id IS NOT NULL").fetchone()[0] == 0
    assert next(h for h in _found(url, "udaremnia lub utrudnia kontrolującemu", AFTER) if h.article == "108").official
