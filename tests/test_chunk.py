"""The chunker: one chunk per short article, overlapping parts for long ones, stable content hashes."""
from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from support.paths import require_mirror

from pipeline.sources.chunk import chunk_article, context_header, short_title, text_sha256
from pipeline.sources.parse.html import parse_html
from pipeline.sources.parse.model import Article

KP_2025 = ("Obwieszczenie Marszałka Sejmu Rzeczypospolitej Polskiej z dnia 14 lutego 2025 r. "
           "w sprawie ogłoszenia jednolitego tekstu ustawy - Kodeks pracy")
KP_2023 = ("Obwieszczenie Marszałka Sejmu Rzeczypospolitej Polskiej z dnia 16 czerwca 2023 r. "
           "w sprawie ogłoszenia jednolitego tekstu ustawy - Kodeks pracy")
ART_154 = Article(
    "154",
    "Art. 154. § 1. Wymiar urlopu wynosi:\n1) 20 dni – jeżeli pracownik jest zatrudniony krócej niż 10 lat;\n"
    "2) 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat.",
    ["DZIAŁ SIÓDMY Urlopy pracownicze", "Rozdział I Urlopy wypoczynkowe"],
)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _check_parts(article: Article, title: str, max_chars: int, overlap: int, units: list[str] | None = None) -> list:
    """The invariants every split article keeps; returns the chunks."""
    chunks = chunk_article(article, title, max_chars=max_chars, overlap=overlap)
    n = len(chunks)
    assert n > 1
    for i, c in enumerate(chunks, start=1):
        assert (c.article, c.part, c.part_count) == (article.number, i, n)
        assert len(c.text) <= max_chars + 1  # a part: an overlap, a space, a piece of max_chars - overlap
        bits = [b for b in (short_title(title), " / ".join(article.heading_path)) if b]
        header = " | ".join([*bits, f"Art. {article.number} (część {i}/{n})"])
        assert c.embed_text == f"{header}\n{c.text}"
        assert c.content_sha256 == hashlib.sha256(c.embed_text.encode()).hexdigest()
    assert chunks[0].text.startswith(f"Art. {article.number}.")
    for prev, cur in itertools.pairwise(chunks):
        # each part repeats the tail of the one before (at least half the overlap, from a word start)
        assert any(prev.text.endswith(cur.text[:k]) for k in range(overlap // 2, overlap + 1)), cur.text[:80]
    # no provision is cut in the middle (nor lost): each one is whole in some part
    for unit in units or article.text.split("\n"):
        assert any(_flat(unit) in _flat(c.text) for c in chunks), unit[:80]
    return chunks


def test_short_article_is_one_chunk_with_a_context_header() -> None:
    (c,) = chunk_article(ART_154, KP_2025)
    assert (c.article, c.part, c.part_count, c.text) == ("154", 1, 1, ART_154.text)
    assert c.embed_text == (
        "Ustawa - Kodeks pracy | DZIAŁ SIÓDMY Urlopy pracownicze / Rozdział I Urlopy wypoczynkowe | Art. 154\n"
        + ART_154.text
    )
    assert c.content_sha256 == hashlib.sha256(c.embed_text.encode("utf-8")).hexdigest()


def test_the_same_text_keeps_its_hash_in_the_next_consolidated_text() -> None:
    assert short_title(KP_2025) == short_title(KP_2023) == "Ustawa - Kodeks pracy"
    assert chunk_article(ART_154, KP_2025) == chunk_article(ART_154, KP_2023)
    # but a changed wording, heading or act is a different text to embed
    changed = Article("154", ART_154.text.replace("26 dni", "27 dni"), ART_154.heading_path)
    moved = Article("154", ART_154.text, ["DZIAŁ SIÓDMY Urlopy pracownicze"])
    hashes = {chunk_article(a, t)[0].content_sha256
              for a, t in ((ART_154, KP_2025), (changed, KP_2025), (moved, KP_2025), (ART_154, "Ustawa o czymś innym"))}
    assert len(hashes) == 4


def test_short_title_of_acts_and_announcements() -> None:
    assert short_title("Ustawa z dnia 6 czerwca 1997 r. Kodeks karny") == "Ustawa z dnia 6 czerwca 1997 r. Kodeks karny"
    assert short_title(
        "Obwieszczenie Marszałka Sejmu Rzeczypospolitej Polskiej z dnia 2 kwietnia 2024 r. w sprawie ogłoszenia "
        "jednolitego tekstu ustawy o prawach pacjenta i Rzeczniku Praw Pacjenta"
    ) == "Ustawa o prawach pacjenta i Rzeczniku Praw Pacjenta"
    assert short_title(None) == "" and short_title("") == ""
    assert context_header("", ART_154, 1, 1) == (
        "DZIAŁ SIÓDMY Urlopy pracownicze / Rozdział I Urlopy wypoczynkowe | Art. 154")
    assert context_header("", Article("5", "Art. 5. Tekst."), 2, 3) == "Art. 5 (część 2/3)"


def test_long_article_of_paragraphs_splits_between_paragraphs() -> None:
    paragraphs = [f"§ {i}. " + " ".join(f"wyraz{i}x{j}" for j in range(40)) + "." for i in range(1, 13)]
    article = Article("300", "Art. 300. " + "\n".join(paragraphs), ["Rozdział X Przepisy końcowe"])
    chunks = _check_parts(article, KP_2025, max_chars=1200, overlap=200)
    # every paragraph (~400 chars) fits whole in a part, and each part's new text begins with one
    for p in paragraphs:
        assert any(p in c.text for c in chunks)
    for prev, c in itertools.pairwise(chunks):
        # a part is: the overlap (tail of the previous part), then whole paragraphs only
        first_new = min((c.text.find(p) for p in paragraphs if c.text.find(p) > 0), default=-1)
        assert first_new > 0 and prev.text.endswith(c.text[:first_new].strip())
        assert c.text[first_new:] == "\n".join(p for p in paragraphs if p in c.text[first_new:])


def test_a_paragraph_longer_than_a_part_is_cut_at_sentence_ends() -> None:
    sentences = [f"Zdanie numer {i} " + "bardzo " * 20 + "długie." for i in range(30)]
    article = Article("7", "Art. 7. " + " ".join(sentences))
    chunks = _check_parts(article, "", max_chars=600, overlap=100, units=sentences)
    for c in chunks:
        assert c.text.endswith("długie.")


def test_chunk_size_must_leave_room() -> None:
    with pytest.raises(ValueError):
        chunk_article(ART_154, max_chars=100)


def test_real_long_articles_split_at_units() -> None:
    mirror = require_mirror()
    act = parse_html((mirror / "acts/DU/1997/553/text.html").read_bytes())  # Kodeks karny
    art_115 = next(a for a in act.articles if a.number == "115")  # the definitions: § 1 ... § 27
    assert len(art_115.text) > 4000 and art_115.text.count("\n§ ") > 15
    chunks = _check_parts(art_115, act.title or "", max_chars=1200, overlap=200)
    assert all(c.embed_text.startswith("Ustawa z dnia 6 czerwca 1997 r. Kodeks karny | ") for c in chunks)
    # each part after the overlap continues at a provision: "§ N." or a point "N)"
    for c in chunks[1:]:
        assert re.search(r"(^|\n| )(§ \d+[a-z]*\.|\d+[a-z]*\)) ", c.text)
    # every article of two real acts: parts within the limit, a part count consistent with the text
    for path in ("acts/DU/1997/553/text.html", "acts/DU/2024/581/text.html"):
        parsed = parse_html((mirror / path).read_bytes())
        for a in parsed.articles:
            parts = chunk_article(a, parsed.title or "")
            assert all(len(p.text) <= 1201 for p in parts), a.number
            assert (len(parts) == 1) == (len(a.text) <= 1200), a.number


def test_text_hash_follows_the_articles_not_the_bytes() -> None:
    a = [ART_154, Article("155", "Art. 155. Tekst.")]
    assert text_sha256(a) == text_sha256([Article(x.number, x.text, list(x.heading_path)) for x in a])
    assert text_sha256(a) != text_sha256(a[:1])
    assert text_sha256(a) != text_sha256([ART_154, Article("155", "Art. 155. Tekst.", repealed=True)])
    assert text_sha256(a) != text_sha256([ART_154, Article("155", "Art. 155. Tekst.", ["Rozdział 2"])])


def test_the_two_wordings_line_is_shown_but_not_searched() -> None:
    """The parser's line between two wordings of an article is in the chunk's text (readers, the answer
    model) and not in what is embedded and full-text indexed, nor in its pieces."""
    from pipeline.sources.chunk import chunk_pieces
    from pipeline.sources.parse.articles import TWO_WORDINGS

    now, later = "Art. 24. 1. Kto przesyła informację, podlega karze grzywny.", "Art. 24. (uchylony)"
    marked = Article("24", f"{now}\n{TWO_WORDINGS}\n{later}")
    (chunk,) = chunk_article(marked, "Ustawa o świadczeniu usług drogą elektroniczną")
    (plain,) = chunk_article(Article("24", f"{now}\n{later}"), "Ustawa o świadczeniu usług drogą elektroniczną")
    assert TWO_WORDINGS in chunk.text and TWO_WORDINGS not in chunk.embed_text
    assert (chunk.embed_text, chunk.content_sha256) == (plain.embed_text, plain.content_sha256)
    long = Article("24", "\n".join([now * 8, TWO_WORDINGS, later]))
    (long_chunk,) = chunk_article(long, "", max_chars=5000)
    pieces = chunk_pieces(long_chunk.embed_text, long_chunk.text)
    assert pieces and not any(TWO_WORDINGS in p.embed_text for p in pieces)
