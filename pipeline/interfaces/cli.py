"""`pipeline` command line: parses options, calls one method of pipeline.Service, prints what it returns."""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from pipeline.core import __version__, json_default
from pipeline.core.limits import DEFAULT_K, DEFAULT_MAX_CHARS, FIND_LIMIT, FUSIONS, MAX_FIND_LIMIT, MAX_K, MIN_CHARS, MODES
from pipeline.core.errors import UsageError, is_for_the_user, one_line

# --- errors: one line, non-zero exit, never a traceback (PIPELINE_DEBUG=1 shows it) ----------

def friendly(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.exceptions.Exit:
            raise
        except (click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # The reader of stdout went away (`pipeline search … | head`): click's standalone mode
            # exits 1 without a word, as Python advises. Sockets do not get here: httpx and psycopg
            # report a dropped connection as their own errors.
            raise
        except UsageError as exc:
            # Bad input found by the library: reported like click's own usage errors (exit 2).
            if exc.param:
                raise click.BadParameter(str(exc), param_hint=exc.param) from None
            raise click.UsageError(str(exc)) from None
        except KeyboardInterrupt:
            click.echo("Interrupted; nothing half-written (work is committed in whole transactions: an act, "
                       "a batch of embeddings).", err=True)
            sys.exit(130)
        except Exception as exc:
            if os.environ.get("PIPELINE_DEBUG"):
                raise
            if is_for_the_user(exc):
                msg = one_line(exc)
            else:
                msg = f"unexpected {type(exc).__name__}: {one_line(exc) if str(exc).strip() else ''} (PIPELINE_DEBUG=1 shows the traceback)"
            click.echo(f"Error: {msg}", err=True)
            sys.exit(1)

    return wrapper


class IsoDate(click.ParamType):
    """YYYY-MM-DD, as a datetime at midnight (click.DateTime's value); an impossible date such as
    2025-02-30 says so instead of "does not match the format"."""

    name = "date"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, dt.datetime):
            return value
        text = str(value).strip()
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            self.fail(f"{value!r} is not a date in the form YYYY-MM-DD", param, ctx)
        try:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time())
        except ValueError as exc:
            self.fail(f"{value!r} is not a valid date ({exc})", param, ctx)


class ActIdType(click.ParamType):
    """An act id (DU/2025/277, "Dz.U. 2025 poz. 277"): a malformed one is a usage error (exit 2) before
    anything runs, as every bad argument is. The value is passed on as given."""

    name = "act id"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from pipeline.core.act_id import parse_act_id
        from pipeline.core.errors import InvalidActId

        try:
            parse_act_id(str(value))
        except InvalidActId as exc:
            self.fail(str(exc), param, ctx)
        return value


ACT_ID = ActIdType()


def _service() -> Any:
    """The service a command runs on: one connection (a command does one thing at a time), the
    dictionary loaded when a query first needs it, not up front. Closed when the command ends, so the
    server sees the session end cleanly rather than the socket drop with the process (and a caller
    that runs commands in its own process, such as the tests through click's runner, leaks nothing)."""
    from pipeline.service import Service

    service = Service(pool_size=1, warm=False)
    click.get_current_context().call_on_close(service.close)
    return service


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=json_default))


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
    # SIGPIPE stays ignored (Python's default), not SIG_DFL: the commands also write to sockets (the
    # ELI API, the models, `serve` and `mcp` clients), and SIG_DFL would end the process without a
    # word when one of them drops a connection mid-write. A reader that leaves a pipe early is handled
    # in friendly() instead.


# --- db ------------------------------------------------------------------------------------------

@main.group("db")
def db_group() -> None:
    """Database: migrations, status, connection URL, embedded server."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target migration revision.")
@friendly
def db_upgrade(revision: str) -> None:
    """Apply migrations up to head (other commands do this implicitly)."""
    revision = _service().upgrade(revision)
    click.echo(f"database at {revision or 'base (empty)'}")


@db_group.command("downgrade")
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Confirm (required): a downgrade drops what later revisions added; "
                                          "to 'base', all data.")
@friendly
def db_downgrade(revision: str, yes: bool) -> None:
    """Revert migrations to REVISION ('base' = empty database)."""
    if not yes:
        raise click.UsageError("downgrading may drop data; pass --yes to confirm")
    service = _service()
    undone = service.downgrade(revision)
    # The revision the database is at now (not the one asked for: upgrading to an older one is a no-op).
    click.echo(f"database at {service.revision() or 'base (empty)'}")
    for rev, summary in undone:  # what is gone with them, for the operator
        click.echo(f"undid {rev}: {summary}", err=True)
    click.echo("note: other commands upgrade the database to head again before they run", err=True)


@db_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def db_status(as_json: bool) -> None:
    """Server kind and versions, migration head, row counts, embedding progress."""
    from pipeline.storage import schema

    info = _service().status()
    if as_json:
        _emit_json(info)
        return
    click.echo(f"server:      {info['server']} PostgreSQL {info['postgresql']}, "
               f"pgvector {info['pgvector'] or 'not installed on the server (see: pipeline doctor)'}")
    if schema.newer_than_code(info["migration"]):
        hint = "  -> newer than this pipeline: install the version that migrated it"
    elif info["migration"] != info["migration_head"]:
        hint = "  -> run: pipeline db upgrade"
    else:
        hint = ""
    click.echo(f"migration:   {info['migration'] or 'none'} (head {info['migration_head']}){hint}")
    click.echo(f"text search: {info['text_search']}")
    for name, n in info["rows"].items():
        click.echo(f"  {name:<16} {n:>9}")
    for m in info["embeddings"]:
        kind = f"{m['dimensions']}-d, {m['backend']}" if m["dimensions"] else "not embedded with yet"
        sparse = (f", sparse vectors for {m['sparse_embedded']} of {info.get('chunk_texts', '?')} chunk texts"
                  if m.get("sparse_embedded") is not None else "")
        click.echo(f"embeddings:  {m['model']} ({kind}): "
                   f"{m['embedded']} embedded of {m['texts']} texts{sparse}, {m['queued']} queued")
    click.echo(f"embedder:    {info['embedder'].get('backend')} {info['embedder'].get('model')}")


@db_group.command("url")
@friendly
def db_url() -> None:
    """Print a URL that psql accepts:  psql "$(pipeline db url)"."""
    click.echo(_service().database_url(migrate=False))


@db_group.command("stop")
@friendly
def db_stop() -> None:
    """Stop the embedded server (it keeps running between commands otherwise)."""
    click.echo("stopped" if _service().stop_database() else "not running")


# --- ingest --------------------------------------------------------------------------------------

@main.command("ingest")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--act", "acts", multiple=True, type=ACT_ID, metavar="ID",
              help="ELI id such as DU/2025/277 (repeatable).")
@click.option("--all", "all_acts", is_flag=True, help="Every act found in --source.")
@click.option("--source", type=click.Path(path_type=Path, file_okay=False),
              help="Read acts from an archive in the ELI mirror layout (acts/DU/2025/277/...) instead of HTTP.")
@click.option("--offline", is_flag=True, help="Use only raw responses archived earlier in the archive dir.")
@click.option("--archive", "archive_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where raw API responses are kept [default: $PIPELINE_ARCHIVE or ./dane].")
@click.option("--no-embed", is_flag=True, help="Store chunks but do not compute embeddings now.")
@click.option("--chunk-chars", type=click.IntRange(MIN_CHARS, 20000), help=f"Chunk size limit [default: {DEFAULT_MAX_CHARS}].")
@click.option("--latest", is_flag=True,
              help="Ask the API for the newest consolidated text of each --act (e.g. DU/1974/141) and ingest that.")
@click.option("--jobs", type=click.IntRange(1, 64), metavar="N",
              help="Processes parsing the next acts ahead, for --source/--offline [default: CPUs, at most 4].")
@click.option("--title", help="The act whose title this is (its newest consolidated text); with --all: every act "
                              "whose title has these words.")
@click.option("--type", "act_type", metavar="TYPE", help="With --title/--year: only acts of this type (Ustawa …).")
@click.option("--in-force", is_flag=True, help="With --title/--year: only acts in force.")
@click.option("--year", type=click.IntRange(1918, 2100), help="With --title, or --all: only acts of this year.")
@click.option("--original", is_flag=True, help="With --title: the act as enacted, not its newest consolidated text.")
@click.option("--dry-run", is_flag=True, help="With --title/--year: list what would be fetched, fetch nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@friendly
def ingest_cmd(paths: tuple[Path, ...], acts: tuple[str, ...], all_acts: bool, source: Path | None,
               offline: bool, archive_dir: Path | None, no_embed: bool, chunk_chars: int | None,
               latest: bool, jobs: int | None, title: str | None, act_type: str | None, in_force: bool,
               year: int | None, original: bool, dry_run: bool, as_json: bool) -> None:
    """Download acts (or read local PDF/HTML files) and store them as versioned article chunks.

    \b
    pipeline ingest --act DU/2025/277
    pipeline ingest --title "Kodeks pracy"     # its newest consolidated text
    pipeline ingest --all --title "ochronie danych" --type Ustawa --in-force --dry-run
    pipeline ingest --all --year 2026 --type Ustawa
    pipeline ingest --source ../shared/eli --all
    pipeline ingest ./D20250277.pdf            # act id from the file name
    pipeline ingest text.html --act DU/2024/581

    A search ingest run again skips the texts already stored without asking the API for them, so an
    interrupted one resumes where it stopped.
    """
    from pipeline.service import ActQuery

    by_title = title is not None or (all_acts and year is not None)
    if not by_title and (act_type or in_force or year is not None or original or dry_run):
        raise click.UsageError("--type, --in-force, --year, --original and --dry-run go with --title "
                               "(or --all --year)")
    query = ActQuery(title or "", act_type, in_force, year) if by_title else None
    if dry_run:
        picks = _service().ingest_plan(query, every=all_acts, original=original,
                                       progress=None if as_json else lambda m: click.echo(f"  {m}", err=True))
        if as_json:
            _emit_json(picks)
            return
        for p in picks:
            what = p["target"] if p["target"] == p["act"] else f"{p['target']} (newest consolidated text of {p['act']})"
            line = f"skip  {p['skip']}" if p["skip"] else f"fetch {what}  {_snippet(p['title'] or '', 70)}"
            click.echo(line)
        fetched = sum(p["skip"] is None for p in picks)
        click.echo(f"{fetched} act(s) would be fetched, {len(picks) - fetched} skipped (dry run: nothing fetched)",
                   err=True)
        return
    report = _service().ingest(
        acts=acts, paths=paths, all_acts=all_acts, source=source, offline=offline, archive_dir=archive_dir,
        embed=not no_embed, chunk_chars=chunk_chars, latest=latest, jobs=jobs, query=query, original=original,
        on_start=None if as_json else lambda i, n, what: click.echo(f"[{i}/{n}] {what}", err=True),
        on_result=None if as_json else _report,
        progress=None if as_json else lambda m: click.echo(f"  {m}", err=True),
        embed_progress=None if as_json else _progress_bar,
    )
    if as_json:
        _emit_json(report.to_dict())
    else:
        click.echo(f"{len(report.acts)} act(s): {report.new} new version(s), {report.unchanged} unchanged, "
                   f"{report.failed} failed" + (f", {report.skipped} skipped ({'stored or ' if query else ''}no text)"
                                             if report.skipped else "")
                   + f"; {report.embedded} embedding(s) computed"
                   + (f"; {report.waiting} text(s){'' if no_embed else ' of other acts'} wait for `pipeline embed`"
                      if report.waiting else ""),
                   err=True)
    if report.failed:
        sys.exit(1)


def _report(r: Any) -> None:
    if r.status == "failed":
        click.echo(f"  failed: {r.error}", err=True)
        return
    if r.status == "skipped":
        click.echo(f"  skipped: {'; '.join(r.warnings)}", err=True)
        return
    if r.resolved_from:
        click.echo(f"  {r.resolved_from} -> newest consolidated text {r.act}, ingested as a version of the same act",
                   err=True)
    line = f"  {r.status}: version {r.version}, {r.articles} articles, {r.chunks} chunks, {r.seconds:.1f}s"
    if r.changes:
        c = r.changes
        line += f" (changed {len(c.get('changed', []))}, added {len(c.get('added', []))}, removed {len(c.get('removed', []))})"
    click.echo(line, err=True)
    for warning in r.warnings:  # what the parser could not tell apart (e.g. two wordings of an article)
        click.echo(f"  warning: {warning}", err=True)


@contextlib.contextmanager
def _progress_bar(total: int, model: str) -> Iterator[Callable[[int], None]]:
    if not sys.stderr.isatty():  # a log (cron, CI): a bar draws nothing there until the end
        yield _progress_lines(total, model)
        return
    with click.progressbar(length=total, label=f"embedding ({model})", file=sys.stderr,
                           show_pos=True, show_eta=True) as bar:
        yield bar.update


PROGRESS_LINE_SECONDS = 30.0


def _progress_lines(total: int, model: str) -> Callable[[int], None]:
    """One line at the start, then one every PROGRESS_LINE_SECONDS and at the end: N/total, rate, ETA."""
    import time

    started = time.monotonic()
    state = {"done": 0, "said": started}
    click.echo(f"embedding ({model}): {total} text(s)", err=True)

    def advance(n: int) -> None:
        state["done"] += n
        now = time.monotonic()
        if now - state["said"] < PROGRESS_LINE_SECONDS and state["done"] < total:
            return
        state["said"] = now
        rate = state["done"] / max(now - started, 1e-9)
        eta = f", ETA {(total - state['done']) / rate:.0f}s" if rate and state["done"] < total else ""
        click.echo(f"embedding ({model}): {state['done']}/{total}, {rate:.1f} texts/s{eta}", err=True)

    return advance


# --- embed ---------------------------------------------------------------------------------------

@main.command("embed")
@click.option("--batch-size", type=click.IntRange(1, 4096), help="Texts per model call and per transaction.")
@click.option("--limit", type=click.IntRange(1), help="Stop after this many texts.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@friendly
def embed_cmd(batch_size: int | None, limit: int | None, as_json: bool) -> None:
    """Drain the embedding queue with the configured model (run several at once to share the work).

    Also queues every chunk text that has no embedding for the current model (after a model switch),
    and, with the local model, every chunk text without its sparse term vector (the sparse arm).
    """
    done = _service().embed(batch_size=batch_size, limit=limit, progress=None if as_json else _progress_bar)
    if as_json:
        _emit_json(done.to_dict())
    else:
        click.echo(f"{done.embedded} text(s) embedded with {done.model} in {done.seconds:.1f}s; "
                   f"{done.remaining} left in the queue", err=True)


# --- show ----------------------------------------------------------------------------------------

@main.command("show")
@click.argument("act", type=ACT_ID)
@click.argument("article")
@click.option("--as-of", type=IsoDate(), help="The text in force on this date.")
@click.option("--version", "version_no", type=click.IntRange(1), help="A specific stored version of ACT.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def show_cmd(act: str, article: str, as_of: Any, version_no: int | None, as_json: bool) -> None:
    """Print one article, e.g.  pipeline show DU/2025/277 151^1  (151¹ and 'art. 151^1' work too)."""
    found = _service().show(act, article, as_of=as_of.date() if as_of else None, version_no=version_no)
    if as_json:
        # "eli": the act's id under its old key, kept for one release (CHANGELOG.md); "act" is the key.
        _emit_json({**found, "eli": found["act"]})
        return
    head = (f"{found['act']} art. {found['article']} (version {found['version_no']}, "
            f"text as of {found['valid_from'] or 'an unknown date'})")
    if found["repealed"]:
        head += " [uchylony]"
    click.echo(head)
    if found["heading_path"]:
        click.echo(" / ".join(found["heading_path"]))
    click.echo()
    click.echo(found["text"])
    if found["currency"]:  # after the text: the head, headings and text keep their lines for scripts
        click.echo()
        click.echo(f"Aktualność: {found['currency']['note']}")
    _print_context(found)


def _print_context(found: dict) -> None:
    """The article's legal context after it: what it refers to, what refers to it, its definitions."""
    own_act = found["act"]
    if refs := found["references"]:
        click.echo()
        click.echo("Refers to:")
        for r in refs:
            if r["kind"] == "relative":
                where = f"this article, {r['unit']}"
            else:
                act = "" if r["kind"] == "internal" else f"{r['act'] or '(act not identified)'} "
                where = (f"{act}art. {r['article']}" + (f" {r['unit']}" if r["unit"] else "")) if r["article"] \
                    else f"{r['act'] or '(act not identified)'} (the whole act)"
                if r["kind"] != "internal" and r["article"] and not r["stored"]:
                    where += "  [not stored]"
            click.echo(f"  {where}   ← {_snippet(r['text'], 90)}")
    if cited := found["referenced_by"]:
        click.echo()
        click.echo("Referred to by:")
        click.echo("  " + ", ".join(f"art. {c['article']}" if c["act"] == own_act else f"{c['act']} art. {c['article']}"
                                    for c in cited))
    if definitions := found["definitions"]:
        click.echo()
        click.echo("Definitions used:")
        for d in definitions:
            click.echo(f"  {d['term']} (art. {d['article']}{' ' + d['unit'] if d['unit'] else ''}): "
                       f"{_snippet(d['text'], 140)}")


@main.command("diff")
@click.argument("act", type=ACT_ID)
@click.argument("article")
@click.option("--from", "from_date", type=IsoDate(), help="The older text: the one in force on this date "
                                                           "[default: the stored text before the newer one].")
@click.option("--to", "to_date", type=IsoDate(), help="The newer text: the one in force on this date [default: the newest].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable diff.")
@friendly
def diff_cmd(act: str, article: str, from_date: Any, to_date: Any, as_json: bool) -> None:
    """How ARTICLE of ACT changed between two stored texts: a word diff, [-removed-] {+added+}.

    \b
    pipeline diff DU/2025/277 154
    pipeline diff DU/1974/141 154 --from 2023-01-01 --to 2025-06-01
    """
    diff = _service().diff(act, article, from_date=from_date.date() if from_date else None,
                           to_date=to_date.date() if to_date else None)
    if as_json:
        _emit_json(diff)
        return
    side = lambda s: f"{s['act']} version {s['version_no']}, text as of {s['valid_from'] or 'an unknown date'}"  # noqa: E731
    click.echo(f"art. {diff['article']} of {diff['act']}: {side(diff['from'])} -> {side(diff['to'])}")
    if diff["note"]:
        click.echo(diff["note"])
    if diff["unchanged"]:
        click.echo("unchanged")
        return
    click.echo()
    click.echo("".join(op["text"] if op["op"] == "equal" else f"[-{op['text']}-]" if op["op"] == "delete"
                       else f"{{+{op['text']}+}}" for op in diff["ops"]))


# --- search / ask --------------------------------------------------------------------------------

def _search_options(fn: Callable) -> Callable:
    fn = click.option("--act", "acts", multiple=True, type=ACT_ID, metavar="ID", help="Only these acts (repeatable).")(fn)
    fn = click.option("--as-of", type=IsoDate(), help="Texts in force on this date.")(fn)
    fn = click.option("--include-repealed", is_flag=True, help="Also search repealed (uchylone) articles.")(fn)
    fn = click.option("-k", "k", type=click.IntRange(1, MAX_K), default=DEFAULT_K, show_default=True,
                      help="How many articles.")(fn)
    return fn


@main.command("search")
@click.argument("query")
@_search_options
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="hybrid fuses the arms; sparse is the local model's learned term arm alone.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable hits.")
@friendly
def search_cmd(query: str, k: int, mode: str, acts: tuple[str, ...], as_of: Any, include_repealed: bool,
               as_json: bool) -> None:
    """Find the articles that answer QUERY (Polish full text + vectors, fused in SQL)."""
    found = _service().search(query, k=k, mode=mode, acts=acts, as_of=as_of.date() if as_of else None,
                              include_repealed=include_repealed)
    for warning in found.warnings:
        _warn(warning)
    hits = found.hits
    if as_json:
        # The hits as MCP search_law and the web page give them; warnings stay on stderr (the output is the list).
        _emit_json(found.records())
        return
    if not hits:
        click.echo("No matching articles.", err=True)
        return
    sparse_arm = any(h.sparse_rank for h in hits)  # the local model's sparse head took part
    for i, h in enumerate(hits, start=1):
        sim = f"{h.similarity:.3f}" if h.similarity is not None else "-"
        bm25 = f"{h.text_score:.2f}" if h.text_score is not None else "-"
        part = f" (part {h.part})" if h.part > 1 else ""
        vector = f"vector {sim} (#{h.vector_rank})" if h.vector_rank else "vector -"
        text = f"text {bm25} (#{h.text_rank})" if h.text_rank else "text -"
        sparse = "" if not sparse_arm else f"  sparse {h.sparse_score:.2f} (#{h.sparse_rank})" if h.sparse_rank \
            else "  sparse -"
        click.echo(f"{i:>2}. {h.act} art. {h.article}{part}  score {h.score:.4f}  {vector}  {text}{sparse}")
        click.echo(f"    {_snippet(h.text)}")
    for note in dict.fromkeys(h.currency["note"] for h in hits if h.currency):
        click.echo(f"Aktualność: {note}")



def _warn(message: str) -> None:
    click.echo(f"Warning: {message}", err=True)


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
    streaming = not as_json and not no_stream
    printed: list[str] = []

    def print_token(piece: str) -> None:
        printed.append(piece)
        click.echo(piece, nl=False)

    try:
        asked = _service().ask(
            question, k=k, acts=acts, as_of=as_of.date() if as_of else None, include_repealed=include_repealed,
            rewrite=rewrite, offline=offline, stream=not no_stream,
            on_rewrite=None if as_json else lambda q: click.echo(f"Przeformułowane pytanie: {q}", err=True),
            on_fragments=None if as_json else _print_fragments,
            on_token=print_token if streaming else None,
        )
    except Exception:
        if printed:  # end the half-printed answer's line, so that the error starts on its own
            click.echo()
        raise
    if as_json:
        _emit_json(asked.to_dict())
        return
    result = asked.answer
    if result.model is None and not result.refused:
        _print_fragments(result.fragments)
    if asked.streamed:
        click.echo()
    else:
        click.echo(result.text)
    if asked.currency_warning:
        click.echo(asked.currency_warning, err=True)
    for warning in asked.warnings:
        _warn(warning)
    for warning in asked.answer_warnings:
        click.echo(warning, err=True)
    tokens = ""
    if result.prompt_tokens is not None:
        tokens = f"; tokens {result.prompt_tokens} in / {result.completion_tokens} out"
        tokens += f", cost ${result.cost_usd:.6f}" if result.cost_usd is not None else ", cost unknown (set ANSWER_PRICE_IN/OUT)"
    click.echo(f"({asked.note}{tokens})", err=True)


def _print_fragments(fragments: list) -> None:
    click.echo("Fragmenty:", err=True)
    for i, f in enumerate(fragments, start=1):
        if f.role == "definition":  # read beside the hits (docs/legal-context.md), not ranked
            why = f"definition of „{f.term}” ({f.unit or 'the article'}), used by art. {f.used_by}"
        elif f.role == "reference":
            why = f"cited by art. {f.used_by}"
        else:
            sim = f"{f.similarity:.3f}" if f.similarity is not None else "-"
            why = f"score {f.score:.4f}, similarity {sim}"
        click.echo(f"  {i}. [{f.act}, art. {f.article}] {why}", err=True)
    click.echo(err=True)


# --- eval ----------------------------------------------------------------------------------------

@main.command("eval")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-k", "k", type=click.IntRange(1, MAX_K), default=10, show_default=True,
              help="Articles retrieved per question; recall is also reported at this k.")
@click.option("--mode", type=click.Choice([*MODES, "all"]), default="all",
              show_default=True, help="all: each arm alone (sparse where the model has a sparse head) and fused.")
@click.option("--ids", type=click.Choice(["all", "odd", "even"]), default="all", show_default=True,
              help="Only questions whose id ends in an odd / even number (dev set: odd tune, even report).")
@click.option("--fusion", type=click.Choice(FUSIONS), default=None,
              help="Override the model's fusion (ablations).")
@click.option("--text-weight", type=click.FloatRange(0), default=None, help="Override the text arm's weight.")
@click.option("--vector-weight", type=click.FloatRange(0), default=None, help="Override the vector arm's weight.")
@click.option("--sparse-weight", type=click.FloatRange(0), default=None, help="Override the sparse arm's weight.")
@click.option("--fetch-k", type=click.IntRange(1, 1000), default=None, help="Override candidates per arm.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@friendly
def eval_cmd(file: Path, k: int, mode: str, ids: str, fusion: str | None, text_weight: float | None,
             vector_weight: float | None, sparse_weight: float | None, fetch_k: int | None, as_json: bool) -> None:
    """Retrieval quality on a question file (JSON lines: question, expect [{act, art}], answerable).

    Prints recall@1/5/10/k, MRR, the refusals `ask` would make (unanswerable and answerable
    questions), and the gold article's rank per question and mode. Exits non-zero only on bad
    input, never on a low score.
    """
    from pipeline.retrieval import evaluate

    modes = None if mode == "all" else (mode,)
    overrides = {name: value for name, value in (("fusion", fusion), ("text_weight", text_weight),
                                                 ("vector_weight", vector_weight), ("sparse_weight", sparse_weight),
                                                 ("fetch_k", fetch_k))
                 if value is not None}
    report = _service().eval(file, k=k, modes=modes, ids=ids, **overrides)
    if as_json:
        _emit_json(report)
        return
    for warning in report["warnings"]:
        _warn(warning)
    m = report["metrics"]
    n = len(report["questions"])
    if report["settings"]:
        click.echo("overrides: " + ", ".join(f"{name} {value}" for name, value in report["settings"].items()))
    click.echo(f"{n} question{'' if n == 1 else 's'} ({ids} ids); {m['answerable_scored']} answerable with their act in the "
               f"database, {m['answerable_not_in_corpus']} whose act is not ingested (not scored), "
               f"{m['unanswerable']} unanswerable")
    cuts = evaluate.recall_ks(k)
    modes = tuple(report["modes"])
    click.echo(f"{'mode':<8} " + " ".join(f"{'R@' + str(c):>6}" for c in cuts) + f" {'MRR':>6}")
    figure = lambda x, spec: f"{'-':>6}" if x is None else format(x, spec)  # noqa: E731 (None: none scored)
    for md in modes:
        r = m[md]
        click.echo(f"{md:<8} " + " ".join(figure(r[f'recall@{c}'], '>6.2f') for c in cuts)
                   + f" {figure(r['mrr'], '>6.3f')}")
    if m["refusal_rate_unanswerable"] is not None or m["false_refusal_rate"] is not None:
        unanswerable = m["refusal_rate_unanswerable"]
        click.echo(f"refused unanswerable: {'-' if unanswerable is None else f'{unanswerable:.0%}'}; "
                   f"refused answerable: {(m['false_refusal_rate'] or 0):.0%} "
                   f"(pipeline.retrieval.refusal, min similarity {report['threshold']:.2f})")
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
    """Check database, pgvector, text search, statistics, data, embedder and answer model; print what to fix.

    Exit 1 when a check failed, 0 otherwise (warnings included: read them in --json)."""
    checks = _service().doctor()
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
@click.option("--password", help="Also allow the role to log in with this password (visible to `ps` and in "
                                 "shell history: prefer --password-stdin).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of standard input.")
@friendly
def db_grant_reader(role: str, password: str | None, password_stdin: bool) -> None:
    """Create ROLE that may only SELECT the documented views and call the search functions."""
    from pipeline.storage import schema

    if password_stdin:
        if password is not None:
            raise UsageError("give the password one way: --password or --password-stdin", param="--password-stdin")
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise UsageError("no password on standard input", param="--password-stdin")

    can_log_in = _service().grant_reader(role, password)
    functions = ", ".join(f.split("(")[0] + "()" for f in schema.READER_FUNCTIONS)
    click.echo(f"role {role} can read: {', '.join(schema.READER_VIEWS)}; and call: {functions}")
    if not can_log_in:  # a role given a password before keeps it, and its login
        click.echo(f"note: {role} cannot log in; give --password, or use it from another "
                   f"login with SET ROLE {role}", err=True)


# --- find: acts by title -----------------------------------------------------------------------------

@main.command("find")
@click.argument("title", required=False, default="")
@click.option("--type", "act_type", metavar="TYPE", help="Only acts of this type: Ustawa, Rozporządzenie, Obwieszczenie …")
@click.option("--in-force", is_flag=True, help="Only acts in force.")
@click.option("--year", type=click.IntRange(1918, 2100), help="Only acts of this year (of their Dz.U. position).")
@click.option("--publisher", type=click.Choice(["DU", "MP"]), default="DU", show_default=True,
              help="Dziennik Ustaw or Monitor Polski.")
@click.option("--limit", type=click.IntRange(1, MAX_FIND_LIMIT), default=FIND_LIMIT, show_default=True,
              help="The most acts listed.")
@click.option("--offline", is_flag=True, help="Search the stored acts, not the ELI API.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result.")
@friendly
def find_cmd(title: str, act_type: str | None, in_force: bool, year: int | None, publisher: str, limit: int,
             offline: bool, as_json: bool) -> None:
    """Find acts by words of their title in the ELI API: id, type, status, date, the newest consolidated
    text, and whether it is stored (*).

    \b
    pipeline find "kodeks pracy"
    pipeline find "ochronie danych" --type Ustawa --in-force
    pipeline find --year 2026 --type Ustawa --json
    pipeline find kodeks --offline          # what is stored

    Then: pipeline ingest --title "Kodeks pracy" (its newest consolidated text).
    """
    from pipeline.service import ActQuery

    found = _service().find(ActQuery(title, act_type, in_force, year, publisher), limit=limit, offline=offline)
    if as_json:
        _emit_json(found.to_dict())
        if not found.acts:
            sys.exit(1)  # as grep: no match is a failure a script can test
        return
    for w in found.warnings:
        _warn(w)
    if not found.acts:
        raise click.ClickException(f"no act {'stored' if offline else 'in the ELI API'} has "
                                   f"{found.query.describe()}")
    click.echo(f"{'':1} {'act':<13} {'type':<14} {'date':<10} {'in force':<12} {'newest text':<13}  title")
    for a in found.acts:
        newest = a["newest"] or ("-" if a["has_text"] is not False else "(no text)")
        click.echo(f"{'*' if a['stored'] else ' ':1} {a['act']:<13} {_snippet(a['act_type'] or '-', 14):<14} "
                   f"{a['announcement_date'] or '-':<10} {a['in_force'] or '-':<12} {newest:<13}  "
                   f"{_snippet(a['title'] or '-', 80)}")
    shown = f"{len(found.acts)} act(s)" + (f" of {found.total} matching record(s)" if found.source == "api" else "")
    click.echo(f"{shown}; * stored" + ("" if offline else "; pipeline ingest --title TITLE ingests the newest text"),
               err=True)


# --- currency: acts / sync -------------------------------------------------------------------------

@main.command("acts")
@click.option("--all", "all_acts", is_flag=True, help="Also acts whose text is no longer the current one.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable list.")
@friendly
def acts_cmd(all_acts: bool, as_json: bool) -> None:
    """List stored acts (the current text of each) with their currency: text as of, later amendments, in force."""
    from pipeline.storage.currency import display_title

    found = _service().acts(current_only=not all_acts)
    if as_json:
        # The currency's own keys (eli, base_eli, text_as_of, amended_after …) stay at the top level for
        # one release (CHANGELOG.md); the record's keys (act, base_act, currency …) are the schema.
        _emit_json([{**a["currency"], **a} for a in found])
        return
    if not found:
        click.echo("No acts stored; run: pipeline ingest --act DU/2025/277", err=True)
        return
    click.echo(f"{'act':<14} {'base act':<14} {'ver':>3} {'text as of':<10} {'in force':<12} {'later':>5} "
               f"{'checked':<16}  {'latest amendment':<26}  title")
    for a in found:
        c = a["currency"]
        amended = c["amended_after"]
        later = "?" if amended is None else str(len(amended))
        last = amended[-1] if amended else None
        checked = f"{c['checked_at']:%Y-%m-%d %H:%M}" if c["checked_at"] else "-"
        latest = f"{last['eli']} ({last['date']})" if last else ""
        title = _snippet(display_title(a["title"]), 70) if a["title"] else "-"  # which act is which, at a glance
        click.echo(f"{a['act']:<14} {a['base_act']:<14} {a['version_no'] or '-':>3} {str(c['text_as_of'] or '-'):<10} "
                   f"{a['in_force'] or '-':<12} {later:>5} {checked:<16}  {latest:<26}  {title}")


@main.command("remove")
@click.argument("act", type=ACT_ID)
@click.option("--yes", is_flag=True, help="Confirm (required): the act's texts leave the database.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@friendly
def remove_cmd(act: str, yes: bool, as_json: bool) -> None:
    """Remove ACT with every stored text of it (its consolidated texts and all their versions).

    \b
    pipeline remove DU/1974/141 --yes
    One transaction; search statistics follow. Raw responses in dane/ and the ingest log stay, and
    so do the vectors (pipeline ingest brings the act back without embedding it again).
    """
    if not yes:
        raise click.UsageError(f"removing {act} deletes its stored texts; pass --yes to confirm")
    removed = _service().remove(act)
    if as_json:
        _emit_json(removed.to_dict())
        return
    click.echo(f"removed {removed.base}: {', '.join(removed.acts)}; {removed.versions} version(s), "
               f"{removed.chunks} chunk(s)", err=True)


@main.command("sync")
@click.option("--archive", "archive_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where raw API responses are kept [default: $PIPELINE_ARCHIVE or ./dane].")
@click.option("--no-embed", is_flag=True, help="Do not compute embeddings for new versions now.")
@click.option("--restart", is_flag=True, help="Check every act, even those an interrupted sync already checked.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@friendly
def sync_cmd(archive_dir: Path | None, no_embed: bool, restart: bool, as_json: bool) -> None:
    """Re-check every stored act against the ELI API and ingest what changed (safe to run from cron).

    \b
    One line per act: unchanged | new version (a newer consolidated text) | amended since (the API
    lists amendments the stored text lacks) | not in force | failed | skipped (checked by an
    interrupted sync that this one resumes, or ingested from a local file under an id the API does
    not publish). Exit status 1 when any act failed; a second sync while
    one runs is refused with exit status 75 (try again later), so cron can tell the two apart.
    """
    from pipeline.indexing import sync

    try:
        report = _service().sync(archive_dir=archive_dir, embed=not no_embed, restart=restart,
                                 progress=None if as_json else (lambda m: click.echo(f"  {m}", err=True)),
                                 on_result=None if as_json else (lambda r: click.echo(r.line())),
                                 embed_progress=None if as_json else _progress_bar)
    except sync.SyncBusy as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(SYNC_BUSY_EXIT)
    if as_json:
        _emit_json(report.to_dict())
    else:
        counts = report.to_dict()["counts"]
        click.echo(f"sync {report.sync_id}: " + (", ".join(f"{n} {s}" for s, n in counts.items()) or "no acts stored")
                   + (f" (resumed sync {report.resumed})" if report.resumed else ""), err=True)
    if report.failed:
        sys.exit(1)


SYNC_BUSY_EXIT = 75  # EX_TEMPFAIL (sysexits.h): another sync holds the lock; not a failed act


# --- mcp -----------------------------------------------------------------------------------------

@main.command("mcp")
@click.option("--http", is_flag=True, help="Serve the streamable HTTP transport instead of stdio.")
@click.option("--host", help="HTTP: address to listen on [default: 127.0.0.1].")
@click.option("--port", type=click.IntRange(1, 65535), help="HTTP: port [default: 8000].")
@friendly
def mcp_cmd(http: bool, host: str | None, port: int | None) -> None:
    """Serve search_law, get_article, compare_versions, list_acts, find_acts (and answer, with a model) to MCP clients.

    \b
    stdio (Claude Desktop, Claude Code):  pipeline mcp
    HTTP:                                 pipeline mcp --http --port 8000   -> http://127.0.0.1:8000/mcp
    Same database and settings as the other commands (DATABASE_URL, EMBED_*, ANSWER_*).
    """
    from pipeline.interfaces.mcp_server import serve

    if not http and (host or port):
        raise click.UsageError("--host and --port need --http (stdio is the default transport)")
    serve(http=http, host=host or "127.0.0.1", port=port or 8000)


# --- serve ---------------------------------------------------------------------------------------

@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface; the page has no login).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port.")
@friendly
def serve_cmd(host: str, port: int) -> None:
    """Serve the web page: search and ask, articles with their versions, the stored acts (read-only).

    \b
    pipeline serve                 -> http://127.0.0.1:8000/
    Same database and settings as the other commands (DATABASE_URL, EMBED_*, ANSWER_*); docs/web.md.
    """
    from pipeline.interfaces.web import serve

    serve(host=host, port=port)
