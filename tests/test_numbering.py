"""One grammar of article numbers (pipeline.core.numbering): every number the parsers store is one that
every reader takes back: `pipeline show` / MCP get_article (canonical_article), a question that names it
(named_articles) and a citation of it in an answer (parse_citations)."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import run_cli
from support.corpus import parsed_act
from support.paths import ELI_MIRROR, require_mirror

from pipeline.answering.answer import cite, parse_citations
from pipeline.core.errors import UsageError
from pipeline.core.numbering import canonical_article, check_sequence, printed, sort_key
from pipeline.retrieval.named_articles import named_articles
from pipeline.storage import articles


def _mirror_texts() -> list:
    """One param per act with a text in the mirror (its HTML when it has one, as support.paths.mirror_text
    reads it). PDFs cost seconds each to parse (~45 s in all), so they are in the slow set."""
    acts = ELI_MIRROR / "acts"
    params = []
    for folder in sorted(p for p in acts.glob("*/*/*") if p.is_dir()):
        texts = [f for f in ("html", "pdf") if (folder / f"text.{f}").is_file() and (folder / f"text.{f}").stat().st_size]
        if texts:
            act = "/".join(folder.relative_to(acts).parts)
            params.append(pytest.param(act, id=act, marks=[pytest.mark.slow] if texts[0] == "pdf" else []))
    return params or [pytest.param(None, id="no-mirror")]


MIRROR_TEXTS = _mirror_texts()


@pytest.mark.parametrize("typed, number", [
    ("154", "154"), ("art. 151¹", "151^1"), ("Art. 151^1.", "151^1"), ("151^1", "151^1"), ("22¹c", "22^1c"),
    ("3a^1", "3a^1"), ("3a¹", "3a^1"), ("95ł", "95ł"), ("95Ł", "95ł"), ("19A", "19a"), ("22(1)", "22^1"),
    ("151 ^ 1", "151^1"), ("154 § 1 pkt 2", "154"), ("23 ust. 1", "23"), ("artykuł 5", "5"), ("artykułu 3a^1", "3a^1"),
])
def test_canonical_article_takes_a_number_as_typed(typed: str, number: str) -> None:
    assert canonical_article(typed) == number
    assert articles.canonical_article is canonical_article  # storage's name is the same function


@pytest.mark.parametrize("typed", ["", "art.", "abc", "15 1", "1abcd", "151^", "^1", "1234x5", "1 OR 1=1", "154a§"])
def test_canonical_article_refuses_what_is_no_number(typed: str) -> None:
    with pytest.raises(UsageError, match="is not an article number"):
        canonical_article(typed)


def test_canonical_article_refuses_a_number_that_is_not_text() -> None:
    with pytest.raises(UsageError, match="not int"):
        canonical_article(154)  # type: ignore[arg-type]


def test_the_order_of_letters_and_superscripts() -> None:
    numbers = ["3", "3a", "3a^1", "3a^2", "3b", "95", "95a", "95ł", "95m", "151", "151^1", "151^1a", "151^2", "152"]
    assert sorted(reversed(numbers), key=sort_key) == numbers
    assert all(p.startswith("gap:") for p in check_sequence(numbers))  # 3b -> 95: gaps, and only gaps


@pytest.mark.parametrize("act", MIRROR_TEXTS)
def test_every_stored_number_is_read_back_by_every_reader(act: str | None) -> None:
    require_mirror()
    numbers = [a.number for a in parsed_act(act).articles]
    assert numbers
    for number in numbers:
        assert canonical_article(number) == number
        assert canonical_article(f"art. {number}") == number
        assert parse_citations(f"Zob. {cite(act, number)}.") == [(act, number)]
        assert named_articles(f"Co mówi art. {number} tej ustawy?") == [(None, number)]


def test_the_mirror_holds_the_numbers_the_old_patterns_refused() -> None:
    # Without these the test above proves less: "3a^1" and "95ł" were "not an article number" to show.
    require_mirror()
    assert len(MIRROR_TEXTS) >= 29
    assert "3a^1" in {a.number for a in parsed_act("DU/2024/1513").articles}
    assert "95ł" in {a.number for a in parsed_act("DU/2024/1564").articles}


def test_show_prints_the_articles_the_parser_stored(scratch_url: str, mirror: Path) -> None:
    env = {"DATABASE_URL": scratch_url}
    done = run_cli("ingest", "--source", str(mirror), "--act", "DU/2024/1513", "--act", "DU/2024/1564", "--no-embed",
                   env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    for act, typed, number, begins in (
            ("DU/2024/1513", "3a^1", "3a^1", "Art. 3a^1. Świadczenie usług drogą elektroniczną w zakresie gier"),
            ("DU/2024/1513", "art. 3a¹", "3a^1", "Art. 3a^1. Świadczenie usług"),
            ("DU/2024/1564", "95ł", "95ł", "Art. 95ł.")):
        shown = run_cli("show", act, typed, env=env, timeout=120)
        assert shown.returncode == 0, shown.stderr
        # A person reads superscripts as printed ("3a¹"); --json keeps the canonical "3a^1".
        assert f"{act} art. {printed(number)} " in shown.stdout.splitlines()[0]
        assert printed(begins) in shown.stdout
