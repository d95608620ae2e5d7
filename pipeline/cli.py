"""`pipeline` command line: thin wiring over the library modules (fetch, parse, store, embed, search, answer)."""
from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import __version__
from .config import settings

# --- errors: one line, non-zero exit, never a traceback (PIPELINE_DEBUG=1 shows it) ----------

def _known_errors() -> tuple[type[BaseException], ...]:
    import psycopg

    from .answer import AnswerError
    from .articles import ArticleNotFound
    from .db import DatabaseError
    from .embedders import EmbedderError
    from .fetch import FetchError
    from .ingest import IngestError
    from .parse import ParseError

    return (DatabaseError, FetchError, ParseError, IngestError, EmbedderError, AnswerError, ArticleNotFound,
            psycopg.Error)


def friendly(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.exceptions.Exit:
            raise
        except (click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("Interrupted; nothing half-written (each act is one transaction).", err=True)
            sys.exit(130)
        except Exception as exc:
            if os.environ.get("PIPELINE_DEBUG"):
                raise
            if isinstance(exc, _known_errors()):
                msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            else:
                msg = f"unexpected {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''} (PIPELINE_DEBUG=1 shows the traceback)"
            click.echo(f"Error: {msg}", err=True)
            sys.exit(1)

    return wrapper


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _open_db() -> tuple[str, Any]:
    """Database URL and a connection, with the schema at head (migrations run implicitly)."""
    from . import db, schema

    url = db.database_url()
    schema.ensure_current(url)
    return url, db.connect(url)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pipeline")
def main() -> None:
    """Polish law in PostgreSQL/pgvector: ingest acts from the Sejm ELI API, search them, ask with citations.

    \b
    Database: DATABASE_URL, or an embedded PostgreSQL started on demand in $PIPELINE_HOME.
    Typical use:
      pipeline ingest --act DU/2025/277
      pipeline search "ile dni urlopu po 10 latach pracy"
      pipeline ask "Ile dni urlopu mi przysługuje?"
    """
    # `pipeline search … | head`: stop quietly when the reader goes away, like other Unix tools.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)


# --- db ------------------------------------------------------------------------------------------

@main.group("db")
def db_group() -> None:
    """Database: migrations, status, connection URL, embedded server."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target migration revision.")
@friendly
def db_upgrade(revision: str) -> None:
    """Apply migrations up to head (other commands do this implicitly)."""
    from . import db, schema

    url = db.database_url()
    schema.upgrade(url, revision)
    click.echo(f"database at {schema.head_revision() if revision == 'head' else revision}")


@db_group.command("downgrade")
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Confirm: a downgrade to 'base' drops all data.")
@friendly
def db_downgrade(revision: str, yes: bool) -> None:
    """Revert migrations to REVISION ('base' = empty database)."""
    from . import db, schema

    if not yes:
        raise click.UsageError("downgrading may drop data; pass --yes to confirm")
    schema.downgrade(db.database_url(), revision)
    click.echo(f"database at {revision}")


@db_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def db_status(as_json: bool) -> None:
    """Server kind and versions, migration head, row counts, embedding progress."""
    from . import status

    info = status.database_status()
    if as_json:
        _emit_json(info)
        return
    click.echo(f"server:      {info['server']} PostgreSQL {info['postgresql']}, pgvector {info['pgvector']}")
    click.echo(f"migration:   {info['migration'] or 'none'} (head {info['migration_head']})"
               + ("" if info["migration"] == info["migration_head"] else "  -> run: pipeline db upgrade"))
    click.echo(f"text search: {info['text_search']}")
    for name, n in info["rows"].items():
        click.echo(f"  {name:<16} {n:>9}")
    for m in info["embeddings"]:
        click.echo(f"embeddings:  {m['model']} ({m['dimensions']}-d, {m['backend']}): "
                   f"{m['embedded']} embedded, {m['queued']} queued")
    click.echo(f"embedder:    {info['embedder'].get('backend')} {info['embedder'].get('model')}")


@db_group.command("url")
@friendly
def db_url() -> None:
    """Print a URL that psql accepts:  psql "$(pipeline db url)"."""
    from . import db

    click.echo(db.database_url())


@db_group.command("stop")
@friendly
def db_stop() -> None:
    """Stop the embedded server (it keeps running between commands otherwise)."""
    from . import db

    if settings().database_url:
        raise click.UsageError("DATABASE_URL is set: that server is not managed by pipeline")
    click.echo("stopped" if db.stop_embedded() else "not running")


# --- ingest --------------------------------------------------------------------------------------

@main.command("ingest")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--act", "acts", multiple=True, metavar="ID", help="ELI id such as DU/2025/277 (repeatable).")
@click.option("--all", "all_acts", is_flag=True, help="Every act found in --source.")
@click.option("--source", type=click.Path(path_type=Path, file_okay=False),
              help="Read acts from an archive in the ELI mirror layout (acts/DU/2025/277/...) instead of HTTP.")
@click.option("--offline", is_flag=True, help="Use only raw responses archived earlier in the archive dir.")
@click.option("--archive", "archive_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where raw API responses are kept [default: $PIPELINE_ARCHIVE or ./dane].")
@click.option("--no-embed", is_flag=True, help="Store chunks but do not compute embeddings now.")
@click.option("--chunk-chars", type=click.IntRange(200, 20000), help="Chunk size limit [default: 1200].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@friendly
def ingest_cmd(paths: tuple[Path, ...], acts: tuple[str, ...], all_acts: bool, source: Path | None,
               offline: bool, archive_dir: Path | None, no_embed: bool, chunk_chars: int | None,
               as_json: bool) -> None:
    """Download acts (or read local PDF/HTML files) and store them as versioned article chunks.

    \b
    pipeline ingest --act DU/2025/277
    pipeline ingest --source ../shared/eli --all
    pipeline ingest ./D20250277.pdf            # act id from the file name
    pipeline ingest text.html --act DU/2024/581
    """
    from . import ingest

    cfg = settings()
    if source is not None and not source.is_dir():
        raise click.BadParameter(f"{source} is not a folder", param_hint="--source")
    if all_acts:
        if source is None:
            raise click.UsageError("--all needs --source DIR (an archive in the ELI mirror layout)")
        acts = acts + tuple(_acts_in(source))
    if not acts and not paths:
        raise click.UsageError("nothing to ingest: give --act ID, --all with --source, or file paths")
    if paths and len(acts) > 1:
        raise click.UsageError("with file paths, --act may be given once (it names the act of the file)")
    files = _expand_paths(paths)

    url, conn = _open_db()
    embedder = None if no_embed else _embedder()
    model = embedder.name if embedder else None
    max_chars = chunk_chars or cfg.chunk_chars
    overlap = min(cfg.chunk_overlap, max_chars // 3)
    results = []
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    client = None
    if acts and source is None and not offline:
        from .fetch import EliClient

        client = EliClient()
    total = len(files) + (0 if paths else len(acts))
    for i, act in enumerate(acts if not paths else []):
        _progress_line(as_json, i + 1, total, act)
        results.append(ingest.ingest_act(conn, url, act, model=model, archive_dir=archive_dir or cfg.archive_dir,
                                         source_dir=source, offline=offline, client=client,
                                         max_chars=max_chars, overlap=overlap, progress=say))
        _report(results[-1], as_json)
    for j, path in enumerate(files):
        _progress_line(as_json, j + 1, total, str(path))
        results.append(ingest.ingest_file(conn, url, path, act=acts[0] if acts else None, model=model,
                                          max_chars=max_chars, overlap=overlap))
        _report(results[-1], as_json)
    if client:
        client.close()

    if embedder is not None:  # also finishes work an earlier, interrupted run left in the queue
        embedded = _drain(conn, embedder, quiet=as_json)
        # Attribute the work to the acts that queued it, in order (the queue is shared).
        for r in results:
            r.embedded, embedded = min(r.queued, embedded), max(0, embedded - r.queued)
    failed = [r for r in results if r.status == "failed"]
    if as_json:
        _emit_json({"acts": [r.to_dict() for r in results], "failed": len(failed),
                    "embedded": sum(r.embedded for r in results)})
    else:
        new = sum(r.status == "new" for r in results)
        click.echo(f"{len(results)} act(s): {new} new version(s), "
                   f"{sum(r.status == 'unchanged' for r in results)} unchanged, {len(failed)} failed; "
                   f"{sum(r.embedded for r in results)} embedding(s) computed", err=True)
    conn.close()
    if failed:
        sys.exit(1)


def _acts_in(source: Path) -> list[str]:
    root = source / "acts"
    found = []
    for meta in sorted(root.glob("*/*/*/meta.json")):
        pub, year, pos = meta.parent.parts[-3:]
        found.append(f"{pub}/{year}/{pos}")
    if not found:
        raise click.UsageError(f"no acts in {source} (expected {root}/PUB/YEAR/POS/meta.json)")
    return sorted(found, key=lambda a: (a.split("/")[0], int(a.split("/")[1]), int(a.split("/")[2])))


def _expand_paths(paths: tuple[Path, ...]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.suffix.lower() in (".pdf", ".html", ".htm") and q.stat().st_size > 0))
        elif p.is_file():
            files.append(p)
        else:
            raise click.BadParameter(f"{p} does not exist", param_hint="PATHS")
    return files


def _progress_line(quiet: bool, i: int, n: int, what: str) -> None:
    if not quiet:
        click.echo(f"[{i}/{n}] {what}", err=True)


def _report(r: Any, quiet: bool) -> None:
    if quiet:
        return
    if r.status == "failed":
        click.echo(f"  failed: {r.error}", err=True)
        return
    line = f"  {r.status}: version {r.version}, {r.articles} articles, {r.chunks} chunks, {r.seconds:.1f}s"
    if r.changes:
        c = r.changes
        line += f" (changed {len(c.get('changed', []))}, added {len(c.get('added', []))}, removed {len(c.get('removed', []))})"
    click.echo(line, err=True)


def _embedder():
    from .embedders import embedder_from_env

    return embedder_from_env()


def _drain(conn: Any, embedder: Any, *, quiet: bool, batch_size: int | None = None, limit: int | None = None) -> int:
    from . import embed

    embed.ensure_space(conn, embedder.name, embedder.dimensions, embedder.backend)
    total = embed.queued(conn, embedder.name)
    conn.commit()
    if total == 0:
        return 0
    if limit is not None:
        total = min(total, limit)
    size = batch_size or getattr(embedder, "batch_size", 32) or 32
    if quiet:
        return _drain_guarded(conn, embedder, batch_size=size, limit=limit)
    with click.progressbar(length=total, label=f"embedding ({embedder.name})", file=sys.stderr,
                           show_pos=True, show_eta=True) as bar:
        return _drain_guarded(conn, embedder, batch_size=size, limit=limit, progress=bar.update)


def _drain_guarded(conn: Any, embedder: Any, **kwargs: Any) -> int:
    from . import embed
    from .embedders import EmbedderError

    try:
        return embed.drain(conn, embedder, **kwargs)
    except EmbedderError as exc:
        conn.rollback()
        embed.record_failure(conn, embedder.name, str(exc))
        raise


# --- embed ---------------------------------------------------------------------------------------

@main.command("embed")
@click.option("--batch-size", type=click.IntRange(1, 4096), help="Texts per model call and per transaction.")
@click.option("--limit", type=click.IntRange(1), help="Stop after this many texts.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@friendly
def embed_cmd(batch_size: int | None, limit: int | None, as_json: bool) -> None:
    """Drain the embedding queue with the configured model (run several at once to share the work).

    Also queues every chunk text that has no embedding for the current model (after a model switch).
    """
    from . import embed

    _, conn = _open_db()
    embedder = _embedder()
    embed.ensure_space(conn, embedder.name, embedder.dimensions, embedder.backend)
    queued_now = embed.enqueue_missing(conn, embedder.name)
    t0 = time.perf_counter()
    done = _drain(conn, embedder, quiet=as_json, batch_size=batch_size, limit=limit)
    seconds = time.perf_counter() - t0
    left = embed.queued(conn, embedder.name)
    conn.close()
    summary = {"model": embedder.name, "queued": queued_now, "embedded": done, "remaining": left,
               "seconds": round(seconds, 2), "texts_per_second": round(done / seconds, 2) if seconds and done else None}
    if as_json:
        _emit_json(summary)
    else:
        click.echo(f"{done} text(s) embedded with {embedder.name} in {seconds:.1f}s; {left} left in the queue", err=True)


# --- show ----------------------------------------------------------------------------------------

@main.command("show")
@click.argument("act")
@click.argument("article")
@click.option("--as-of", type=click.DateTime(formats=["%Y-%m-%d"]), help="The text in force on this date.")
@click.option("--version", "version_no", type=click.IntRange(1), help="A specific stored version of ACT.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def show_cmd(act: str, article: str, as_of: Any, version_no: int | None, as_json: bool) -> None:
    """Print one article, e.g.  pipeline show DU/2025/277 151^1  (151¹ and 'art. 151^1' work too)."""
    from . import articles

    _, conn = _open_db()
    found = articles.get_article(conn, act, article, as_of=as_of.date() if as_of else None, version_no=version_no)
    conn.close()
    if as_json:
        _emit_json(found)
        return
    head = f"{found['eli']} art. {found['article']} (version {found['version_no']}, text as of {found['valid_from']})"
    if found["repealed"]:
        head += " [uchylony]"
    click.echo(head)
    if found["heading_path"]:
        click.echo(" / ".join(found["heading_path"]))
    click.echo()
    click.echo(found["text"])


# --- search / ask --------------------------------------------------------------------------------

def _search_options(fn: Callable) -> Callable:
    fn = click.option("--act", "acts", multiple=True, metavar="ID", help="Only these acts (repeatable).")(fn)
    fn = click.option("--as-of", type=click.DateTime(formats=["%Y-%m-%d"]), help="Texts in force on this date.")(fn)
    fn = click.option("--include-repealed", is_flag=True, help="Also search repealed (uchylone) articles.")(fn)
    fn = click.option("-k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="How many articles.")(fn)
    return fn


def _run_search(conn: Any, query: str, *, k: int, mode: str, acts: tuple[str, ...], as_of: Any,
                include_repealed: bool, embedder: Any = None) -> list:
    from . import search

    if mode != "text" and embedder is None:
        embedder = _embedder()
    try:
        return search.search(conn, query, embedder, k=k, mode=mode, acts=list(acts) or None,
                             as_of=as_of.date() if as_of else None, include_repealed=include_repealed)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@main.command("search")
@click.argument("query")
@_search_options
@click.option("--mode", type=click.Choice(["hybrid", "vector", "text"]), default="hybrid", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable hits.")
@friendly
def search_cmd(query: str, k: int, mode: str, acts: tuple[str, ...], as_of: Any, include_repealed: bool,
               as_json: bool) -> None:
    """Find the articles that answer QUERY (Polish full text + vectors, fused in SQL)."""
    _, conn = _open_db()
    hits = _run_search(conn, query, k=k, mode=mode, acts=acts, as_of=as_of, include_repealed=include_repealed)
    conn.close()
    if as_json:
        _emit_json([h.to_dict() for h in hits])
        return
    if not hits:
        click.echo("No matching articles.", err=True)
        return
    for i, h in enumerate(hits, start=1):
        sim = f"{h.similarity:.3f}" if h.similarity is not None else "-"
        bm25 = f"{h.text_score:.2f}" if h.text_score is not None else "-"
        part = f" (part {h.part})" if h.part > 1 else ""
        click.echo(f"{i:>2}. {h.act} art. {h.article}{part}  score {h.score:.4f}  "
                   f"vector {sim} (#{h.vector_rank or '-'})  text {bm25} (#{h.text_rank or '-'})")
        click.echo(f"    {_snippet(h.text)}")


def _snippet(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@main.command("ask")
@click.argument("question")
@_search_options
@click.option("--rewrite", is_flag=True, help="First let the model rewrite the question in statutory language.")
@click.option("--offline", is_flag=True, help="Never call a model: answer with the most relevant cited sentences.")
@click.option("--no-stream", is_flag=True, help="Print the answer at once instead of as it is written.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable answer.")
@friendly
def ask_cmd(question: str, k: int, acts: tuple[str, ...], as_of: Any, include_repealed: bool, rewrite: bool,
            offline: bool, no_stream: bool, as_json: bool) -> None:
    """Answer QUESTION from the stored acts, citing [act, art.]; or say the answer is not in them.

    \b
    Model: OpenRouter (OPENROUTER_API_KEY, ANSWER_MODEL) or any OpenAI-compatible server
    (ANSWER_BASE_URL). Without one, the answer is the best cited sentences, clearly marked.
    """
    from . import answer as answering
    from .refusal import decide

    config = answering.ChatConfig.from_env()
    use_model = config.configured and not offline
    _, conn = _open_db()
    embedder = _embedder()
    searched = question
    if rewrite:
        if not use_model:
            raise click.UsageError("--rewrite needs a model (set OPENROUTER_API_KEY or ANSWER_BASE_URL)")
        searched = answering.rewrite_query(question, config)
        if not as_json:
            click.echo(f"Przeformułowane pytanie: {searched}", err=True)
    hits = _run_search(conn, searched, k=k, mode="hybrid", acts=acts, as_of=as_of,
                       include_repealed=include_repealed, embedder=embedder)
    conn.close()
    verdict = decide(hits, embedder.name)
    top, threshold = verdict.similarity, verdict.min_similarity
    fragments = [answering.Fragment(act=h.act, article=h.article, text=h.text, act_title=h.act_title, part=h.part,
                                    score=h.score, similarity=h.similarity) for h in hits]
    streamed = False
    if verdict.refused:
        result = answering.refusal(fragments)
        note = f"{verdict.reason}; no model was asked"
    elif use_model:
        if not as_json:
            _print_fragments(fragments)
        on_token = None
        if not as_json and not no_stream:
            streamed = True
            on_token = lambda piece: click.echo(piece, nl=False)
        result = answering.generate(question, fragments, config, stream=not no_stream, on_token=on_token)
        note = f"model {result.model or config.model}"
    else:
        result = answering.extractive_answer(question, fragments)
        note = "no model configured (set OPENROUTER_API_KEY or ANSWER_BASE_URL); extractive answer"
    if as_json:
        _emit_json({
            "question": question, "searched": searched, "answer": result.text, "refused": result.refused,
            "model": result.model, "citations": [{"act": a, "article": n} for a, n in result.citations],
            "fragments": [{"act": f.act, "article": f.article, "part": f.part, "score": f.score,
                           "similarity": f.similarity} for f in fragments],
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "cost_usd": result.cost_usd, "top_similarity": top, "threshold": threshold, "note": note,
            "refusal": verdict.to_dict(),
        })
        return
    if result.model is None and not result.refused:
        _print_fragments(fragments)
    if streamed:
        click.echo()
    else:
        click.echo(result.text)
    foreign = answering.foreign_citations(result)
    if foreign:
        click.echo("Uwaga: odpowiedź cytuje przepisy spoza podanych fragmentów: "
                   + ", ".join(answering.cite(a, n) for a, n in foreign), err=True)
    tokens = ""
    if result.prompt_tokens is not None:
        tokens = f"; tokens {result.prompt_tokens} in / {result.completion_tokens} out"
        tokens += f", cost ${result.cost_usd:.6f}" if result.cost_usd is not None else ", cost unknown (set ANSWER_PRICE_IN/OUT)"
    click.echo(f"({note}{tokens})", err=True)


def _print_fragments(fragments: list) -> None:
    click.echo("Fragmenty:", err=True)
    for i, f in enumerate(fragments, start=1):
        sim = f"{f.similarity:.3f}" if f.similarity is not None else "-"
        click.echo(f"  {i}. [{f.act}, art. {f.article}] score {f.score:.4f}, similarity {sim}", err=True)
    click.echo(err=True)


# --- eval ----------------------------------------------------------------------------------------

@main.command("eval")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-k", "k", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--mode", type=click.Choice(["hybrid", "vector", "text", "all"]), default="all", show_default=True,
              help="all: each arm alone and fused.")
@click.option("--ids", type=click.Choice(["all", "odd", "even"]), default="all", show_default=True,
              help="Only questions whose id ends in an odd / even number (dev set: odd tune, even report).")
@click.option("--fusion", type=click.Choice(["rrf", "convex"]), default=None,
              help="Override the model's fusion (ablations).")
@click.option("--text-weight", type=click.FloatRange(0), default=None, help="Override the text arm's weight.")
@click.option("--vector-weight", type=click.FloatRange(0), default=None, help="Override the vector arm's weight.")
@click.option("--fetch-k", type=click.IntRange(1, 1000), default=None, help="Override candidates per arm.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@friendly
def eval_cmd(file: Path, k: int, mode: str, ids: str, fusion: str | None, text_weight: float | None,
             vector_weight: float | None, fetch_k: int | None, as_json: bool) -> None:
    """Retrieval quality on a question file (JSON lines: question, expect [{act, art}], answerable).

    Prints recall@1/5/10/k, MRR, the refusals `ask` would make (unanswerable and answerable
    questions), and the gold article's rank per question and mode. Exits non-zero only on bad
    input, never on a low score.
    """
    from . import evaluate

    try:
        questions = evaluate.select_ids(evaluate.load_questions(file), ids)
    except evaluate.EvalError as exc:
        raise click.UsageError(str(exc)) from None
    _, conn = _open_db()
    modes = ("hybrid", "vector", "text") if mode == "all" else (mode,)
    overrides = {name: value for name, value in (("fusion", fusion), ("text_weight", text_weight),
                                                 ("vector_weight", vector_weight), ("fetch_k", fetch_k))
                 if value is not None}
    report = evaluate.evaluate(conn, _embedder(), questions, k=k, modes=modes, **overrides)
    report["ids"] = ids
    conn.close()
    if as_json:
        _emit_json(report)
        return
    m = report["metrics"]
    click.echo(f"{len(questions)} questions ({ids} ids); {m['answerable_scored']} answerable with their act in the "
               f"database, {m['answerable_not_in_corpus']} whose act is not ingested (not scored), "
               f"{m['unanswerable']} unanswerable")
    cuts = evaluate.recall_ks(k)
    click.echo(f"{'mode':<8} " + " ".join(f"{'R@' + str(c):>6}" for c in cuts) + f" {'MRR':>6}")
    for md in modes:
        r = m[md]
        click.echo(f"{md:<8} " + " ".join(f"{r[f'recall@{c}']:>6.2f}" for c in cuts) + f" {r['mrr']:>6.3f}")
    if m["refusal_rate_unanswerable"] is not None or m["false_refusal_rate"] is not None:
        unanswerable = m["refusal_rate_unanswerable"]
        click.echo(f"refused unanswerable: {'-' if unanswerable is None else f'{unanswerable:.0%}'}; "
                   f"refused answerable: {(m['false_refusal_rate'] or 0):.0%} "
                   f"(pipeline.refusal, min similarity {report['threshold']:.2f})")
    click.echo()
    click.echo(f"{'id':<10} " + " ".join(f"{md:>7}" for md in modes) + f" {'sim':>6} {'refused':>7}  question")
    for q in report["questions"]:
        ranks = " ".join(f"{_rank_cell(q, md, k):>7}" for md in modes)
        sim = f"{q['top_similarity']:.3f}" if q["top_similarity"] is not None else "-"
        refused = "-" if q["refused"] is None else "yes" if q["refused"] else "no"
        click.echo(f"{q['id']:<10} {ranks} {sim:>6} {refused:>7}  {_snippet(q['question'], 60)}")


def _rank_cell(q: dict, mode: str, k: int) -> str:
    if not q["answerable"]:
        return "n/a"
    if not q["in_corpus"]:
        return "no act"
    rank = q["ranks"].get(mode)
    return str(rank) if rank else f">{k}"


# --- doctor / access -----------------------------------------------------------------------------

@main.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable checks.")
@friendly
def doctor_cmd(as_json: bool) -> None:
    """Check database, pgvector, text search, embedder and answer model; print what to fix."""
    from .status import doctor

    checks = doctor()
    if as_json:
        _emit_json(checks)
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        for c in checks:
            click.echo(f"[{marks[c['status']]}] {c['name']}: {c['detail']}")
            if c["fix"]:
                click.echo(f"       fix: {c['fix']}")
    if any(c["status"] == "fail" for c in checks):
        sys.exit(1)


@db_group.command("grant-reader")
@click.argument("role")
@click.option("--password", help="Also allow the role to log in with this password.")
@friendly
def db_grant_reader(role: str, password: str | None) -> None:
    """Create ROLE that may only SELECT the documented views and call the search functions."""
    from . import db, schema

    url = db.database_url()
    schema.ensure_current(url)
    try:
        schema.grant_reader(url, role, password)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="ROLE") from None
    click.echo(f"role {role} can read: {', '.join(schema.READER_VIEWS)} and call search_chunks()")
