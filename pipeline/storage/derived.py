"""Derived data, declared once: what is worked out from the stored texts rather than read from one, in the
order each layer reads the ones before it, and the one way every writer brings it up to date.

A layer is worked out per stored text (an ``act_versions`` row) and says:
- which rules made it (``rules``, kept per text in ``marks.column``): a text marked with other rules, or
  none, is stale, and :func:`backfill` works it out again (the first command after an upgrade runs it);
- which texts a change of some acts touches (``touched``): when acts are stored, re-stored with a new
  record, or removed, those texts are worked out again by :func:`refresh`;
- which texts it must work out again when earlier layers have just worked some out (``follows``: given
  what each earlier layer worked out);
- how it works out one text (``refresh``), inside the caller's transaction.

Writers call :func:`refresh` once after a change (storage.store: a text or a record stored;
storage.store.remove_act, with :func:`touched` taken before the delete) and :func:`backfill` once after an
upgrade (storage.schema). A new layer is one more entry in :data:`LAYERS`; tests/test_derived.py checks
that whatever order acts are stored, re-stored and removed in, every layer equals a rebuild from scratch.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import psycopg

from pipeline.sources.instructions import read_all as read_instructions
from pipeline.sources.parse.model import Article
from pipeline.sources.delegations import READER as DELEGATIONS_READER
from pipeline.sources.prepare import CONTEXT_EXTRACTOR, legal_context
from pipeline.storage import amendments, context, delegations, legal_time, rebuilt
from pipeline.storage.db import one_row


@dataclass(frozen=True)
class Marks:
    """Where a layer keeps, per text, the rules that worked it out: ``table`` (one row per version) and its
    ``column``."""

    table: str
    column: str


def _none(conn: psycopg.Connection, acts: Sequence[str]) -> set[int]:
    return set()


Done = dict[str, set[int]]  # per layer, the texts it worked out in this pass


def _nothing_follows(conn: psycopg.Connection, done: Done) -> set[int]:
    return set()


@dataclass(frozen=True)
class Layer:
    name: str
    rules: str  # the rules now: a text marked otherwise is stale
    marks: Marks
    refresh: Callable[[psycopg.Connection, int], object]
    # The texts a change of these acts touches (asked after a store, before a removal).
    touched: Callable[[psycopg.Connection, Sequence[str]], set[int]] = _none
    # The texts to work out again because earlier layers just worked out some (per layer).
    follows: Callable[[psycopg.Connection, Done], set[int]] = _nothing_follows


def _stored_articles(conn: psycopg.Connection, version_id: int, wordings: str = "") -> list[Article]:
    return [Article(number, text, list(headings or []), repealed)
            for number, text, headings, repealed in conn.execute(
                "SELECT article, text, heading_path, repealed FROM articles WHERE version_id = %s " + wordings +
                "ORDER BY ordinal", (version_id,))]


def _refresh_context(conn: psycopg.Connection, version_id: int) -> None:
    """What a text's articles refer to and its definitions: read from its own text alone (the targets are
    resolved against the stored acts when read: the view article_references)."""
    base = one_row(conn.execute("SELECT base_eli FROM act_versions WHERE version_id = %s", (version_id,)))[0]
    context.write(conn, version_id, legal_context(_stored_articles(conn, version_id), base))


def _refresh_instructions(conn: psycopg.Connection, version_id: int) -> None:
    """The changes a text makes to other acts: read from its own text alone (which act each is to, and
    when it takes effect, are resolved when read: the view amendment_changes). One wording of an article
    is read (0: the only one, 1: the first of two)."""
    amendments.write(conn, version_id,
                     read_instructions(_stored_articles(conn, version_id, "AND wording IN (0, 1) ")))


def _elis(conn: psycopg.Connection, version_ids: set[int]) -> list[str]:
    if not version_ids:
        return []
    return [r[0] for r in conn.execute("SELECT DISTINCT eli FROM act_versions WHERE version_id = ANY(%s)",
                                       (sorted(version_ids),))]


def _timed_by(conn: psycopg.Connection, acts: Sequence[str]) -> set[int]:
    return {v for eli in acts for v in legal_time.versions_touched(conn, eli)}


def _amended_by(conn: psycopg.Connection, acts: Sequence[str]) -> set[int]:
    return set(rebuilt.versions_amended_by(conn, acts)) if acts else set()


def _time_follows(conn: psycopg.Connection, done: Done) -> set[int]:
    """Texts whose changes to other acts were read again: the texts of the acts they date or repeal."""
    return _timed_by(conn, _elis(conn, done.get("amendments", set())))


def _rebuilt_follows(conn: psycopg.Connection, done: Done) -> set[int]:
    """Texts whose time or changes were worked out again: their own wordings (their periods), and those of
    the texts their acts amend (a change's date is its article's date)."""
    timed = done.get("legal_time", set())
    return timed | _amended_by(conn, _elis(conn, timed | done.get("amendments", set())))


# In the order they read each other: first what a text alone says (its references, its changes to other
# acts, its delegations), then its time (which reads the repeals and dates other stored acts state for it), then the
# wordings rebuilt from the changes and their dates.
LAYERS: tuple[Layer, ...] = (
    # What each article refers to, the act's definitions (revision 0009).
    Layer("context", CONTEXT_EXTRACTOR, Marks("context_extractions", "extractor"), _refresh_context),
    # The changes a text makes to other acts (revision 0011).
    Layer("amendments", amendments.EXTRACTOR, Marks("amendment_extractions", "extractor"), _refresh_instructions),
    # The units that authorise an organ to issue an act (revision 0013).
    Layer("delegations", DELEGATIONS_READER, Marks("delegation_extractions", "reader"), delegations.refresh),
    # When each article is in force (revision 0010): from its own texts, its act's record, the rules other
    # stored acts state for it (the act introducing it) and the repeals they make.
    Layer("legal_time", legal_time.EXTRACTOR, Marks("version_times", "extractor"), legal_time.refresh,
          touched=_timed_by, follows=_time_follows),
    # The wordings after a text, rebuilt from the stored changes (revision 0012).
    Layer("rebuilt", rebuilt.REBUILDER, Marks("rebuilt_extractions", "rebuilder"), rebuilt.refresh,
          touched=_amended_by, follows=_rebuilt_follows),
)

# Refreshes of derived data go one at a time: two ingests may touch the same text (storage.legal_time's
# key, kept: a process of the previous release waits on the same lock).
REFRESH_LOCK = int.from_bytes(b"pl-time!", "big", signed=True)


def stale(conn: psycopg.Connection, layer: Layer) -> list[int]:
    """The stored texts whose ``layer`` the current rules have not worked out, in id order."""
    return [r[0] for r in conn.execute(
        f"SELECT v.version_id FROM act_versions v LEFT JOIN {layer.marks.table} x USING (version_id) "
        f"WHERE x.{layer.marks.column} IS DISTINCT FROM %s ORDER BY v.version_id", (layer.rules,))]


def any_stale(conn: psycopg.Connection) -> bool:
    """Whether any layer of any stored text waits for :func:`backfill` (one cheap query per layer)."""
    return any(one_row(conn.execute(
        f"SELECT EXISTS (SELECT 1 FROM act_versions v LEFT JOIN {layer.marks.table} x USING (version_id) "
        f"WHERE x.{layer.marks.column} IS DISTINCT FROM %s)", (layer.rules,)))[0] for layer in LAYERS)


Touched = dict[str, set[int]]


def touched(conn: psycopg.Connection, acts: Iterable[str]) -> Touched:
    """Per layer, the stored texts a change of ``acts`` touches, as the database stands now: after storing
    them, or before removing them (what a removed act touched is gone with it)."""
    acts = sorted(set(acts))
    return {layer.name: layer.touched(conn, acts) for layer in LAYERS}


def refresh(conn: psycopg.Connection, acts: Iterable[str] = (), *, before: Touched | None = None) -> dict[str, int]:
    """Bring every layer up to date after ``acts`` were stored or re-stored (``before``: what they touched
    before they were removed, from :func:`touched`), inside the caller's transaction: each layer works out
    again the texts the change touches and the ones it follows of those earlier layers just worked out,
    the texts of ``acts`` first (the others read them: the date of an amending act's repeal is its own
    time). How many texts each layer worked out."""
    acts = sorted(set(acts))
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (REFRESH_LOCK,))
    seeds = touched(conn, acts) if before is None else before
    own = _versions_of(conn, acts)
    done: Done = {}
    for layer in LAYERS:
        done[layer.name] = set()
        todo = _existing(conn, seeds.get(layer.name, set()) | layer.follows(conn, done))
        # The stored acts' own texts this layer has not worked out (a new text: what store did not write).
        todo |= _stale_among(conn, layer, own)
        while todo:
            for version_id in sorted(todo, key=lambda v: (v not in own, v)):
                layer.refresh(conn, version_id)
            done[layer.name] |= todo
            # What a stored act touches may be its own derived data: the rules a new text states for the act it
            # introduces are its time, worked out just now. Asked again until nothing new is touched.
            todo = set() if before is not None else \
                _existing(conn, layer.touched(conn, acts)) - done[layer.name]
    return {name: len(versions) for name, versions in done.items()}


def _stale_among(conn: psycopg.Connection, layer: Layer, version_ids: set[int]) -> set[int]:
    if not version_ids:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT v.version_id FROM act_versions v LEFT JOIN {layer.marks.table} x USING (version_id) "
        f"WHERE v.version_id = ANY(%s) AND x.{layer.marks.column} IS DISTINCT FROM %s",
        (sorted(version_ids), layer.rules))}


def _versions_of(conn: psycopg.Connection, acts: Sequence[str]) -> set[int]:
    if not acts:
        return set()
    return {r[0] for r in conn.execute("SELECT version_id FROM act_versions WHERE eli = ANY(%s)", (list(acts),))}


def _existing(conn: psycopg.Connection, version_ids: set[int]) -> set[int]:
    if not version_ids:
        return set()
    return {r[0] for r in conn.execute("SELECT version_id FROM act_versions WHERE version_id = ANY(%s)",
                                       (sorted(version_ids),))}


def _touched_by_others(conn: psycopg.Connection, layer: Layer, version_ids: set[int]) -> set[int]:
    """The texts that the acts of ``version_ids`` touch in ``layer``, their own texts aside."""
    found: set[int] = set()
    for eli in _elis(conn, version_ids):
        found |= layer.touched(conn, [eli]) - _versions_of(conn, [eli])
    return found


def backfill(conn: psycopg.Connection) -> int:
    """Work out every stale text of every layer, in the layers' order, one transaction a text (and what
    follows from it in the later layers); how many texts were worked out. The first command after an
    upgrade that changed a layer's rules runs it (storage.schema). A text another one touches (an act whose
    date or repeal another states) is worked out again after the others of its layer, which it reads.
    ``conn`` has no transaction open."""
    done: Done = {}
    for layer in LAYERS:
        with conn.transaction():
            todo = sorted(set(stale(conn, layer)) | layer.follows(conn, done))
        done[layer.name] = set()
        for round_ in (1, 2):
            for version_id in todo:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (REFRESH_LOCK,))
                    if conn.execute("SELECT 1 FROM act_versions WHERE version_id = %s FOR UPDATE",
                                    (version_id,)).fetchone():
                        layer.refresh(conn, version_id)
                        done[layer.name].add(version_id)
            if round_ == 1 and done[layer.name]:
                with conn.transaction():
                    todo = sorted(_touched_by_others(conn, layer, done[layer.name]))
    return sum(len(v) for v in done.values())
