"""The limits and choices a caller meets on every face (CLI, MCP, web, Python API), in one place.

The faces check their input against these before calling the service (a click range, a JSON schema
bound, a form's maxlength), and the library checks them again, so a limit is the same wherever it
is met. The SQL interface keeps bounds of its own (search_chunks: k up to 1000), for SQL callers.
"""
from __future__ import annotations

import re
import unicodedata

from pipeline.core.errors import UsageError

# The most articles a search returns and the most fragments an answer sends its model: a reader,
# an agent's context and a model's prompt are the limits, not the database (each fragment costs tokens).
MAX_K = 100
DEFAULT_K = 5

# What an answer reads beside the retrieved articles (pipeline.retrieval.context): the definitions they
# use and the provisions they cite, at most this many characters in all, each cut to CONTEXT_ITEM_CHARS.
# About one fragment's worth (a chunk is at most 1 200 characters): measured in docs/legal-context.md.
CONTEXT_CHARS = 1200
CONTEXT_ITEM_CHARS = 800

# A question, not a document: the embedding models read their first 512 tokens (~2 000 characters of
# Polish), and tokenising 100k characters took the local model ~30 s before it cut them.
MAX_QUESTION_CHARS = 5000

# Admission by cost (issue 49): a search is weighed in characters of its question that the embedding model reads,
# at most SEARCH_EMBEDDED_CHARS (~512 tokens of Polish: where the models stop reading, and a longer question is cut
# before it is embedded), plus SEARCH_BASE_COST for the rest (the SQL, the model call's fixed part); a question
# not embedded (no vectors stored, mode text) weighs SEARCH_BASE_COST alone. Characters, not tokens: known before
# any work (counting tokens is the tokeniser's work, and an HTTP model cannot count them here), and the embedding's
# CPU grows with them (the local model, 2 cores: ~2.3 s of CPU for 250 characters, ~5.3 s for 2 000, the same for
# 5 000 cut to 2 000). The searches running at once in one process weigh at most SEARCH_BUDGET
# (PIPELINE_SEARCH_BUDGET): one long question beside several short ones, not two long. Per process, not per core:
# the local engine embeds one question at a time over every core (OpenMP), so a short question waits behind every
# long one admitted (bench/load.py, 8 visitors + 8 sending long questions: short searches' p50 5.8 s with one long
# admitted at a time, 14.0 s with two, 17.3 s counting requests; docs/benchmarks.md).
SEARCH_BASE_COST = 250
SEARCH_EMBEDDED_CHARS = 2000
SEARCH_BUDGET = 4000

# Chunks: the size of an article's parts (CHUNK_CHARS), the overlap between them (CHUNK_OVERLAP).
DEFAULT_MAX_CHARS = 1200
DEFAULT_OVERLAP = 200
MIN_CHARS = 200  # smaller parts would be mostly context header and overlap
MAX_CHARS = 20000  # larger parts are more than an embedding model reads
MAX_JOBS = 64  # processes parsing ahead in a bulk ingest

# pipeline find / ingest --title: acts listed by default and at most; records asked of /acts/search per
# request (the API's own default page) and at most for one bulk ingest (a year of Dz.U. is ~2 000).
FIND_LIMIT = 20
MAX_FIND_LIMIT = 500
MAX_CHECK_CHARS = 100_000  # a text whose citations `check` reads at once (a long brief; each citation is a few queries)
# The most citations one `check` checks (each is a few queries, ~2 ms): a long brief cites a few hundred; past it
# the rest are counted as not checked, never dropped unsaid.
MAX_CHECK_CITATIONS = 1000
# The most numbers a range expands to where the act's own numbers are not known ("art. 1–20000" of an act
# not stored): more articles than any act has (the Civil Code ends at art. 1088). Checked before expanding.
MAX_RANGE = 2000
# The most units a unit range expands to ("pkt 1–12"; "pkt 1–100000" is its last unit alone).
MAX_UNIT_RANGE = 50
# A citation's words in a check's record (``quote``): a list of thousands of numbers is cut in the middle, so
# that its words are not repeated in each of its records (``start`` and ``end`` still span them all).
MAX_QUOTE_CHARS = 300
SEARCH_PAGE = 500
MAX_BULK_RECORDS = 5000
FIND_PUBLISHERS = ("DU", "MP")

# A read-only SQL role (pipeline db grant-reader): each statement at most this long, this many connections at
# once. Far above a search (tens of milliseconds); a bound on what a reader's SQL can take from the server.
READER_STATEMENT_TIMEOUT = "10s"
READER_CONNECTION_LIMIT = 20
MAX_READER_CONNECTIONS = 10000
# And a transaction left open at most this long (it holds locks a migration waits for, and old rows VACUUM
# must keep), and at most this much in temporary files a session (a sort or hash spilled to disk: a
# superuser's setting, which the role cannot lift, as it can the timeouts).
READER_IDLE_IN_TRANSACTION = "1min"
READER_TEMP_FILE_LIMIT = "1GB"

MODES = ("hybrid", "vector", "text", "sparse")  # the arms a search ranks with (sql/search.sql)
FUSIONS = ("rrf", "convex")  # how hybrid search mixes the arms' scores (sql/search.sql)


def check_k(k: object, what: str = "k") -> int:
    """``k`` as a whole number from 1 to MAX_K, else a UsageError (True is no number of articles)."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise UsageError(f"{what} must be a whole number from 1 to {MAX_K}")
    return k


def check_question(query: object) -> None:
    """A UsageError unless ``query`` is a question to search: a string with something to read (not only
    spaces or invisible characters such as a zero-width space), no NUL, at most MAX_QUESTION_CHARS."""
    if not isinstance(query, str):
        raise UsageError(f"the question must be a string, not {type(query).__name__}")
    if not "".join(ch for ch in query if unicodedata.category(ch) != "Cf").strip():
        raise UsageError("the question is empty")
    if "\x00" in query:
        raise UsageError("the question contains a NUL character")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, e.g. from JSON's "\udc80": PostgreSQL cannot take it
        raise UsageError("the question is not valid Unicode text (it holds a lone surrogate)") from None
    if len(query) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is too long: {len(query)} characters (at most {MAX_QUESTION_CHARS}); "
                         "ask about one thing, in a few sentences")


# The control characters (Unicode Cc) but those a pasted text holds: a line break, a tab, a PDF's page break.
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def check_text(text: object) -> None:
    """A UsageError unless ``text`` is a text whose citations to check: a string with something in it, no
    control character but a line break, a tab or a page break (no NUL), valid Unicode, at most MAX_CHECK_CHARS."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("give a text to check (the citations in it are checked)")
    if len(text) > MAX_CHECK_CHARS:
        raise UsageError(f"the text is {len(text)} characters; at most {MAX_CHECK_CHARS} are checked at once")
    if bad := _CONTROL.search(text):
        name = "a NUL character" if bad[0] == "\x00" else f"a control character (U+{ord(bad[0]):04X})"
        raise UsageError(f"the text contains {name}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the text is not valid Unicode text (it holds a lone surrogate)") from None
