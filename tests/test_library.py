"""The library under the CLI, used as a web service would use it (docs/python-api.md).

A service brings its own connections (a pool, psycopg.connect without pipeline's adapters), keeps
transactions of its own open around calls, and maps errors to HTTP statuses. The library's read
functions must never end a transaction they did not begin, work on any connection, and turn bad
input into UsageError with the connection still usable. Real PostgreSQL, the two-act corpus embedded
with the stand-in model.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import psycopg
import pytest
from support.corpus import ingestion
from support.paths import ELI_MIRROR, require_mirror
from embedding_stand_in import StandInEmbedder
from psycopg.pq import TransactionStatus

import pipeline
from pipeline.retrieval.search import Scope, SearchSettings
from pipeline.storage import articles
from pipeline.retrieval import search
from pipeline.core.errors import ArticleNotFound, PipelineError, UsageError

IDLE, INTRANS = TransactionStatus.IDLE, TransactionStatus.INTRANS
QUESTION = "Ile dni urlopu wypoczynkowego przysługuje po 10 latach pracy?"


@pytest.fixture()
def service_conn(stand_in_corpus_url):
    """A connection the way a service's pool makes it: plain psycopg, no pgvector adapters; an audit
    table of the service's own, in a temporary schema so the shared corpus stays as it was."""
    with psycopg.connect(stand_in_corpus_url) as conn:
        conn.execute("CREATE TEMP TABLE audit (q text)")
        conn.commit()
        yield conn


def test_search_works_on_a_connection_without_pgvector_adapters(service_conn):
    hits = search.search(service_conn, QUESTION, StandInEmbedder(), settings=SearchSettings(k=5))
    assert [h.act for h in hits][:1] and any((h.act, h.article) == ("DU/2025/277", "154") for h in hits)
    assert service_conn.info.transaction_status == IDLE  # began its own transaction, and ended it


def test_reads_keep_the_callers_open_transaction_and_its_work(service_conn):
    service_conn.execute("INSERT INTO audit VALUES ('before search')")
    assert service_conn.info.transaction_status == INTRANS
    hits = search.search(service_conn, QUESTION, StandInEmbedder(), settings=SearchSettings(k=3))
    found = articles.get_article(service_conn, "DU/2025/277", "154")
    gap = search.vector_gap(service_conn, StandInEmbedder().name)
    assert hits and found["article"] == "154" and gap is None
    assert service_conn.info.transaction_status == INTRANS  # still the caller's
    # search's LOCAL settings went with its savepoint: the caller's transaction is as it was
    assert service_conn.execute("SELECT current_setting('hnsw.ef_search', true)").fetchone()[0] in (None, "", "40")
    service_conn.commit()
    assert service_conn.execute("SELECT q FROM audit").fetchall() == [("before search",)]
    service_conn.commit()

    with service_conn.transaction():  # psycopg's own block: no explicit rollback() inside it
        service_conn.execute("INSERT INTO audit VALUES ('in a block')")
        assert search.search(service_conn, QUESTION, None, settings=SearchSettings(k=3, mode="text"))
    assert service_conn.execute("SELECT count(*) FROM audit").fetchone()[0] == 2
    service_conn.commit()


def test_bad_arguments_of_a_search_are_usage_errors(service_conn):
    for call, message in [
        (lambda: search.search(service_conn, None, None, settings=SearchSettings(mode="text")), "the question must be a string"),
        (lambda: search.search(service_conn, "urlop", None, scope=Scope(acts="DU/2025/277"), settings=SearchSettings(mode="text")), "acts must be a list"),
        (lambda: search.search(service_conn, "urlop", None, as_of=dt.datetime(2025, 6, 1, 12), settings=SearchSettings(mode="text")),
         "not a datetime"),
        (lambda: articles.get_article(service_conn, "DU/2025/277", "abc!"), "is not an article number"),
    ]:
        with pytest.raises(UsageError, match=message):
            call()
    # A superscript copied from a PDF as a trailing digit: not found, with the article meant.
    with pytest.raises(ArticleNotFound, match=r"has no art\. 1511 in the selected text \(did you mean art\. 151\^1\?\)"):
        articles.get_article(service_conn, "DU/2025/277", "1511")
    assert service_conn.info.transaction_status == IDLE


def test_article_lookups_check_their_date_too(service_conn):
    for bad in ("2025-07-01", "2025-13-01"):
        with pytest.raises(UsageError, match="as_of must be a date"):
            articles.get_article(service_conn, "DU/2025/277", "154", as_of=bad)
        with pytest.raises(UsageError, match="as_of must be a date"):
            articles.table_of_contents(service_conn, "DU/2025/277", as_of=bad)
    assert service_conn.info.transaction_status == IDLE


def test_readers_leave_an_idle_connection_idle(service_conn):
    articles.get_article(service_conn, "DU/2025/277", "154")
    articles.table_of_contents(service_conn, "DU/2025/277")
    articles.list_acts(service_conn)
    assert service_conn.info.transaction_status == IDLE  # nothing held open in a pool


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k must be"), ({"k": 100_000}, "k must be"), ({"query": "urlop\x00"}, "NUL"),
    ({"query": "  "}, "empty"), ({"mode": "fuzzy"}, "mode must be"), ({"as_of": "2025-01-01"}, "as_of must be"),
    ({"mode": "vector", "embedder": None}, "needs an embedder"), ({"acts": ["DU/1990/1"]}, "not in the database"), ({"acts": ["DU/1900/1"]}, "invalid act id"),
    # what a JSON body can carry: a lone surrogate ("\udc80"), a number for an act id
    ({"query": "urlop \udc80"}, "lone surrogate"), ({"acts": [581]}, "an act id is a string"),
])
def test_bad_input_is_a_usage_error_and_the_connection_stays_usable(service_conn, kwargs, message):
    call = {"query": QUESTION, "embedder": StandInEmbedder(), **kwargs}
    service_conn.execute("INSERT INTO audit VALUES ('pending')")
    with pytest.raises(PipelineError) as caught:  # UsageError, ActNotFound (a LookupError), InvalidActId
        search.search(service_conn, call.pop("query"), call.pop("embedder"), as_of=call.pop("as_of", None),
                      scope=Scope(acts=call.pop("acts", None)), settings=SearchSettings(**call))
    assert message in str(caught.value)
    assert service_conn.info.transaction_status == INTRANS  # not INERROR: the caller's work is intact
    assert service_conn.execute("SELECT count(*) FROM audit").fetchone()[0] == 1
    service_conn.rollback()


def test_a_connection_with_another_row_factory_reads_the_same(service_conn, stand_in_corpus_url):
    """A service's pool may hand out dict rows: the library reads by position whatever it is set to
    (list_acts gave the column names as values), and gives the connection back as it was."""
    from psycopg.rows import dict_row

    expected = (articles.list_acts(service_conn), articles.get_article(service_conn, "DU/2025/277", "154"),
                [h.to_dict() for h in search.search(service_conn, QUESTION, StandInEmbedder(), settings=SearchSettings(k=3))])
    with psycopg.connect(stand_in_corpus_url, row_factory=dict_row) as rows_as_dicts:
        got = (articles.list_acts(rows_as_dicts), articles.get_article(rows_as_dicts, "DU/2025/277", "154"),
               [h.to_dict() for h in search.search(rows_as_dicts, QUESTION, StandInEmbedder(), settings=SearchSettings(k=3))])
        assert rows_as_dicts.row_factory is dict_row
        assert rows_as_dicts.execute("SELECT 1 AS one").fetchone() == {"one": 1}
    assert got == expected


def test_a_failed_or_broken_connection_is_a_pipeline_error(service_conn):
    from pipeline.core.errors import ConnectionLost

    with pytest.raises(psycopg.errors.DivisionByZero):
        service_conn.execute("SELECT 1 / 0")
    with pytest.raises(UsageError, match="in a failed transaction .*: roll it back first"):
        articles.list_acts(service_conn)
    service_conn.rollback()
    assert articles.list_acts(service_conn)
    pid = service_conn.info.backend_pid
    with psycopg.connect(service_conn.info.dsn, autocommit=True) as admin:  # the server ends it (a restart)
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(ConnectionLost, match="the database connection failed"):
        search.search(service_conn, QUESTION, StandInEmbedder(), settings=SearchSettings(k=3))


def test_drain_queue_refuses_to_commit_the_callers_work(scratch_url):
    from pipeline.storage import db
    from pipeline.indexing import embed

    with db.connect(scratch_url) as conn:
        conn.execute("CREATE TEMP TABLE mine (x int)")
        conn.commit()
        conn.execute("INSERT INTO mine VALUES (42)")  # uncommitted: drain_queue commits its batches
        with pytest.raises(UsageError, match="no transaction open"):
            embed.drain_queue(conn, StandInEmbedder())
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM mine").fetchone()[0] == 0


def test_wrong_types_for_an_article_or_the_acts_of_an_answer_are_usage_errors(service_conn):
    from pipeline.answering.answer import ChatConfig, answer_question

    with pytest.raises(UsageError, match="an article number is a string such as '154'"):
        articles.get_article(service_conn, "DU/2025/277", 154)
    config = ChatConfig(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(UsageError, match="acts must be a list of act ids"):  # not "invalid act id 'D'"
        answer_question(service_conn, StandInEmbedder(), QUESTION, config, scope=Scope(acts="DU/2025/277"), offline=True)
    with pytest.raises(UsageError, match="k must be a whole number from 1 to 100 for an answer"):
        answer_question(service_conn, StandInEmbedder(), QUESTION, config, settings=SearchSettings(k=1000), offline=True)
    asked = answer_question(service_conn, StandInEmbedder(), QUESTION, config, scope=Scope(acts=None), offline=True)
    assert asked.to_dict()["fragments"]  # None is every act, as for search
    assert service_conn.info.transaction_status == IDLE


def test_an_error_quoting_a_huge_input_stays_short(service_conn):
    with pytest.raises(ArticleNotFound) as caught:
        articles.get_article(service_conn, "DU/2025/277", "9" * 10_000)
    assert len(str(caught.value)) <= 500 and str(caught.value).startswith("DU/2025/277 has no art. 999")


def test_ingest_refuses_a_connection_with_a_transaction_open(scratch_url, tmp_path: Path):
    require_mirror()
    from pipeline.storage import db

    with db.connect(scratch_url) as conn:
        articles.list_acts(conn)
        conn.execute("SELECT 1")  # a read left open, as a service's connection may be
        with pytest.raises(UsageError, match="no transaction open"):
            with ingestion(conn, scratch_url, archive_dir=tmp_path) as run:
                run.act("DU/2024/917", source_dir=ELI_MIRROR)
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM ingest_runs").fetchone()[0] == 0  # no run left "running"
        conn.rollback()
        with ingestion(conn, scratch_url, archive_dir=tmp_path) as run:
            done = run.act("DU/2024/917", source_dir=ELI_MIRROR)
        assert done.status == "new" and conn.info.transaction_status == IDLE
        assert conn.execute("SELECT status FROM ingest_runs").fetchall() == [("new",)]


def test_results_serialise_with_json_default(service_conn):
    hits = search.search(service_conn, QUESTION, StandInEmbedder(), as_of=dt.date(2026, 1, 1), settings=SearchSettings(k=2))
    text = json.dumps([h.to_dict() for h in search.with_currency(service_conn, hits)], default=pipeline.json_default)
    assert '"valid_from": "20' in text
    found = articles.get_article(service_conn, "DU/2025/277", "154")
    assert json.loads(json.dumps(found, default=pipeline.json_default))["article"] == "154"


def test_readme_python_example_runs(stand_in_corpus_url, embedding_stand_in):
    """docs/python-api.md "Functions by stage": its example, as written, against the corpus (stand-in
    model, no LLM)."""
    import re
    import subprocess
    import sys

    from support.paths import REPO

    doc = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Functions by stage"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code += "\nassert hits and art['article'] == '154' and asked.to_dict()['answer']\n"
    env = {**__import__("os").environ, "DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env(),
           "OPENROUTER_API_KEY": "", "ANSWER_BASE_URL": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed and {"act", "article", "valid_from"} <= set(printed[0])


# --- articles the question names ("art. 52 kp") ----------------------------------------------------

@pytest.mark.parametrize(("question", "named"), [
    ("art. 52 kp", [("DU/1974/141", "52")]),
    ("Co mówi art 30 kodeksu pracy?", [("DU/1974/141", "30")]),
    ("artykuł 154 § 1 pkt 2 Kodeksu pracy", [("DU/1974/141", "154")]),
    ("art. 151¹ k.p. i art. 22(1) kp", [("DU/1974/141", "151^1"), ("DU/1974/141", "22^1")]),
    ("art. 5 kc oraz art. 6 k.c.", [("DU/1964/93", "5"), ("DU/1964/93", "6")]),
    ("art. 12 kpa, art. 299 ksh, art. 148 kk", [("DU/1960/168", "12"), ("DU/2000/1037", "299"),
                                                ("DU/1997/553", "148")]),
    ("art. 23 ust. 1 ustawy o ochronie danych", [(None, "23")]),  # which act: only an act filter can say
    ("ile mam urlopu po 10 latach pracy", []),
])
def test_named_articles_are_read_from_the_question(question, named):
    from pipeline.retrieval.named_articles import named_articles

    assert named_articles(question) == named


def test_a_named_article_comes_first_and_is_answered_from_its_beginning(service_conn):
    from pipeline.answering.answer import ChatConfig, answer_question

    hits = search.search(service_conn, "art. 52 kp", StandInEmbedder(), settings=SearchSettings(k=5))
    assert [(h.act, h.article, h.named) for h in hits[:1]] == [("DU/2025/277", "52", True)]
    assert not any(h.named for h in hits[1:]) and len(hits) == 5
    spelled = search.search(service_conn, "Co mówi art 30 kodeksu pracy?", StandInEmbedder(), settings=SearchSettings(k=3))
    assert (spelled[0].act, spelled[0].article) == ("DU/2025/277", "30")
    # Without a code named, an act filter of one act says which: art. 21 of the patients' rights act.
    filtered = search.search(service_conn, "art. 21", StandInEmbedder(), scope=Scope(acts=["DU/2024/581"]), settings=SearchSettings(k=3))
    assert (filtered[0].act, filtered[0].article, filtered[0].named) == ("DU/2024/581", "21", True)
    # An act filter that leaves the named code out wins; a date before its stored text finds none.
    assert not any(h.named for h in search.search(service_conn, "art. 52 kp", StandInEmbedder(), scope=Scope(acts=["DU/2024/581"]), settings=SearchSettings(k=3)))
    assert not any(h.named for h in search.search(service_conn, "art. 52 kp", StandInEmbedder(), as_of=dt.date(2020, 1, 1), settings=SearchSettings(k=3)))
    # Asked, it is not refused (the question says which article), and the offline answer quotes it.
    config = ChatConfig(base_url="http://127.0.0.1:9/v1", api_key="k")
    asked = answer_question(service_conn, StandInEmbedder(), "art. 52 kp", config, offline=True).to_dict()
    assert asked["refused"] is False and asked["refusal"]["reason"] == "the question names art. 52 of DU/2025/277"
    # It cites the unit it quotes: the article's first point.
    assert asked["answer"].splitlines()[2].endswith("[DU/2025/277, art. 52 § 1 pkt 1]")
    assert "Pracodawca może rozwiązać umowę o pracę bez wypowiedzenia" in asked["answer"]
