"""Polish full-text search against a real embedded PostgreSQL (one server per module)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psycopg
import pytest
from support.database import create_database

from pipeline.storage import textsearch

SHARED = Path(os.environ.get("PIPELINE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


@pytest.fixture(scope="module")
def server_uri(server_url):
    """The run's embedded server (a server of its own cost the module ~3 CPU-s to initialise, start and
    stop; the dictionary files it reads are the installation's, shared by every server of it)."""
    textsearch.install_dictionary(textsearch.embedded_share_dir())
    return server_url


def fresh_db(server_uri: str, name: str) -> str:
    """A new database without the migrations (what the text search setup does is tested here)."""
    return create_database(server_uri, name, migrate=False)


@pytest.fixture(scope="module")
def conn(server_uri):
    with psycopg.connect(fresh_db(server_uri, "fts_main"), autocommit=True) as c:
        with c.transaction():
            assert textsearch.setup(c) == "ispell"
        yield c


def lexemes(conn: psycopg.Connection, text: str) -> set[str]:
    row = conn.execute("SELECT tsvector_to_array(to_tsvector('polish', %s))", (text,)).fetchone()
    return set(row[0])


def entries(dict_text: str, affix_text: str) -> list[tuple[str, str]]:
    """(word, flags) of each entry, in the file's order, the numbered flag sets (AF) read back."""
    sets = [line.split()[1] for line in affix_text.splitlines() if line.split()[:1] == ["AF"]][1:]
    out = []
    for line in dict_text.splitlines():
        word, _, number = line.partition("/")
        out.append((word, sets[int(number) - 1] if number else ""))
    return out


def test_convert_moves_nie_prefix_into_entries():
    # Lines as in hunspell-pl: "nie" is an unconditional cross-product prefix with flag b.
    aff = "SET UTF-8\nPFX b Y 1\nPFX b   0         nie       .\n\nSFX Y Y 1\nSFX Y   y  ego  y\n"
    dic = "2\nwykorzystany/bY\nurlop/N\n"
    dict_text, affix_text = textsearch.convert_hunspell(dic, aff)
    # Flag sets numbered, entries in word order: PostgreSQL then sorts them once, and finds them
    # presorted (a quarter faster to load); neither changes what the dictionary says.
    assert dict_text.splitlines() == ["niewykorzystany/2", "urlop/1", "wykorzystany/2"]
    assert entries(dict_text, affix_text) == [("niewykorzystany", "Y"), ("urlop", "N"), ("wykorzystany", "Y")]
    assert "PFX" not in affix_text
    lines = affix_text.splitlines()
    assert lines.index("AF 2") < lines.index("SFX Y   y  ego  y")


def test_convert_drops_the_bare_words_that_change_no_lexeme():
    aff = "SET UTF-8\nSFX A Y 1\nSFX A   0  a  .\n"
    # "kota": bare, but rule A derives it from "kot" (ispell gives both): kept. "Kot": found anyway as the
    # flagged "kot". "ale": nothing derives it, so without it `simple` gives "ale", as ispell did.
    dic = "4\nkot/A\nkota\nKot\nale\n"
    assert entries(*textsearch.convert_hunspell(dic, aff)) == [("kot", "A"), ("kota", "")]
    # A source that numbers its flag sets itself keeps its entries and numbers as they are.
    numbered = "SET UTF-8\nAF 1\nAF A\nSFX A Y 1\nSFX A   0  a  .\n"
    dict_text, _ = textsearch.convert_hunspell("3\nkot/1\nkota\nale\n", numbered)
    assert dict_text.splitlines() == ["kot/1", "kota", "ale"]


def test_install_dictionary_is_idempotent_and_fast(tmp_path):
    share = tmp_path / "share"
    (share / "tsearch_data").mkdir(parents=True)
    assert textsearch.install_dictionary(share) is True
    started = time.perf_counter()
    assert textsearch.install_dictionary(share) is False
    assert time.perf_counter() - started < 0.5
    tsd = share / "tsearch_data"
    installed = set(entries((tsd / "polish.dict").read_text("utf-8"), (tsd / "polish.affix").read_text("utf-8")))
    assert {("urlop", "NQsT"), ("niezdolność", "MN")} <= installed
    assert not any(line.startswith("PFX b") for line in (tsd / "polish.affix").read_text("utf-8").splitlines())
    stop = (tsd / "polish.stop").read_text("utf-8").split()
    assert stop == sorted(stop, key=str.encode) and "się" in stop
    with pytest.raises(FileNotFoundError, match="share directory not found"):
        textsearch.install_dictionary(tmp_path / "missing")


def test_base_forms(conn):
    assert {"urlop", "pracownik"} <= lexemes(conn, "urlopu pracownika")
    assert lexemes(conn, "dni") == {"dzień"}
    assert lexemes(conn, "osoby bliskiej") == {"osoba", "bliski"}
    # Negation stays in the base form (PostgreSQL's prefix quirk would add "zdolność").
    assert lexemes(conn, "niezdolności") == {"niezdolność"}
    # Stop words are dropped as typed, even where ispell would read "mam" as "mama".
    assert lexemes(conn, "Jaki mam okres, jeśli od lat") == {"okres", "lat", "lato"}


def test_words_left_out_of_the_file_keep_their_lexemes(conn):
    """The installed file leaves out bare words that only stand for themselves (convert_hunspell): the
    configuration's `simple` gives them as ispell did. A bare word a rule derives from another entry stays."""
    words = {line.partition("/")[0] for line in
             (textsearch.embedded_share_dir() / "tsearch_data" / "polish.dict").read_text("utf-8").splitlines()}
    assert "przydzielając" not in words and lexemes(conn, "przydzielając") == {"przydzielając"}
    assert "łaknienia" in words and lexemes(conn, "łaknienia") == {"łaknienia", "łaknienie"}


def test_question_form_matches_article_form(conn):
    article = "Wymiar urlopu wynosi 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat."
    question = "Ile dni urlopu mi przysługuje?"
    matched, strict = conn.execute(
        "SELECT to_tsvector('polish', %s) @@ polish_or_query(%s),"
        " to_tsvector('polish', %s) @@ plainto_tsquery('polish', 'dokumentacji pracowników')",
        (article, question, "dokumentacja pracownika"),
    ).fetchone()
    assert matched and strict
    # simple keeps forms apart: the same pair does not match there.
    assert not conn.execute(
        "SELECT to_tsvector('simple', 'dokumentacja pracownika') @@ plainto_tsquery('simple', 'dokumentacji')"
    ).fetchone()[0]
    assert conn.execute("SELECT polish_or_query('i w się')").fetchone()[0] is None


def test_setup_is_repeatable_inside_a_transaction(conn):
    with conn.transaction():
        assert textsearch.setup(conn) == "ispell"
        assert textsearch.setup(conn) == "ispell"
    dicts = conn.execute(
        "SELECT count(*) FROM pg_ts_dict WHERE dictname IN ('polish_ispell', 'polish_stop')"
    ).fetchone()[0]
    assert dicts == 2


def test_fallback_without_dictionary_files_then_upgrade(server_uri):
    with psycopg.connect(fresh_db(server_uri, "fts_fallback"), autocommit=True) as c:
        notices: list[str] = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        with c.transaction():
            c.execute("SET LOCAL pipeline.polish_dict_file = 'no_such_polish_dict'")
            assert textsearch.setup(c) == "simple"
            assert textsearch.setup(c) == "simple"
        assert any("no_such_polish_dict" in n for n in notices)
        assert c.execute("SELECT to_tsvector('polish', 'Urlopu Pracownika')::text").fetchone()[0] == (
            "'pracownika':2 'urlopu':1"
        )
        assert c.execute(
            "SELECT to_tsvector('polish', 'dni urlopu wypoczynkowego') @@ polish_or_query('Ile dni urlopu?')"
        ).fetchone()[0]
        # Once the files are there, rerunning the setup switches the same database to ispell.
        assert textsearch.setup(c) == "ispell"
        assert c.execute("SELECT to_tsvector('polish', 'urlopu')::text").fetchone()[0] == "'urlop':1"


def test_load_thesaurus():
    pairs = textsearch.load_thesaurus()
    assert 40 <= len(pairs) <= 100
    terms = [t for t, _ in pairs]
    assert len(terms) == len(set(terms))
    assert dict(pairs)["nadgodziny"].startswith("godziny nadliczbowe")
    assert dict(pairs)["szef"].startswith("pracodawca")


def test_expand_query_matches_inflected_terms(conn):
    expanded = textsearch.expand_query(conn, "Czy moja mama może być ze mną w gabinecie?")
    assert "osoba bliska" in expanded
    assert {"osoba", "bliski"} <= lexemes(conn, expanded)
    assert "pracodawca" in textsearch.expand_query(conn, "Czy mogę odmówić szefowi?")
    unchanged = "Ile dni urlopu mi przysługuje?"
    assert textsearch.expand_query(conn, unchanged) == unchanged


def test_patient_question_finds_article_21(conn):
    html = SHARED / "eli" / "acts" / "DU" / "2024" / "581" / "text.html"
    if not html.is_file():
        if os.environ.get("PIPELINE_SHARED"):
            pytest.fail(f"ELI mirror missing: {html}")
        pytest.skip("ELI mirror not available")
    import lxml.html

    root = lxml.html.parse(str(html), lxml.html.HTMLParser(encoding="utf-8")).getroot()
    articles = {
        div.get("data-id"): " ".join(div.text_content().split())
        for div in root.xpath('//div[contains(concat(" ", @class, " "), " unit_arti ")]')
        if "pass_" not in (div.get("id") or "")
    }
    question = "Czy moja mama może być ze mną w gabinecie podczas badania?"
    plain, expanded = conn.execute(
        "SELECT to_tsvector('polish', %(a)s) @@ polish_or_query(%(q)s),"
        " to_tsvector('polish', %(a)s) @@ polish_or_query(%(e)s)",
        {"a": articles["arti_21"], "q": question, "e": textsearch.expand_query(conn, question)},
    ).fetchone()
    # Only the thesaurus (mama -> osoba bliska) connects the question to the statute's wording.
    assert (plain, expanded) == (False, True)
