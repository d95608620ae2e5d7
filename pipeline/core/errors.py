"""Every error the user may see, under one base: the CLI prints a PipelineError as one line.

Each stage's module re-exports its own error (``pipeline.sources.fetch.FetchError`` …), so callers import
it from where they always did. The extra bases (ValueError, LookupError, RuntimeError) are kept
because callers catch those.
"""
from __future__ import annotations


class PipelineError(Exception):
    """A failure the user can act on; its message is one line that says the fix, cut at MAX_ERROR_CHARS
    (a message quoting a caller's 100 000-character input must not reflect it whole to a service's
    client)."""

    def __str__(self) -> str:
        text = super().__str__()
        return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


class DatabaseError(PipelineError, RuntimeError):
    """The database cannot be reached or is not in a usable state (message says the fix)."""


class NoVectors(DatabaseError):
    """Texts are stored but none has a vector of the searching model yet (run `pipeline embed`): a search
    that needs them cannot rank; text search still can."""


class ConnectionLost(DatabaseError):
    """The connection broke during a library call (closed, ended by the server, a statement cancelled):
    a pool should drop it and take another."""


class FetchError(PipelineError):
    """An act cannot be fetched or read back; the message is one line meant for the user."""


class InvalidActId(FetchError, ValueError):
    """The text is not an act id such as DU/2025/277 or "Dz.U. 2025 poz. 277"."""


class ActNotInApi(FetchError):
    """The ELI API answers 404 for the act's record: no such act is published there."""


class NoActFound(PipelineError, LookupError):
    """No act's title matches what was searched for (pipeline find, ingest --title)."""


class AmbiguousTitle(PipelineError, LookupError):
    """A title matches more than one act; the message names them (ingest --title)."""


class ParseError(PipelineError, ValueError):
    """The document cannot be turned into articles (corrupt, encrypted, no articles)."""


class IngestError(PipelineError, RuntimeError):
    """An act could not be ingested; nothing of it was written."""


class SyncBusy(IngestError):
    """Another `pipeline sync` holds the lock: try again later (the CLI exits 75, EX_TEMPFAIL)."""


class Busy(PipelineError, RuntimeError):
    """As many searches (or answers) run now as the service allows: try again in ``retry_after`` seconds.
    Refused at once rather than queued, so a crowd cannot make every visitor wait (the page: 503 with
    Retry-After; the CLI exits 75, EX_TEMPFAIL)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Cancelled(PipelineError, RuntimeError):
    """The caller left (a page's visitor, an MCP client's cancelled request): the work stopped, nobody reads it."""


class EmbedderError(PipelineError, RuntimeError):
    """A one-line, user-facing embedding failure (bad config, server down, missing model)."""


class AnswerError(PipelineError, RuntimeError):
    """The answer could not be produced; the message is one line and says the fix."""


class ArticleNotFound(PipelineError, LookupError):
    """No such article (or act, or version) is stored (a malformed article number is a UsageError)."""


class EvalError(PipelineError, ValueError):
    """The question file is malformed (the message names the line)."""


class ConfigError(PipelineError, ValueError):
    """A setting read from the environment has a value that cannot be used."""


class UsageError(PipelineError, ValueError):
    """The call itself is wrong (options, paths); the CLI reports it as a usage error (exit 2).

    ``param`` names the option or argument at fault, when one is.
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


MAX_ERROR_CHARS = 500  # a message quoting the caller's input (a 10 000-character article number) stays readable


def is_for_the_user(exc: BaseException) -> bool:
    """Whether a face shows ``exc`` as it is, in one line (else it is a fault: "unexpected …" and a log
    line): the library's PipelineError, and the database driver's errors, whose messages say what the
    server refused. One rule for the CLI, the MCP server and the web page."""
    return isinstance(exc, PipelineError) or type(exc).__module__.split(".")[0] == "psycopg"


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (cut at MAX_ERROR_CHARS), or its type's name when it has none."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= MAX_ERROR_CHARS else line[:MAX_ERROR_CHARS - 1] + "…"
