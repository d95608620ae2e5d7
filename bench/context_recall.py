"""Does the legal context bring the gold article into what the answer model reads? Context recall on the
development questions, with and without the definitions and cited provisions, at the same budget of
characters, and what it costs.

    PIPELINE_HOME=… python -m bench.context_recall [--k 5] [--mode text] [--ids all|odd|even]

Needs a database holding the acts of the questions (e.g. `pipeline ingest --source ../shared/eli --all
--no-embed` for the text arm alone; the hybrid mode needs the embeddings too). Per question, the
fragments the answer would get are the top-k hits; "with context" adds pipeline.retrieval.context's
items (CONTEXT_CHARS). "Same budget" gives retrieval alone the characters the context took: more hits,
until their text is as long as the top-k hits plus the context. A question counts when any gold article
is among the articles read. Prints recall and mean characters for the three.
"""
from __future__ import annotations

import statistics

from bench.common import eval_dir, parser


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, epilog=True)
    ap.add_argument("--k", type=int, default=5, help="hits the answer reads [5, as ask]")
    ap.add_argument("--mode", default="text", help="search mode [text: needs no embeddings]")
    ap.add_argument("--ids", default="all", choices=("all", "odd", "even"))
    ap.add_argument("--budget", type=int, default=None, help="context characters [core.limits.CONTEXT_CHARS]")
    ap.add_argument("--questions", default=str(eval_dir() / "dev_questions.pl.jsonl"))
    args = ap.parse_args(argv)

    from pathlib import Path

    from pipeline import Service
    from pipeline.core.limits import CONTEXT_CHARS, MAX_K
    from pipeline.retrieval.context import context_for
    from pipeline.retrieval.evaluate import load_questions, select_ids
    from pipeline.retrieval.search import SearchSettings, search

    budget = CONTEXT_CHARS if args.budget is None else args.budget
    questions = [q for q in select_ids(load_questions(Path(args.questions)), args.ids) if q.answerable]
    rows = []
    with Service(pool_size=1) as law:
        embedder = law.embedder() if args.mode != "text" else None

        def run(conn, q):
            hits = search(conn, q.question, embedder, settings=SearchSettings(k=MAX_K, mode=args.mode))
            top = hits[: args.k]
            items = context_for(conn, top, q.question, budget=budget)
            return hits, top, items

        stored = law.pool.run(lambda conn: {r[0] for r in conn.execute("SELECT eli FROM current_versions")})
        for q in questions:
            if not any(a in stored for a, _ in q.expect):
                continue
            hits, top, items = law.pool.run(lambda conn, q=q: run(conn, q))
            gold = set(q.expect)
            base_chars = sum(len(h.text) for h in top)
            context_chars = sum(len(i.text) for i in items)
            # Retrieval alone given the same characters: more hits until as long.
            same, spent = [], 0
            for h in hits:
                if same and spent + len(h.text) > base_chars + context_chars:
                    break
                same.append(h)
                spent += len(h.text)
            rows.append({
                "id": q.id,
                "top": bool(gold & {(h.act, h.article) for h in top}),
                "context": bool(gold & ({(h.act, h.article) for h in top} | {(i.act, i.article) for i in items})),
                "same": bool(gold & {(h.act, h.article) for h in same}),
                "chars": base_chars, "context_chars": context_chars, "same_chars": spent,
                "items": len(items),
            })
    n = len(rows)
    if not n:
        raise SystemExit("no question's act is stored: ingest the mirror first")
    mean = lambda key: statistics.mean(r[key] for r in rows)  # noqa: E731
    print(f"{n} answerable questions ({args.ids} ids) with their act stored; mode {args.mode}, k {args.k}, "
          f"context budget {budget} characters")
    print(f"{'what the answer reads':<44} {'recall':>7} {'chars':>7}")
    print(f"{'top-' + str(args.k) + ' hits':<44} {sum(r['top'] for r in rows) / n:>7.2f} {mean('chars'):>7.0f}")
    print(f"{'top-' + str(args.k) + ' hits + definitions and cited provisions':<44} "
          f"{sum(r['context'] for r in rows) / n:>7.2f} {mean('chars') + mean('context_chars'):>7.0f}")
    print(f"{'more hits, same characters':<44} {sum(r['same'] for r in rows) / n:>7.2f} {mean('same_chars'):>7.0f}")
    print(f"context items per question: mean {mean('items'):.1f}; questions the context alone adds: "
          f"{sum(r['context'] and not r['top'] for r in rows)}; that more hits alone add: "
          f"{sum(r['same'] and not r['top'] for r in rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
