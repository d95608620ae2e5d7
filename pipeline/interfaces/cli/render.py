"""How the command line prints what the service returns, for a person (``--json`` prints the records
themselves): one function per kind of result. Results go to stdout, progress and notes to stderr."""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import click

from pipeline.core.numbering import printed
from pipeline.interfaces.cli.params import snippet, warn

# --- db status / doctor / grant-reader -------------------------------------------------------------

_MIGRATION_HINTS = {"ahead": "  -> newer than this pipeline: install the version that migrated it",
                    "behind": "  -> run: pipeline db upgrade", "none": "  -> run: pipeline db upgrade"}


def status(info: dict) -> None:
    click.echo(f"server:      {info['server']} PostgreSQL {info['postgresql']}, "
               f"pgvector {info['pgvector'] or 'not installed on the server (see: pipeline doctor)'}")
    hint = _MIGRATION_HINTS.get(info["migration_state"], "")
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
    if (w := info.get("embedding_worker")) is not None:
        rate = (f", {w['texts_per_second']} texts/s, expected end {w['expected_end'].astimezone():%H:%M}"
                if w["texts_per_second"] else ", its first batch not in yet")
        click.echo(f"worker:      embedding since {w['since'].astimezone():%H:%M}: {w['embedded']} vectors written, "
                   f"{w['queued']} texts queued{rate}")
    click.echo(f"embedder:    {info['embedder'].get('backend')} {info['embedder'].get('model')}")
    if line := _replication(info.get("replication") or {}):
        click.echo(f"replication: {line}")
    for replica in info.get("read_replicas", ()):
        state = replica.get("error") or _replication(replica) or "a primary, not a standby"
        click.echo(f"reads from:  {replica['url']}: {state}")


def _replication(where: dict) -> str:
    """A standby's lag, or a primary's standbys; nothing for a primary without any."""
    if where.get("role") == "standby":
        age = where["last_replay_age_s"]
        replayed = "nothing replayed yet" if age is None else f"last transaction replayed {age:.1f} s ago"
        return (f"read-only standby ({'streaming from' if where['streaming'] else 'NOT streaming from'} "
                f"{where['primary'] or 'its primary'}): {where['behind_bytes']} bytes received and not replayed, "
                f"{replayed}; writes go to the primary")
    standbys = where.get("standbys") or []
    return "primary of " + "; ".join(
        f"{s['name'] or s['client']} ({s['state']}, {s['behind_bytes']} bytes behind"
        + (f", replay lag {s['replay_lag_s']:.3f} s)" if s["replay_lag_s"] is not None else ")")
        for s in standbys) if standbys else ""


def replica(made: dict) -> None:
    click.echo(made["url"])
    click.echo(f"standby of the embedded server in {made['primary']}, streaming, in {made['home']} "
               f"({made['seconds']:.1f} s); its URL (above) is one of DATABASE_READ_URL", err=True)
    click.echo(f"  PIPELINE_HOME={made['home']} pipeline db status   # its replay lag", err=True)
    click.echo(f"  PIPELINE_HOME={made['home']} pipeline db stop", err=True)


def doctor(checks: list[dict]) -> None:
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
    for c in checks:
        click.echo(f"[{marks[c['status']]}] {c['name']}: {c['detail']}")
        if c["fix"]:
            click.echo(f"       fix: {c['fix']}")


def reader_role(granted: dict) -> None:
    role = granted["role"]
    functions = ", ".join(f + "()" for f in granted["functions"])
    click.echo(f"role {role} can read: {', '.join(granted['views'])}; and call: {functions}")
    click.echo(f"role {role}: statement timeout {granted['statement_timeout']}, at most {granted['connection_limit']} "
               f"connections, no temporary tables; the search functions run as {granted['owner_role']}")
    if not granted["can_log_in"]:  # a role given a password before keeps it, and its login
        click.echo(f"note: {role} cannot log in; give --password, or use it from another "
                   f"login with SET ROLE {role}", err=True)
    for note in granted["notes"]:
        click.echo(f"note: {note}", err=True)


# --- ingest / embed / sync / remove --------------------------------------------------------------

def ingest_result(r: Any) -> None:
    """One act of an ingest, as it ends."""
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


def ingest_warning(line: str) -> None:
    """What an ingest left undone without failing (an amending act the source lacks)."""
    click.echo(f"  warning: {line}", err=True)


def ingest_summary(report: Any, *, by_title: bool, embedded_now: bool, background: Any = None) -> None:
    amending = sum(bool(r.amending_of) for r in report.acts)
    waiting = ""
    if report.waiting and background is None:
        waiting = f"; {report.waiting} text(s){' of other acts' if embedded_now else ''} wait for `pipeline embed`"
    click.echo(f"{len(report.acts)} act(s)" + (f" ({amending} fetched as amending acts)" if amending else "")
               + f": {report.new} new version(s), {report.unchanged} unchanged, "
               f"{report.failed} failed" + (f", {report.skipped} skipped ({'stored or ' if by_title else ''}no text)"
                                         if report.skipped else "")
               + f"; {report.embedded} embedding(s) computed" + waiting,
               err=True)
    if background is not None:
        how = "a worker already running embeds them" if background.already_running else \
            f"a background worker (pid {background.pid}) embeds them"
        click.echo(f"searchable now; {background.queued} text(s) wait for their vectors: {how} "
                   f"(progress: pipeline status; log: {background.log}; --wait embeds before returning)", err=True)


def ingest_plan(picks: list[dict]) -> None:
    for p in picks:
        what = p["target"] if p["target"] == p["act"] else f"{p['target']} (newest consolidated text of {p['act']})"
        click.echo(f"skip  {p['skip']}" if p["skip"] else f"fetch {what}  {snippet(p['title'] or '', 70)}")
    fetched = sum(p["skip"] is None for p in picks)
    click.echo(f"{fetched} act(s) would be fetched, {len(picks) - fetched} skipped (dry run: nothing fetched)",
               err=True)


@contextlib.contextmanager
def progress_bar(total: int, model: str) -> Iterator[Callable[[int], None]]:
    """The embedding's progress: a bar on a terminal, lines in a log."""
    if not sys.stderr.isatty():  # a log (cron, CI): a bar draws nothing there until the end
        yield progress_lines(total, model)
        return
    with click.progressbar(length=total, label=f"embedding ({model})", file=sys.stderr,
                           show_pos=True, show_eta=True) as bar:
        yield bar.update


PROGRESS_LINE_SECONDS = 30.0


def progress_lines(total: int, model: str) -> Callable[[int], None]:
    """One line at the start, then one every PROGRESS_LINE_SECONDS and at the end: N/total, rate, ETA."""
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


def step(line: str) -> None:
    click.echo(f"  {line}", err=True)


def sync_summary(report: Any) -> None:
    counts = report.to_dict()["counts"]
    click.echo(f"sync {report.sync_id}: " + (", ".join(f"{n} {s}" for s, n in counts.items()) or "no acts stored")
               + (f" (resumed sync {report.resumed})" if report.resumed else ""), err=True)


# --- reading: show, diff, search, ask ---------------------------------------------------------------

def article(found: dict) -> None:
    head = (f"{found['act']} art. {printed(found['article'])} (version {found['version_no']}, "
            f"text as of {found['valid_from'] or 'an unknown date'})")
    if found["repealed"]:
        head += " [uchylony]"
    if not found["official"]:
        head += " [brzmienie odtworzone z późniejszych zmian, nie tekst urzędowy]"
    click.echo(head)
    if found["heading_path"]:
        click.echo(" / ".join(found["heading_path"]))
    click.echo()
    click.echo(printed(found["text"]))
    # After the text: the head, headings and text keep their lines for scripts.
    click.echo()
    click.echo(f"Cytowanie: {found['citation_pl']['long']}  (krótko: {found['citation_pl']['short']})")
    on = found["as_of"] or "dziś"
    click.echo(f"W mocy ({on}): {found['in_force_note']}")
    for u in found["units_not_in_force"]:
        click.echo(f"  {u['note']}")
    if len(found["wordings"]) > 1:
        click.echo("Brzmienia: " + "; ".join(f"{w['wording']}: {_span(w['in_force_from'], w['in_force_until'])}"
                                             for w in found["wordings"])
                   + f" (pokazane: {found['wording']})")
    if found["currency"]:
        click.echo(f"Aktualność: {found['currency']['note']}")
    changes(found["changes"])
    timeline(found["timeline"])
    legal_context(found)


def changes(found: list[dict]) -> None:
    """The stored changes after the text: each with its act, unit and date; the text above is the official one."""
    if not found:
        return
    rebuilt = any(c["applied"] for c in found)
    click.echo("Zmiany po tym tekście (" + ("brzmienie powyżej odtworzone z oznaczonych [✓]; tekst urzędowy: --official"
                                            if rebuilt else "tekst powyżej jest urzędowy, zmiany nie są w nim uwzględnione")
               + "):")
    for c in found:
        click.echo(f"  {'[✓] ' if c['applied'] else ''}{printed(c['note'])}")
        if c.get("why"):
            click.echo(f"    nie odtworzono: {c['why']}")
        if c["text"]:
            click.echo(f"    „{printed(' '.join(c['text'].split()))}”")
        elif c["old_words"]:
            click.echo(f"    „{c['old_words']}”" + (f" → „{c['new_words']}”" if c["new_words"] else ""))


def _span(start: object, end: object) -> str:
    """"2003-03-10 … 2024-11-09" for [start, end): the last day the end excludes is printed."""
    import datetime as dt

    last = end - dt.timedelta(days=1) if isinstance(end, dt.date) else None
    return f"{start or '?'} … {last or ''}".rstrip(" …") if last or start else "?"


def timeline(entries: list[dict]) -> None:
    """When the article and its units came into force, their wordings and repeals, and by what act."""
    if not entries:
        return
    click.echo()
    click.echo("Timeline:")
    several = len({e["wording"] for e in entries}) > 1
    for e in entries:
        when = _span(e["from"], e["until"]) if e["determined"] else "undetermined"
        source = " ".join(x for x in (e["source"]["act"], e["source"]["unit"]) if x)
        where = e["unit"] or "the article"
        wording = f"[brzmienie {e['wording']}] " if several and e["wording"] else ""
        click.echo(f"  {when:<25} {e['kind']:<12} {wording}{where}" + (f"  ← {source}" if source else "")
                   + f"   {snippet(e['text'], 80)}")


def legal_context(found: dict) -> None:
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
            click.echo(f"  {where}   ← {snippet(r['text'], 90)}")
    if cited := found["referenced_by"]:
        click.echo()
        click.echo("Referred to by:")
        click.echo("  " + ", ".join(f"art. {c['article']}" if c["act"] == own_act else f"{c['act']} art. {c['article']}"
                                    for c in cited))
    if delegated := found.get("delegations"):
        click.echo()
        click.echo("Delegates:")
        for d in delegated:
            may = "" if d["obligatory"] else " (may)"
            click.echo(f"  {d['unit'] or 'art. ' + found['article']}: {d['organ']}, {d['form']}{may}: "
                       f"{snippet(d['matter'], 110)}")
    if definitions := found["definitions"]:
        click.echo()
        click.echo("Definitions used:")
        for d in definitions:
            click.echo(f"  {d['term']} (art. {d['article']}{' ' + d['unit'] if d['unit'] else ''}): "
                       f"{snippet(d['text'], 140)}")


def verified(pairs: list[dict]) -> None:
    """A line a pair of texts (units and dates: equal / different / undetermined), then what is not equal."""
    if not pairs:
        click.echo("no act has two stored official texts: nothing to compare (ingest an older or newer text)")
        return
    click.echo(f"{'act':<14} {'earlier':<14} {'later':<14} {'units =/≠/?':>14} {'dates =/≠/?':>12}")
    for p in pairs:
        u, d = p["units"], p["dates"]
        click.echo(f"{p['act']:<14} {p['earlier']:<14} {p['later']:<14} "
                   f"{u['equal']:>5}/{u['different']}/{u['undetermined']:<4} {d['equal']:>5}/{d['different']}/{d['undetermined']}")
    for p in pairs:
        for f in p["findings"]:
            unit = f" {f['unit']}" if f["unit"] else ""
            click.echo(f"  {f['verdict'].upper() if f['verdict'] == 'different' else f['verdict']}: {p['later']} "
                       f"art. {f['article']}{unit} ({f['kind']}): {f['why']}")


def checked(result: Any) -> None:
    """One line a citation: its status, the words, what it was checked against and why."""
    if not result.citations:
        click.echo("no citations found: nothing was checked (a citation names an article and its act: "
                   "art. 154 § 1 k.p.)", err=True)
        return
    for c in result.citations:
        where = printed(f"art. {c['article']}" + (f" {c['unit']}" if c["unit"] else ""))
        version = f" v{c['version_no']}" if c["version_no"] else ""
        against = f"  [{c['text']}{version}, {c['checked_as_of']}]" if c["text"] else ""
        click.echo(f"{c['status']:<15} {c['quote']}  →  {c['act'] or '?'} {where}{against}")
        for line in (c["why"], c.get("note")):
            if line:
                click.echo(f"{'':<16}{printed(line)}")
        if c["candidates"]:
            click.echo(f"{'':<16}candidates: {', '.join(c['candidates'])}")
        if c["ingest"]:
            click.echo(f"{'':<16}to add it: {c['ingest']}")
    counts = ", ".join(f"{n} {status}" for status, n in result.counts().items())
    click.echo(f"{len(result.citations)} citation(s): {counts}", err=True)
    for warning in result.warnings:  # citations past the cap: counted, never dropped unsaid
        warn(warning)


def diff(result: dict) -> None:
    def side(s: dict) -> str:
        text = f"{s['act']} version {s['version_no']}, text as of {s['valid_from'] or 'an unknown date'}"
        if s.get("wording"):  # one of two wordings the text prints, each with its dates
            text += f", wording {s['wording']} ({_span(s['in_force_from'], s['in_force_until'])})"
        if s.get("official") is False:  # rebuilt from later changes: never shown as the official text
            text += " [brzmienie odtworzone, nie tekst urzędowy]"
        return text

    click.echo(f"art. {result['article']} of {result['act']}: {side(result['from'])} -> {side(result['to'])}")
    for name in ("from", "to"):
        if applied := result[name].get("changes"):
            acts = dict.fromkeys(f"{c['act']} {c['unit']}" for c in applied)
            since = ", ".join(sorted({str(c["in_force_from"]) for c in applied}))
            click.echo(f"  {name}: rebuilt by {', '.join(acts)} (in force from {since})")
    if result["note"]:
        click.echo(result["note"])
    if result["unchanged"]:
        click.echo("unchanged")
        return
    click.echo()
    click.echo("".join(op["text"] if op["op"] == "equal" else f"[-{op['text']}-]" if op["op"] == "delete"
                       else f"{{+{op['text']}+}}" for op in result["ops"]))


def hits(found: Any) -> None:
    if not found.hits:
        click.echo("No matching articles.", err=True)
        return
    sparse_arm = any(h.sparse_rank for h in found.hits)  # the local model's sparse head took part
    for i, h in enumerate(found.hits, start=1):
        sim = f"{h.similarity:.3f}" if h.similarity is not None else "-"
        bm25 = f"{h.text_score:.2f}" if h.text_score is not None else "-"
        part = f" (part {h.part})" if h.part > 1 else ""
        vector = f"vector {sim} (#{h.vector_rank})" if h.vector_rank else "vector -"
        text = f"text {bm25} (#{h.text_rank})" if h.text_rank else "text -"
        sparse = "" if not sparse_arm else f"  sparse {h.sparse_score:.2f} (#{h.sparse_rank})" if h.sparse_rank \
            else "  sparse -"
        click.echo(f"{i:>2}. {h.act} art. {printed(h.article)}{part}  score {h.score:.4f}  {vector}  {text}{sparse}")
        click.echo(f"    {snippet(printed(h.text))}")
        if h.in_force is not True:  # undetermined (or, with --include-repealed, not in force) on the day
            click.echo(f"    [{'nie obowiązuje' if h.in_force is False else 'data wejścia w życie nieokreślona'}]")
        for u in h.units_not_in_force or []:
            click.echo(f"    [{u['note']}]")
    for note in dict.fromkeys(h.currency["note"] for h in found.hits if h.currency):
        click.echo(f"Aktualność: {note}")


def fragments(found: list) -> None:
    """What an answer reads: the hits, and the definitions and cited provisions read beside them."""
    click.echo("Fragmenty:", err=True)
    for i, f in enumerate(found, start=1):
        if f.role == "definition":  # read beside the hits (docs/legal-context.md), not ranked
            why = f"definition of „{f.term}” ({f.unit or 'the article'}), used by art. {f.used_by}"
        elif f.role == "reference":
            why = f"cited by art. {f.used_by}"
        else:
            sim = f"{f.similarity:.3f}" if f.similarity is not None else "-"
            why = f"score {f.score:.4f}, similarity {sim}"
        click.echo(f"  {i}. [{f.act}, art. {f.article}] {why}", err=True)
    click.echo(err=True)


def answer(asked: Any) -> None:
    """The answer after it was asked (streamed already, or whole now), then what the reader must know."""
    result = asked.answer
    if result.model is None and not result.refused:
        fragments(result.fragments)
    if asked.streamed:
        click.echo()
    else:
        click.echo(printed(result.text))
    if asked.currency_warning:
        click.echo(asked.currency_warning, err=True)
    for warning in asked.warnings:
        warn(warning)
    for warning in asked.answer_warnings:
        click.echo(warning, err=True)
    tokens = ""
    if result.prompt_tokens is not None:
        tokens = f"; tokens {result.prompt_tokens} in / {result.completion_tokens} out"
        tokens += f", cost ${result.cost_usd:.6f}" if result.cost_usd is not None else ", cost unknown (set ANSWER_PRICE_IN/OUT)"
    click.echo(f"({asked.note}{tokens})", err=True)


# --- eval / find / acts -------------------------------------------------------------------------------

def evaluation(report: dict, k: int, ids: str) -> None:
    for warning in report["warnings"]:
        warn(warning)
    m = report["metrics"]
    n = len(report["questions"])
    if report["settings"]:
        click.echo("overrides: " + ", ".join(f"{name} {value}" for name, value in report["settings"].items()))
    click.echo(f"{n} question{'' if n == 1 else 's'} ({ids} ids); {m['answerable_scored']} answerable with their act in the "
               f"database, {m['answerable_not_in_corpus']} whose act is not ingested (not scored), "
               f"{m['unanswerable']} unanswerable")
    cuts = report["recall_ks"]
    modes = tuple(report["modes"])
    click.echo(f"{'mode':<8} " + " ".join(f"{'R@' + str(c):>6}" for c in cuts) + f" {'MRR':>6}")

    def figure(x: float | None, spec: str) -> str:
        return f"{'-':>6}" if x is None else format(x, spec)  # None: none scored

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
        click.echo(f"{q['id']:<10} {ranks} {sim:>6} {refused:>7}  {snippet(q['question'], 60)}")


def _rank_cell(q: dict, mode: str, k: int) -> str:
    if not q["answerable"]:
        return "n/a"
    if not q["in_corpus"]:
        return "no act"
    rank = q["ranks"].get(mode)
    return str(rank) if rank else f">{k}"


def found_acts(found: Any, *, offline: bool) -> None:
    for w in found.warnings:
        warn(w)
    if not found.acts:
        raise click.ClickException(f"no act {'stored' if offline else 'in the ELI API'} has "
                                   f"{found.query.describe()}")
    click.echo(f"{'':1} {'act':<13} {'type':<14} {'date':<10} {'in force':<12} {'newest text':<13}  title")
    for a in found.acts:
        newest = a["newest"] or ("-" if a["has_text"] is not False else "(no text)")
        click.echo(f"{'*' if a['stored'] else ' ':1} {a['act']:<13} {snippet(a['act_type'] or '-', 14):<14} "
                   f"{a['announcement_date'] or '-':<10} {a['in_force'] or '-':<12} {newest:<13}  "
                   f"{snippet(a['title'] or '-', 80)}")
    shown = f"{len(found.acts)} act(s)" + (f" of {found.total} matching record(s)" if found.source == "api" else "")
    click.echo(f"{shown}; * stored" + ("" if offline else "; pipeline ingest --title TITLE ingests the newest text"),
               err=True)


def stored_acts(found: list[dict]) -> None:
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
        title = snippet(a["display_title"], 70) if a["display_title"] else "-"  # which act is which, at a glance
        click.echo(f"{a['act']:<14} {a['base_act']:<14} {a['version_no'] or '-':>3} {str(c['text_as_of'] or '-'):<10} "
                   f"{a['in_force'] or '-':<12} {later:>5} {checked:<16}  {latest:<26}  {title}")
