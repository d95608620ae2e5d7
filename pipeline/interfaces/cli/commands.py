"""The `pipeline` commands: each parses its options, calls one method of pipeline.Service and prints
what it returns (pipeline.interfaces.cli.render; ``--json``: the records themselves)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pipeline.core import __version__
from pipeline.core.config import embed_wait
from pipeline.core.errors import SyncBusy, UsageError
from pipeline.core.limits import DEFAULT_K, DEFAULT_MAX_CHARS, FIND_LIMIT, FUSIONS, MAX_CHARS, MAX_FIND_LIMIT, \
    MAX_JOBS, MAX_K, MAX_READER_CONNECTIONS, MIN_CHARS, MODES, READER_CONNECTION_LIMIT, READER_STATEMENT_TIMEOUT
from pipeline.interfaces.cli import render
from pipeline.interfaces.cli.params import (ACT_ID, QUESTION, TOKEN, IsoDate, day, emit_json, friendly, service,
                                            warn)

SYNC_BUSY_EXIT = 75  # EX_TEMPFAIL (sysexits.h): another sync holds the lock; not a failed act


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
    revision = service().upgrade(revision)
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
    running = service()
    undone = running.downgrade(revision)
    # The revision the database is at now (not the one asked for: upgrading to an older one is a no-op).
    click.echo(f"database at {running.revision() or 'base (empty)'}")
    for rev, summary in undone:  # what is gone with them, for the operator
        click.echo(f"undid {rev}: {summary}", err=True)
    click.echo("note: other commands upgrade the database to head again before they run", err=True)


@db_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def db_status(as_json: bool) -> None:
    """Server kind and versions, migration head, row counts, embedding progress."""
    info = service().status()
    if as_json:
        emit_json(info)
        return
    render.status(info)


main.add_command(db_status, "status")  # `pipeline status`: the embedding's progress is what a newcomer looks for


@db_group.command("url")
@friendly
def db_url() -> None:
    """Print a URL that psql accepts:  psql "$(pipeline db url)"."""
    click.echo(service().database_url(migrate=False))


@db_group.command("stop")
@friendly
def db_stop() -> None:
    """Stop the embedded server (it keeps running between commands otherwise)."""
    click.echo("stopped" if service().stop_database() else "not running")


@db_group.command("replica")
@click.option("--home", required=True, type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="The standby's PIPELINE_HOME: a new or empty folder (its data in DIR/pgdata).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def db_replica(home: Path, as_json: bool) -> None:
    """Make a streaming standby of the embedded server in DIR, and start it (pg_basebackup -R).

    \b
    pipeline db replica --home /srv/standby1           # prints the standby's URL
    DATABASE_READ_URL="$(PIPELINE_HOME=/srv/standby1 pipeline db url)" pipeline serve
    PIPELINE_HOME=/srv/standby1 pipeline db status     # a standby, with its replay lag
    PIPELINE_HOME=/srv/standby1 pipeline db stop

    The standby replays what the primary writes; it serves reads and refuses writes.
    """
    made = service().make_replica(home)
    if as_json:
        emit_json(made)
        return
    render.replica(made)


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
@click.option("--no-embed", is_flag=True, help="Store chunks and queue their texts; no worker embeds them now.")
@click.option("--wait", is_flag=True, help="Embed the new texts before returning, as scripts that need the vectors "
                                           "want (default: a background worker; PIPELINE_EMBED_WAIT=1: always wait).")
@click.option("--no-amending-acts", is_flag=True,
              help="Do not also fetch the acts that amended each --act after its text (from the same source).")
@click.option("--chunk-chars", type=click.IntRange(MIN_CHARS, MAX_CHARS), help=f"Chunk size limit [default: {DEFAULT_MAX_CHARS}].")
@click.option("--latest", is_flag=True,
              help="Ask the API for the newest consolidated text of each --act (e.g. DU/1974/141) and ingest that.")
@click.option("--jobs", type=click.IntRange(1, MAX_JOBS), metavar="N",
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
def ingest_cmd(no_embed: bool, wait: bool, no_amending_acts: bool, as_json: bool, **asked: Any) -> None:
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
    interrupted one resumes where it stopped. An act asked for by id brings the acts that amended it
    after its text (its record's "Akty zmieniające" after the text's date, a consolidated text's
    "Nowelizacje po tekście jednolitym") from the same source, unless stored already; one the source
    lacks is a warning. --no-amending-acts: only the acts asked for.
    """
    from pipeline.service import IngestEvents, IngestRequest

    if wait and no_embed:
        raise click.UsageError("--wait embeds now, --no-embed not at all: give one")
    wait = wait or embed_wait()
    # The texts are stored and searchable first; a background worker embeds them unless --wait.
    request = IngestRequest(embed=wait and not no_embed, amending_acts=not no_amending_acts, **asked)
    quiet = as_json
    if request.dry_run:
        picks = service().ingest_plan(request, progress=None if quiet else render.step)
        emit_json(picks) if as_json else render.ingest_plan(picks)
        return
    events = IngestEvents() if quiet else IngestEvents(
        on_start=lambda i, n, what: click.echo(f"[{i}/{n}] {what}", err=True), on_result=render.ingest_result,
        progress=render.step, embed_progress=render.progress_bar, on_warning=render.ingest_warning)
    report = service().ingest(request, events)
    background = None
    if not wait and not no_embed and not request.dry_run and report.waiting:
        background = service().embed_in_background()
    if as_json:
        emit_json({**report.to_dict(), "background": background.to_dict() if background else None})
    else:
        render.ingest_summary(report, by_title=request.by_title, embedded_now=request.embed, background=background)
    if report.failed:
        sys.exit(1)


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
    done = service().embed(batch_size=batch_size, limit=limit, progress=None if as_json else render.progress_bar)
    if as_json:
        emit_json(done.to_dict())
    else:
        click.echo(f"{done.embedded} text(s) embedded with {done.model} in {done.seconds:.1f}s; "
                   f"{done.remaining} left in the queue", err=True)


# --- show ----------------------------------------------------------------------------------------

@main.command("show")
@click.argument("act", type=ACT_ID)
@click.argument("article", type=TOKEN)
@click.option("--as-of", type=IsoDate(), help="The text in force on this date.")
@click.option("--version", "version_no", type=click.IntRange(1), help="A specific stored version of ACT.")
@click.option("--official", is_flag=True,
              help="The official text as stored, without the later changes that set, add or repeal whole units.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@friendly
def show_cmd(act: str, article: str, as_of: Any, version_no: int | None, official: bool, as_json: bool) -> None:
    """Print one article, e.g.  pipeline show DU/2025/277 151^1  (151¹ and 'art. 151^1' work too).

    Where stored acts changed it after its text, the wording on the date is rebuilt from the changes that
    set, add, repeal or renumber whole units, and marked so; --official prints the official text.

    ACT or ARTICLE given as - is read from standard input."""
    found = service().show(act, article, as_of=day(as_of), version_no=version_no, official=official)
    if as_json:
        # "eli": the act's id under its old key, kept for one release (CHANGELOG.md); "act" is the key.
        emit_json({**found, "eli": found["act"]})
        return
    render.article(found)


@main.command("check")
@click.argument("file", required=False, metavar="[FILE|-]")
@click.option("--as-of", type=IsoDate(), help="Check against the law in force on this date [default: today].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable: every citation with its status.")
@friendly
def check_cmd(file: str | None, as_of: Any, as_json: bool) -> None:
    """Check the citations of a Polish text (a letter, a brief, an answer) against the stored acts.

    \b
    pipeline check pismo.txt
    pipeline check - --as-of 2025-03-01 < pismo.txt

    Each citation (art. 154 § 1 pkt 2 k.p., art. 5 ust. 2 ustawy z dnia … o …, art. 1 ustawy (Dz. U. …))
    gets one status: ok, not_found, not_in_force, undetermined, act_not_stored, ambiguous. Past the most
    citations one check reads, the rest are counted as not checked. Exits 0 only when every citation was
    checked and is ok; a text with no citation is not "checked, nothing wrong" (exit 1)."""
    if file in (None, "-"):
        text = sys.stdin.read()
    else:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise UsageError(f"cannot read {file}: {why}", param="FILE") from None
    checked = service().check(text, as_of=day(as_of))
    if as_json:
        emit_json(checked.to_dict())
    else:
        render.checked(checked)
    if not checked.ok:
        sys.exit(1)


@main.command("verify")
@click.argument("acts", nargs=-1, type=ACT_ID, metavar="[ACT]...")
@click.option("--show", type=click.IntRange(0, 1000), default=10, show_default=True,
              help="List this many different and undetermined units (and dates) of each pair.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable: one record per pair of texts.")
@friendly
def verify_cmd(acts: tuple[Any, ...], show: int, as_json: bool) -> None:
    """Check the stored time and changes against the stored texts themselves.

    \b
    pipeline verify                 every act with two stored official texts
    pipeline verify DU/2018/1000    one act (any of its texts' ids)

    For each act with two stored official texts, each unit of the later text is compared with what the
    earlier text and the stored changes give on its date: equal, different (a wording the tool rebuilds
    that the later official text contradicts), or undetermined (changed by an act not stored, or a change
    not applied, why said); and each date the later text's footnotes give a change with the date the stored
    amending act's instruction takes effect. Exits 1 on any determined difference."""
    pairs = service().verify([str(a) for a in acts], show=show)
    if as_json:
        emit_json(pairs)
    else:
        render.verified(pairs)
    if any(p["units"]["different"] or p["dates"]["different"] for p in pairs):
        sys.exit(1)


@main.command("diff")
@click.argument("act", type=ACT_ID)
@click.argument("article", type=TOKEN)
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
    result = service().diff(act, article, from_date=day(from_date), to_date=day(to_date))
    emit_json(result) if as_json else render.diff(result)


# --- search / ask --------------------------------------------------------------------------------

def _search_options(fn: Callable) -> Callable:
    fn = click.option("--act", "acts", multiple=True, type=ACT_ID, metavar="ID", help="Only these acts (repeatable).")(fn)
    fn = click.option("--as-of", type=IsoDate(), help="Texts in force on this date.")(fn)
    fn = click.option("--include-repealed", is_flag=True, help="Also search repealed (uchylone) articles.")(fn)
    fn = click.option("-k", "k", type=click.IntRange(1, MAX_K), default=DEFAULT_K, show_default=True,
                      help="How many articles.")(fn)
    return fn


@main.command("search")
@click.argument("query", type=QUESTION)
@_search_options
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="hybrid fuses the arms; sparse is the local model's learned term arm alone.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable hits.")
@friendly
def search_cmd(query: str, k: int, mode: str, acts: tuple[str, ...], as_of: Any, include_repealed: bool,
               as_json: bool) -> None:
    """Find the articles that answer QUERY (Polish full text + vectors, fused in SQL); - reads it from
    standard input."""
    found = service().search(query, k=k, mode=mode, acts=acts, as_of=day(as_of), include_repealed=include_repealed)
    for warning in found.warnings:
        warn(warning)
    if as_json:
        # The hits as MCP search_law and the web page give them; warnings stay on stderr (the output is the list).
        emit_json(found.records())
        return
    render.hits(found)


@main.command("ask")
@click.argument("question", type=QUESTION)
@_search_options
@click.option("--rewrite", is_flag=True, help="First let the model rewrite the question in statutory language.")
@click.option("--offline", is_flag=True, help="Never call a model: answer with the most relevant cited sentences.")
@click.option("--no-stream", is_flag=True, help="Print the answer at once instead of as it is written.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable answer.")
@friendly
def ask_cmd(question: str, k: int, acts: tuple[str, ...], as_of: Any, include_repealed: bool, rewrite: bool,
            offline: bool, no_stream: bool, as_json: bool) -> None:
    """Answer QUESTION from the stored acts, citing [act, art.]; or say the answer is not in them.
    QUESTION - reads it from standard input (echo "Ile dni urlopu?" | pipeline ask -).

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
        asked = service().ask(
            question, k=k, acts=acts, as_of=day(as_of), include_repealed=include_repealed,
            rewrite=rewrite, offline=offline, stream=not no_stream,
            on_rewrite=None if as_json else lambda q: click.echo(f"Przeformułowane pytanie: {q}", err=True),
            on_fragments=None if as_json else render.fragments,
            on_token=print_token if streaming else None,
        )
    except Exception:
        if printed:  # end the half-printed answer's line, so that the error starts on its own
            click.echo()
        raise
    emit_json(asked.to_dict()) if as_json else render.answer(asked)


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
    modes = None if mode == "all" else (mode,)
    overrides = {name: value for name, value in (("fusion", fusion), ("text_weight", text_weight),
                                                 ("vector_weight", vector_weight), ("sparse_weight", sparse_weight),
                                                 ("fetch_k", fetch_k))
                 if value is not None}
    report = service().eval(file, k=k, modes=modes, ids=ids, **overrides)
    emit_json(report) if as_json else render.evaluation(report, k, ids)


# --- doctor / access -----------------------------------------------------------------------------

@main.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable checks.")
@friendly
def doctor_cmd(as_json: bool) -> None:
    """Check database, pgvector, text search, statistics, data, embedder and answer model; print what to fix.

    Exit 1 when a check failed, 0 otherwise (warnings included: read them in --json)."""
    checks = service().doctor()
    emit_json(checks) if as_json else render.doctor(checks)
    if any(c["status"] == "fail" for c in checks):
        sys.exit(1)


@db_group.command("grant-reader")
@click.argument("role")
@click.option("--password", help="Also allow the role to log in with this password (visible to `ps` and in "
                                 "shell history: prefer --password-stdin).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of standard input.")
@click.option("--statement-timeout", default=READER_STATEMENT_TIMEOUT, show_default=True, metavar="DURATION",
              help="Cancel any statement of the role that runs longer (in this database): 500ms, 5s, 2min, 1h.")
@click.option("--connection-limit", type=click.IntRange(1, MAX_READER_CONNECTIONS), default=READER_CONNECTION_LIMIT,
              show_default=True, help="The most connections the role may hold at once.")
@friendly
def db_grant_reader(role: str, password: str | None, password_stdin: bool, statement_timeout: str,
                    connection_limit: int) -> None:
    """Create ROLE that may only SELECT the documented views and call the search functions, with a statement
    timeout and a connection limit, and no temporary tables (TEMPORARY is taken from PUBLIC: docs/sql.md)."""
    if password_stdin:
        if password is not None:
            raise UsageError("give the password one way: --password or --password-stdin", param="--password-stdin")
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise UsageError("no password on standard input", param="--password-stdin")
    render.reader_role(service().grant_reader(role, password, statement_timeout=statement_timeout,
                                              connection_limit=connection_limit))


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

    found = service().find(ActQuery(title, act_type, in_force, year, publisher), limit=limit, offline=offline)
    if as_json:
        emit_json(found.to_dict())
        if not found.acts:
            sys.exit(1)  # as grep: no match is a failure a script can test
        return
    render.found_acts(found, offline=offline)


# --- currency: acts / sync -------------------------------------------------------------------------

@main.command("acts")
@click.option("--all", "all_acts", is_flag=True, help="Also acts whose text is no longer the current one.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable list.")
@friendly
def acts_cmd(all_acts: bool, as_json: bool) -> None:
    """List stored acts (the current text of each) with their currency: text as of, later amendments, in force."""
    found = service().acts(current_only=not all_acts)
    if as_json:
        # The currency's own keys (eli, base_eli, text_as_of, amended_after …) stay at the top level for
        # one release (CHANGELOG.md); the record's keys (act, base_act, currency …) are the schema.
        emit_json([{**a["currency"], **a} for a in found])
        return
    render.stored_acts(found)


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
    removed = service().remove(act)
    if as_json:
        emit_json(removed.to_dict())
        return
    click.echo(f"removed {removed.base}: {', '.join(removed.acts)}; {removed.versions} version(s), "
               f"{removed.chunks} chunk(s)", err=True)


@main.command("sync")
@click.option("--archive", "archive_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where raw API responses are kept [default: $PIPELINE_ARCHIVE or ./dane].")
@click.option("--no-embed", is_flag=True, help="Do not compute embeddings for new versions now.")
@click.option("--no-amending-acts", is_flag=True,
              help="Do not fetch the acts listed as amending a stored text after it that are not stored yet.")
@click.option("--restart", is_flag=True, help="Check every act, even those an interrupted sync already checked.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@friendly
def sync_cmd(archive_dir: Path | None, no_embed: bool, no_amending_acts: bool, restart: bool, as_json: bool) -> None:
    """Re-check every stored act against the ELI API and ingest what changed (safe to run from cron).

    \b
    One line per act: unchanged | new version (a newer consolidated text) | amended since (the API
    lists amendments the stored text lacks) | not in force | failed | skipped (checked by an
    interrupted sync that this one resumes, or ingested from a local file under an id the API does
    not publish). The acts listed as amending a stored text after it are fetched when not stored yet
    (not those of an act stored only as an amending act); --no-amending-acts leaves them. Exit status 1
    when any act failed; a second sync while one runs is refused with exit status 75 (try again
    later), so cron can tell the two apart.
    """
    try:
        report = service().sync(archive_dir=archive_dir, embed=not no_embed, restart=restart,
                                amending_acts=not no_amending_acts,
                                progress=None if as_json else render.step,
                                on_result=None if as_json else (lambda r: click.echo(r.line())),
                                embed_progress=None if as_json else render.progress_bar)
    except SyncBusy as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(SYNC_BUSY_EXIT)
    emit_json(report.to_dict()) if as_json else render.sync_summary(report)
    if report.failed:
        sys.exit(1)


# --- mcp -----------------------------------------------------------------------------------------

# What both listening faces take (pipeline.interfaces.listening; docs/web.md, docs/mcp.md).
ALLOWED_HOST_HELP = ("Another name clients reach this server by (a reverse proxy's public name): NAME (any port) or "
                     "NAME:PORT; repeatable; also PIPELINE_ALLOWED_HOSTS (comma-separated). Loopback names and --host "
                     "are always allowed; a request naming another Host is refused (421).")
TOKEN_FILE_HELP = ("Require the bearer token in this file (its first line) on every request (401 without it); or set "
                   "PIPELINE_TOKEN. Make one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'.")


@main.command("mcp")
@click.option("--http", is_flag=True, help="Serve the streamable HTTP transport instead of stdio.")
@click.option("--host", help="HTTP: address to listen on [default: 127.0.0.1].")
@click.option("--port", type=click.IntRange(1, 65535), help="HTTP: port [default: 8000].")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME[:PORT]", help="HTTP: " + ALLOWED_HOST_HELP)
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="HTTP: " + TOKEN_FILE_HELP)
@friendly
def mcp_cmd(http: bool, host: str | None, port: int | None, allowed_hosts: tuple[str, ...],
            token_file: Path | None) -> None:
    """Serve search_law, get_article, compare_versions, list_acts, find_acts (and answer, with a model) to MCP clients.

    \b
    stdio (Claude Desktop, Claude Code):  pipeline mcp
    HTTP:                                 pipeline mcp --http --port 8000   -> http://127.0.0.1:8000/mcp
    HTTP for other machines:              pipeline mcp --http --host 0.0.0.0 --allowed-host law.firm.pl --token-file T
    Same database and settings as the other commands (DATABASE_URL, EMBED_*, ANSWER_*).
    """
    from pipeline.interfaces.mcp_server import serve

    if not http and (host or port):
        raise click.UsageError("--host and --port need --http (stdio is the default transport)")
    if not http and (allowed_hosts or token_file):
        raise click.UsageError("--allowed-host and --token-file need --http (stdio has no network to guard)")
    serve(http=http, host=host or "127.0.0.1", port=port or 8000, allowed_hosts=allowed_hosts, token_file=token_file)


# --- serve ---------------------------------------------------------------------------------------

@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface; warns without a token).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME[:PORT]", help=ALLOWED_HOST_HELP)
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help=TOKEN_FILE_HELP + " A browser logs in by opening the page once with ?token=….")
@friendly
def serve_cmd(host: str, port: int, allowed_hosts: tuple[str, ...], token_file: Path | None) -> None:
    """Serve the web page: search and ask, articles with their versions, the stored acts (read-only).

    \b
    pipeline serve                 -> http://127.0.0.1:8000/
    Same database and settings as the other commands (DATABASE_URL, EMBED_*, ANSWER_*); docs/web.md.
    """
    from pipeline.interfaces.web import serve

    serve(host=host, port=port, allowed_hosts=allowed_hosts, token_file=token_file)
