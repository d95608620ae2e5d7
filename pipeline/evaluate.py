"""Retrieval evaluation over question files (the format of shared/eval): recall@k, MRR, refusals."""
from __future__ import annotations

import json
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from .articles import canonical_article
from .embedders import Embedder, embedder_from_env
from .errors import EvalError, UsageError
from .act_id import parse_act_id
from .search import MODES, Hit, best_similarity, refusal_threshold, search


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
    in_corpus: bool  # every expected act is ingested
    ranks: dict[str, int | None] = field(default_factory=dict)  # mode -> rank of the first gold article
    top_similarity: float | None = None
    refused: bool | None = None  # by the similarity threshold (hybrid hits)


def load_questions(path: Path) -> list[Question]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror}") from exc
    questions = []
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
        if q.answerable and not q.expect:
            raise EvalError(f"{path.name}:{n}: answerable question with no expected article")
        questions.append(q)
    if not questions:
        raise EvalError(f"{path} holds no questions")
    return questions


def _rank(hits: list[Hit], expect: list[tuple[str, str]]) -> int | None:
    gold = set(expect)
    for i, h in enumerate(hits, start=1):
        if (h.act, h.article) in gold:
            return i
    return None


def evaluate(conn: psycopg.Connection, embedder: Embedder, questions: list[Question], *, k: int = 10,
             modes: tuple[str, ...] = MODES, threshold: float | None = None) -> dict:
    ingested = {r[0] for r in conn.execute("SELECT eli FROM current_versions")}
    conn.rollback()
    threshold = refusal_threshold(embedder.name) if threshold is None else threshold
    results = []
    for q in questions:
        r = QuestionResult(q.id, q.question, q.answerable, all(a in ingested for a, _ in q.expect))
        for mode in modes:
            hits = search(conn, q.question, embedder, k=k, mode=mode)
            r.ranks[mode] = _rank(hits, q.expect) if q.expect else None
            if mode == "hybrid" or (mode == modes[0] and "hybrid" not in modes):
                r.top_similarity = best_similarity(hits)
                r.refused = r.top_similarity is not None and r.top_similarity < threshold
        results.append(r)
    return {"k": k, "threshold": threshold, "model": embedder.name, "metrics": metrics(results, modes),
            "questions": [r.__dict__ for r in results]}


def metrics(results: list[QuestionResult], modes: tuple[str, ...]) -> dict:
    scored = [r for r in results if r.answerable and r.in_corpus]
    out: dict = {"answerable_scored": len(scored),
                 "answerable_not_in_corpus": sum(1 for r in results if r.answerable and not r.in_corpus),
                 "unanswerable": sum(1 for r in results if not r.answerable)}
    for mode in modes:
        ranks = [r.ranks.get(mode) for r in scored]
        n = len(ranks) or 1
        out[mode] = {
            "recall@1": sum(1 for x in ranks if x and x <= 1) / n,
            "recall@5": sum(1 for x in ranks if x and x <= 5) / n,
            "recall@10": sum(1 for x in ranks if x and x <= 10) / n,
            "mrr": sum(1 / x for x in ranks if x) / n,
        }
    unanswerable = [r for r in results if not r.answerable]
    out["refusal_rate_unanswerable"] = (sum(1 for r in unanswerable if r.refused) / len(unanswerable)) if unanswerable else None
    out["false_refusal_rate"] = (sum(1 for r in scored if r.refused) / len(scored)) if scored else None
    return out


def run(path: Path, *, k: int = 10, modes: tuple[str, ...] = MODES) -> dict:
    """`pipeline eval`: the question file scored against the current database and embedder."""
    from .schema import open_current  # alembic loads only when a command needs the database

    try:
        questions = load_questions(path)
    except EvalError as exc:
        raise UsageError(str(exc)) from None
    _, conn = open_current()
    with closing(conn):
        return evaluate(conn, embedder_from_env(), questions, k=k, modes=modes)
