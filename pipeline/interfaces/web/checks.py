"""What the page reads from a request: each parameter checked here, with a Polish message, before the
service sees it; and :class:`PageError`, what a visitor is told when something fails."""
from __future__ import annotations

import datetime as dt
import re

from starlette.requests import Request

from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import InvalidActId, UsageError
from pipeline.core.limits import MAX_CHECK_CHARS, MAX_QUESTION_CHARS, check_question, check_text
from pipeline.interfaces.listening import shown


MAX_SHOWN = 1000  # characters of a message or detail the page shows


class PageError(Exception):
    """What a visitor is told (Polish), with the HTTP status; ``detail`` is the library's own line. Both may
    quote what the visitor sent: their control characters are shown escaped. ``error_id``: the id of the
    server log's line that holds what the page does not show (a server's failure); ``link``: a page that
    still serves the visitor."""

    def __init__(self, status: int, message: str, detail: str | None = None, retry_after: int | None = None,
                 error_id: str | None = None) -> None:
        # What quotes the visitor is cut too (a 1 MB date in the check form came back whole).
        message, detail = shown(message, MAX_SHOWN), shown(detail, MAX_SHOWN) if detail is not None else None
        super().__init__(message)
        self.status, self.message, self.detail = status, message, detail
        self.retry_after, self.error_id = retry_after, error_id
        self.link: str | None = None

    @property
    def line(self) -> str:
        """The message with the error's id, as one line (the streamed answer's failure)."""
        return f"{self.message} (numer błędu: {self.error_id})" if self.error_id else self.message

    @property
    def headers(self) -> dict[str, str]:
        """Retry-After on a refusal to come back later (RFC 9110 § 10.2.3)."""
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}


def question(request: Request, required: bool = True) -> str:
    q = request.query_params.get("q", "")
    if not q.strip():
        if required:
            raise PageError(400, "Wpisz pytanie.")
        return ""
    try:
        check_question(q)  # the library's rule; the page words its refusal in Polish
    except UsageError as exc:
        if len(q) > MAX_QUESTION_CHARS:
            raise PageError(400, f"Pytanie jest za długie: {len(q)} znaków (najwyżej {MAX_QUESTION_CHARS}). "
                                 "Zapytaj o jedną rzecz, w kilku zdaniach.") from None
        raise PageError(400, "Tego pytania nie da się wyszukać.", str(exc)) from None
    return q


def date(request: Request, name: str) -> dt.date | None:
    return date_value(request.query_params.get(name, ""))


def date_value(value: str) -> dt.date | None:
    """A date the visitor gave as RRRR-MM-DD (blank: none), else a 400."""
    value = value.strip()
    if not value:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(value)
        return dt.date.fromisoformat(value)
    except ValueError:
        raise PageError(400, f"Niepoprawna data: „{shown(value)}”. Podaj ją jako RRRR-MM-DD, np. 2025-01-01.") from None


def acts_filter(request: Request) -> list[str]:
    acts = []
    for value in request.query_params.getlist("act"):
        if value.strip():
            try:
                acts.append(str(parse_act_id(value.strip())))
            except InvalidActId:
                raise PageError(400, f"Niepoprawny identyfikator aktu: „{shown(value)}” (np. DU/2025/277).") from None
    return acts


def act_from_path(request: Request) -> str:
    p = request.path_params
    try:
        return str(parse_act_id(f"{p['publisher']}/{p['year']}/{p['position']}"))
    except InvalidActId:
        raise PageError(404, "Nie ma takiego aktu: identyfikator ma postać DU/2025/277.") from None


def version(request: Request) -> int | None:
    value = request.query_params.get("version", "").strip()
    if not value:
        return None
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses (a 500, not a 400).
    if not re.fullmatch(r"[0-9]{1,7}", value) or not 1 <= int(value) <= 1_000_000:
        raise PageError(400, f"Niepoprawny numer wersji: „{shown(value)}”.")
    return int(value)


async def check_form(request: Request) -> tuple[str, dt.date | None]:
    """The text and date of the citation-check form (an urlencoded POST body, read here: at most what
    a check reads, so that no visitor makes the page hold megabytes)."""
    from urllib.parse import parse_qs

    # UTF-8 and percent-encoding make a character up to 12 bytes ("„" 9, "§" 6): a text the form's
    # maxlength accepts is never refused here, and no body much larger is read.
    limit = 12 * MAX_CHECK_CHARS + 1000
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise PageError(413, f"Tekst jest za długi (najwyżej {MAX_CHECK_CHARS} znaków naraz).")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        raise PageError(400, "Tego tekstu nie da się odczytać (oczekiwano UTF-8).") from None
    # A browser sends each line break as CRLF; the form's maxlength counted it as one character.
    text = (fields.get("text") or [""])[0].replace("\r\n", "\n")
    if text.strip():  # a blank form is the empty page, not an error
        try:
            check_text(text)  # the library's rule (every face's); the page words its refusal in Polish
        except UsageError as exc:
            if len(text) > MAX_CHECK_CHARS:
                raise PageError(400, f"Tekst ma {len(text)} znaków (najwyżej {MAX_CHECK_CHARS} naraz).") from None
            raise PageError(400, "Tekst zawiera niedozwolony znak.", str(exc)) from None
    return text, date_value((fields.get("as_of") or [""])[0])

