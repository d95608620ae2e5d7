"""Rules that used to be written twice (and disagreed) now live in one place: each is tested here once."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from support.cli import run_cli

from pipeline.core.act_id import ActId, act_id_from_path, acts_in
from pipeline.core.config import env_number
from pipeline.core.errors import ConfigError, EmbedderError, InvalidActId, PipelineError, UsageError
from pipeline.core.files import write_atomic
from pipeline.sources.parse.articles import is_repealed, split_wordings
from pipeline.sources.parse.html import parse_html
from pipeline.sources.parse.model import Article
from pipeline.core.numbering import expand_range, split_range
from pipeline.core.redact import redact_url, scrub


def _html(*articles: tuple[str, str]) -> bytes:
    """A minimal ELI text.html holding the given (label, text) article units."""
    units = "".join(
        f'<div class="unit unit_arti"><h3><b>{label}</b></h3><div class="unit-inner"><div>{text}</div></div></div>'
        for label, text in articles
    )
    return f'<html><body><section id="_001"><h2>Treść ustawy</h2>{units}</section></body></html>'.encode()


# A bare label ("" after "Art. 266–280.") holds no provision either: Kodeks pracy prints one for articles
# its division no longer includes, with only a footnote.
@pytest.mark.parametrize("content", ["(uchylony)", "(uchylone).", " (utracił moc) ", "(utraciły moc)", "", " \n"])
def test_repeal_markers(content: str) -> None:
    assert is_repealed(content)


@pytest.mark.parametrize("content", ["(pominięte)", "Pracownik (uchylony) ma prawo", "1)"])
def test_not_repealed(content: str) -> None:
    assert not is_repealed(content)


def test_html_knows_every_repeal_marker_the_pdf_parser_knows() -> None:
    # The HTML parser used to know only "(uchylony)" and its forms.
    parsed = parse_html(_html(("Art. 1.", "Tekst."), ("Art. 2.", "(utracił moc)"), ("Art. 3-5.", "(uchylone)")))
    assert [(a.number, a.repealed) for a in parsed.articles] == [
        ("1", False), ("2", True), ("3", True), ("4", True), ("5", True)]


def test_html_expands_superscript_ranges_like_the_pdf_parser() -> None:
    parsed = parse_html(_html(("Art. 1.", "Tekst."), ("Art. 1<sup>1</sup>-1<sup>3</sup>.", "(uchylone)")))
    assert [a.number for a in parsed.articles] == ["1", "1^1", "1^2", "1^3"]


@pytest.mark.parametrize(("first", "last", "numbers"), [
    ("12", "14", ["12", "13", "14"]),
    ("67^1", "67^3", ["67^1", "67^2", "67^3"]),
    ("289", "290^1", ["289", "290", "290^1"]),
    ("14", "12", []),
    ("5a", "7", []),
])
def test_expand_range(first: str, last: str, numbers: list[str]) -> None:
    assert expand_range(first, last) == numbers
    assert split_range(f"{first}–{last}") == numbers


def test_an_article_printed_twice_in_a_row_becomes_two_wordings() -> None:
    warnings: list[str] = []
    split = split_wordings([Article("5", "Art. 5. Stary.", repealed=False), Article("5", "Art. 5. (uchylony)", repealed=True),
                            Article("6", "Art. 6. X.")], warnings)
    assert [(a.number, a.text, a.repealed, a.wording) for a in split] == [
        ("5", "Art. 5. Stary.", False, 1), ("5", "Art. 5. (uchylony)", True, 2), ("6", "Art. 6. X.", False, 0)]
    assert warnings == ["art. 5: two wordings (now, and after an amendment): kept as two wordings"]


def test_a_paragraph_printed_twice_in_a_row_makes_two_wordings_and_others_do_not() -> None:
    warnings: list[str] = []
    twice = Article("5", "Art. 5. § 1. Stare.\n1) punkt;\n§ 1. Nowe.\n§ 2. Dalej.\n§ 2^1. X.\n§ 3. Y.")
    once = Article("6", "Art. 6. § 1. A.\n§ 2. B, o którym mowa w\n§ 1. C.")  # not in a row: § 2 between
    split = split_wordings([twice, once], warnings)
    assert [(a.number, a.wording, a.text) for a in split] == [
        ("5", 1, "Art. 5. § 1. Stare.\n1) punkt;\n§ 2. Dalej.\n§ 2^1. X.\n§ 3. Y."),
        ("5", 2, "Art. 5. § 1. Nowe.\n§ 2. Dalej.\n§ 2^1. X.\n§ 3. Y."),
        ("6", 0, "Art. 6. § 1. A.\n§ 2. B, o którym mowa w\n§ 1. C.")]
    assert warnings == ["art. 5 § 1: two wordings (now, and after an amendment): kept as two wordings of the article"]


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://pipeline:pw-secret@localhost:5432/law", "postgresql://pipeline:***@localhost:5432/law"),
    ("http://user:p@ss@host:11434", "http://user:***@host:11434"),
    ("postgresql:///law?host=/tmp/x", "postgresql:///law?host=/tmp/x"),
    # issue 49: a password in the query, and libpq's conninfo form, were shown as given
    ("postgresql://u@/law?host=/tmp/x&password=pw-secret&sslpassword=k", "postgresql://u@/law?host=/tmp/x&password=***&sslpassword=***"),
    ("host=db user=u password=pw-secret dbname=law", "host=db user=u password=*** dbname=law"),
    ("host=db password = 'pw \\' secret' port=5432", "host=db password = *** port=5432"),
    ("cannot connect to the database (postgresql://u:pw@h/law?PASSWORD=pw-secret): refused",
     "cannot connect to the database (postgresql://u:***@h/law?PASSWORD=***): refused"),
    ("password authentication failed for user \"u\"", "password authentication failed for user \"u\""),
])
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_scrub_removes_given_secrets_and_key_shapes() -> None:
    assert scrub("key MYSECRET42 and sk-abcdef123456 rejected", "MYSECRET42", None) == "key *** and *** rejected"


@pytest.mark.parametrize(("env", "kind", "kwargs", "value"), [
    ({}, int, {}, None),
    ({"N": " 7 "}, int, {}, 7),
    ({"N": "0"}, float, {"allow_zero": True}, 0.0),
    ({"N": "2.5"}, float, {}, 2.5),
])
def test_env_number_reads(env: dict, kind: type, kwargs: dict, value: object) -> None:
    assert env_number(env, "N", kind, **kwargs) == value


@pytest.mark.parametrize(("raw", "kind", "message"), [
    ("abc", int, "N must be a positive integer, got 'abc'"),
    ("0", int, "N must be a positive integer, got '0'"),
    ("-1", float, "N must be a positive number, got '-1'"),
    ("nan", float, "N must be a positive number, got 'nan'"),
    ("inf", float, "N must be a positive number, got 'inf'"),
])
def test_env_number_rejects_with_one_line(raw: str, kind: type, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        env_number({"N": raw}, "N", kind)
    assert str(err.value) == message


def test_env_number_raises_the_callers_error_type() -> None:
    with pytest.raises(EmbedderError, match="seconds"):
        env_number({"T": "x"}, "T", what="a positive number of seconds", error=EmbedderError)


def test_a_bad_chunk_size_in_the_environment_is_a_one_line_error() -> None:
    # Checked before the database is opened: the URL names no server.
    done = run_cli("ingest", "--act", "DU/2025/277",
                   env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none", "CHUNK_CHARS": "many"})
    assert done.returncode == 1
    assert done.stderr.strip() == "Error: CHUNK_CHARS must be a positive integer, got 'many'"


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"old")
    write_atomic(target, b"new", mode=0o644)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["a.txt"]  # no temporary file left behind


def test_write_atomic_gives_what_open_would_by_default(tmp_path: Path) -> None:
    old = os.umask(0o027)  # restored below; this test's process is single-threaded here
    try:
        write_atomic(tmp_path / "a.txt", b"x")
        (tmp_path / "b.txt").write_bytes(b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o640


def test_write_atomic_leaves_nothing_when_the_folder_is_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "missing" / "a.txt", b"x")
    assert os.listdir(tmp_path) == []


def test_acts_in_lists_the_mirror_in_id_order(mirror: Path) -> None:
    found = acts_in(mirror)
    assert found == sorted(found) and ActId("DU", 2025, 277) in found
    assert all((mirror / "acts" / a.path / "meta.json").is_file() for a in found)


def test_acts_in_an_empty_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no acts in"):
        acts_in(tmp_path)


@pytest.mark.parametrize(("name", "act"), [
    ("D20250277.pdf", "DU/2025/277"), ("DU_2024_581.html", "DU/2024/581"),
    ("x/acts/MP/2023/5/text.pdf", "MP/2023/5"),
])
def test_act_id_from_file_names(name: str, act: str) -> None:
    assert str(act_id_from_path(Path(name))) == act


def test_unknown_file_name_is_an_invalid_act_id() -> None:
    with pytest.raises(InvalidActId, match="pass --act"):
        act_id_from_path(Path("ustawa.pdf"))


def test_every_user_facing_error_is_a_pipeline_error() -> None:
    from pipeline.answering.answer import AnswerError
    from pipeline.storage.articles import ArticleNotFound
    from pipeline.storage.db import DatabaseError
    from pipeline.retrieval.evaluate import EvalError
    from pipeline.sources.fetch import FetchError
    from pipeline.indexing.ingest import IngestError
    from pipeline.sources.parse import ParseError

    for error in (AnswerError, ArticleNotFound, DatabaseError, EvalError, FetchError, IngestError, ParseError,
                  EmbedderError, InvalidActId, ConfigError, UsageError):
        assert issubclass(error, PipelineError), error
