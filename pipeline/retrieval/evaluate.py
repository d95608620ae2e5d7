"""Retrieval evaluation over question files (the format of shared/eval): recall@k, MRR, refusals."""
from __future__ import annotations

import json
from collections.abc import Mapping
import re
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pipeline.storage.articles import canonical_article
from pipeline.storage.db import one_row
from pipeline.core.act_id import parse_act_id
from pipeline.embedders import Embedder, sparse_head
from pipeline.core.errors import EvalError
from pipeline.retrieval.refusal import decide
from pipeline.retrieval.search import MODES, Hit, SearchSettings, profile, search, search_gaps

ID_SPLITS = ("all", "odd", "even")


@dataclass
class Question:
    id: str
    question: str
    expect: list[tuple[str, str]]  # (act, article)
    answerable: bool


@dataclass
class QuestionResult:
    id: str
    question: str
    answerable: bool
    in_corpus: bool  # an act of some expected article is ingested (a hit on any of them counts)
    ranks: dict[str, int | None] = field(default_factory=dict)  # mode -> rank of the first gold article
    top_similarity: float | None = None
    refused: bool | None = None  # by pipeline.retrieval.refusal.decide on the hybrid hits (as `ask` decides)
    refusal_reason: str | None = None


def load_questions(path: Path) -> list[Question]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror}") from exc
    questions = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise TypeError(f"expected a JSON object, got {type(row).__name__}")
            expect = [(str(parse_act_id(e["act"])), canonical_article(str(e["art"]))) for e in row.get("expect", [])]
            q = Question(str(row.get("id", f"line-{n}")), str(row["question"]), expect, bool(row.get("answerable", bool(expect))))
        except (ValueError, KeyError, TypeError, LookupError) as exc:
            raise EvalError(f"{path.name}:{n}: not a question record ({type(exc).__name__}: {exc})") from exc
        # Each of these would silently change what the figures mean.
        if not q.question.strip():
            raise EvalError(f"{path.name}:{n}: the question is empty")
        if "answerable" not in row and "expect" not in row:
            raise EvalError(f"{path.name}:{n}: neither expect nor answerable: give the expected articles, "
                            'or "answerable": false for a question the documents cannot answer')
        if q.answerable and not q.expect:
            raise EvalError(f"{path.name}:{n}: answerable question with no expected article")
        if not q.answerable and q.expect:
            raise EvalError(f"{path.name}:{n}: an unanswerable question with expected articles")
        if q.id in seen:
            raise EvalError(f"{path.name}:{n}: id {q.id!r} is used on line {seen[q.id]} too")
        seen[q.id] = n
        questions.append(q)
    if not questions:
        raise EvalError(f"{path} holds no questions")
    return questions


def select_ids(questions: list[Question], split: str) -> list[Question]:
    """The odd- or even-numbered questions (by the last number in the id: dev-001 is odd), or all.
    The dev set is split by this fixed rule: odd ids tune, even ids report (docs/retrieval.md)."""
    if split not in ID_SPLITS:
        raise EvalError(f"--ids must be one of {', '.join(ID_SPLITS)}")
    if split == "all":
        return questions
    picked = []
    for q in questions:
        m = re.search(r"(\d+)\D*$", q.id)
        if m is None:
            raise EvalError(f"question id {q.id!r} has no number to split on")
        if int(m.group(1)) % 2 == (1 if split == "odd" else 0):
            picked.append(q)
    if not picked:
        raise EvalError(f"no question has an {split} id")
    return picked


def recall_ks(k: int) -> list[int]:
    """The cut-offs reported: 1, 5, 10 up to k, and k itself."""
    return sorted({c for c in (1, 5, 10) if c <= k} | {k})


def _rank(hits: list[Hit], expect: list[tuple[str, str]]) -> int | None:
    gold = set(expect)
    for i, h in enumerate(hits, start=1):
        if (h.act, h.article) in gold:
            return i
    return None


def available_modes(conn: psycopg.Connection, embedder: Embedder) -> tuple[str, ...]:
    """Every mode, the sparse arm only where the embedder has a sparse head and its vectors are stored."""
    sparse = sparse_head(embedder) is not None and one_row(conn.execute(
        "SELECT EXISTS (SELECT 1 FROM sparse_models WHERE model = %s AND vectors > 0)", (embedder.name,)))[0]
    conn.rollback()
    return tuple(m for m in MODES if sparse or m != "sparse")


def evaluate(conn: psycopg.Connection, embedder: Embedder, questions: list[Question], *, k: int = 10,
             modes: tuple[str, ...] | None = None, overrides: Mapping[str, object] | None = None) -> dict:
    """Ranks of the gold article per question and mode (None: :func:`available_modes`), and the refusal
    `ask` would make. The refusal is always decided on the hybrid hits, searched for it if hybrid is not
    a mode. ``overrides`` (fusion, weights, fetch_k: Fusion.overridden) replace the model's profile's, for
    ablations."""
    overrides = dict(overrides or {})
    fusion = profile(embedder.name).fusion.overridden(overrides) if overrides else None
    modes = modes or available_modes(conn, embedder)
    ingested = {r[0] for r in conn.execute("SELECT eli FROM current_versions")}
    # A gold article its (ingested) act does not have is a typo in the file: it could never be found.
    stored = {(a, n) for a, n in conn.execute(
        "SELECT v.eli, a.article FROM current_versions v JOIN articles a USING (version_id) "
        "WHERE v.eli = ANY(%s)", (sorted({a for q in questions for a, _ in q.expect}),))}
    missing = [f"{q.id}: {a} has no art. {n}" for q in questions for a, n in q.expect
               if a in ingested and (a, n) not in stored]
    # Without vectors (a text-only evaluation) there is no refusal to report.
    vectors = one_row(conn.execute("SELECT EXISTS (SELECT 1 FROM embedding_models WHERE model = %s)",
                           (embedder.name,)))[0]
    conn.rollback()
    results = []
    for q in questions:
        # Scored when an act of any gold article is stored: a hit on any of them counts (shared/eval).
        r = QuestionResult(q.id, q.question, q.answerable, any(a in ingested for a, _ in q.expect))
        hybrid_hits = None
        for mode in modes:
            hits = search(conn, q.question, embedder, settings=SearchSettings(k=k, mode=mode, fusion=fusion))
            r.ranks[mode] = _rank(hits, q.expect) if q.expect else None
            if mode == "hybrid":
                hybrid_hits = hits
        if hybrid_hits is None and vectors:
            hybrid_hits = search(conn, q.question, embedder, settings=SearchSettings(k=k, fusion=fusion))
        if hybrid_hits is not None:
            verdict = decide(hybrid_hits, embedder.name)
            r.top_similarity, r.refused, r.refusal_reason = verdict.similarity, verdict.refused, verdict.reason
        results.append(r)
    # Figures of the vector arm, fusion and refusal are only what they seem when every text has a vector.
    gaps = search_gaps(conn, embedder) if vectors and set(modes) != {"text"} else []
    return {"k": k, "threshold": decide([], embedder.name).min_similarity, "model": embedder.name,
            "modes": list(modes), "settings": overrides, "warnings": missing + gaps,
            "metrics": metrics(results, modes, k), "questions": [r.__dict__ for r in results]}


def metrics(results: list[QuestionResult], modes: tuple[str, ...], k: int = 10) -> dict:
    scored = [r for r in results if r.answerable and r.in_corpus]
    out: dict = {"answerable_scored": len(scored),
                 "answerable_not_in_corpus": sum(1 for r in results if r.answerable and not r.in_corpus),
                 "unanswerable": sum(1 for r in results if not r.answerable)}
    for mode in modes:
        ranks = [r.ranks.get(mode) for r in scored]
        n = len(ranks)  # none scored: no figure (None), not 0
        out[mode] = {f"recall@{c}": sum(1 for x in ranks if x and x <= c) / n if n else None for c in recall_ks(k)}
        out[mode]["mrr"] = sum(1 / x for x in ranks if x) / n if n else None
    unanswerable = [r for r in results if not r.answerable]
    judged = any(r.refused is not None for r in results)
    out["refusal_rate_unanswerable"] = (sum(1 for r in unanswerable if r.refused) / len(unanswerable)) \
        if unanswerable and judged else None
    out["false_refusal_rate"] = (sum(1 for r in scored if r.refused) / len(scored)) if scored and judged else None
    return out
