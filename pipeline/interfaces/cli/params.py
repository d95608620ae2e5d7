"""What the command line reads and how it fails: the parameter types (a date, an act id, an article
number, a question, each "-" read from standard input), the one-line error wrapper, and the service a
command runs on."""
from __future__ import annotations

import datetime as dt
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import click

from pipeline.core import json_default
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import InvalidActId, UsageError, is_for_the_user, one_line

STDIN = "-"  # an argument given as "-" is read from standard input


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


# --- parameter types ------------------------------------------------------------------------------

def from_stdin(param: Any, ctx: Any, *, whole: bool) -> str:
    """The value of an argument given as "-": the whole of standard input (a question), or its first
    line that is not blank (an id, a number). Standard input gives one argument of a command."""
    ctx = ctx or click.get_current_context()
    name = getattr(param, "human_readable_name", None) or "argument"
    taken = ctx.meta.get("pipeline.stdin")
    if taken is not None:
        raise click.BadParameter(f"standard input already gave {taken}; give this one on the command line",
                                 ctx=ctx, param=param)
    ctx.meta["pipeline.stdin"] = name
    text = sys.stdin.read()
    value = text.strip() if whole else next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not value:
        raise click.BadParameter("standard input is empty", ctx=ctx, param=param)
    return value


class Question(click.ParamType):
    """A question or query; "-" reads it, whole, from standard input."""

    name = "text"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return from_stdin(param, ctx, whole=True) if value == STDIN else value


class Token(click.ParamType):
    """A single word such as an article number; "-" reads it from standard input's first line."""

    name = "text"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return from_stdin(param, ctx, whole=False) if value == STDIN else value


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
    """An act id (DU/2025/277, "Dz.U. 2025 poz. 277"; "-": standard input's first line): a malformed one
    is a usage error (exit 2) before anything runs, as every bad argument is. The value is passed on as
    given."""

    name = "act id"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == STDIN:
            value = from_stdin(param, ctx, whole=False)
        try:
            parse_act_id(str(value))
        except InvalidActId as exc:
            self.fail(str(exc), param, ctx)
        return value


ACT_ID = ActIdType()
QUESTION = Question()
TOKEN = Token()


def day(value: dt.datetime | None) -> dt.date | None:
    """An IsoDate option's value as the date the service takes."""
    return value.date() if value else None


# --- the service and the output -------------------------------------------------------------------

def service() -> Any:
    """The service a command runs on: one connection (a command does one thing at a time), the
    dictionary loaded when a query first needs it, not up front. Closed when the command ends, so the
    server sees the session end cleanly rather than the socket drop with the process (and a caller
    that runs commands in its own process, such as the tests through click's runner, leaks nothing)."""
    from pipeline.service import Service

    running = Service(pool_size=1, warm=False)
    click.get_current_context().call_on_close(running.close)
    return running


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=json_default))


def warn(message: str) -> None:
    click.echo(f"Warning: {message}", err=True)


def snippet(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
