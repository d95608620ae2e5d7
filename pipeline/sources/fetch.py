"""Fetch acts from the Sejm ELI API and archive the raw responses.

Archive layout (the same as the shared mirror, so either can be read back)::

    {root}/acts/{publisher}/{year}/{pos}/meta.json   raw body of GET /acts/{pub}/{year}/{pos}
    {root}/acts/{publisher}/{year}/{pos}/text.pdf    or text.html: the text that was used
    {root}/acts/{publisher}/{year}/{pos}/SHA256SUMS  ``sha256sum`` format: "<hex>  <file name>"

``SHA256SUMS`` is written last, so an act directory without it is incomplete; check it by hand
with ``cd acts/DU/2025/277 && sha256sum -c SHA256SUMS``.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal


from pipeline.core import __version__
# The act id has its own module; these names stay importable from here.
from pipeline.core.act_id import PUBLISHERS, ActId, act_dir, parse_act_id  # noqa: F401
from pipeline.core.act_id import as_act_id as _as_act_id
from pipeline.core import retry
from pipeline.core.lazy import lazy_module
from pipeline.core.errors import ActNotInApi, FetchError, InvalidActId  # noqa: F401
from pipeline.core.files import write_atomic
from pipeline.sources.parse.model import looks_like_pdf
from pipeline.sources.record import EliRecord

if TYPE_CHECKING:  # the module itself, for its types
    import httpx
else:
    httpx = lazy_module("httpx")

DEFAULT_API_URL = "https://api.sejm.gov.pl/eli"
# No project address in it: the one that stood here was a placeholder that led nowhere.
USER_AGENT = f"pipeline/{__version__} (Polish law search)"
SUMS_FILE = "SHA256SUMS"
TEXT_FILES = {"html": "text.html", "pdf": "text.pdf"}


class EliClient:
    """A polite, retrying, synchronous client for the few ELI endpoints ingest needs."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        min_interval: float = 0.2,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_delay: float = 60.0,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = (base_url or os.environ.get("ELI_API_URL") or DEFAULT_API_URL).rstrip("/")
        self.min_interval = min_interval
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_delay = max_delay
        self._last_request = float("-inf")
        self._failed_in_a_row = 0  # requests that used up their retries, since the last answer
        self._last_problem = ""
        self._http = httpx.Client(
            headers={"User-Agent": USER_AGENT},
            timeout=httpx.Timeout(timeout),
            follow_redirects=True,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EliClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- endpoints -------------------------------------------------------------------------

    def meta_bytes(self, act_id: ActId | str) -> bytes:
        """The raw metadata response (validated as a JSON object), for byte-exact archiving."""
        aid = _as_act_id(act_id)
        resp = self._get(f"/acts/{aid.path}")
        if resp is None:
            raise ActNotInApi(f"act {aid} not found in the ELI API")
        _decode_meta(resp.content, f"{self.base_url}/acts/{aid.path}", aid)
        return resp.content

    def record(self, act_id: ActId | str) -> EliRecord:
        """The act's record, read (:class:`pipeline.sources.record.EliRecord`)."""
        aid = _as_act_id(act_id)
        return EliRecord.read(_decode_meta(self.meta_bytes(aid), f"{self.base_url}/acts/{aid.path}", aid), aid)

    def search(self, **params: str | int) -> dict[str, Any]:
        """GET /acts/search (e.g. title=..., type="Obwieszczenie"): ``{count, totalCount, items: [record]}``."""
        query = str(httpx.QueryParams(params))
        resp = self._get(f"/acts/search?{query}")
        where = f"{self.base_url}/acts/search?{query}"
        if resp is None:  # the query (a whole title) stays out of the message: it is one line to read
            raise FetchError(f"{self.base_url}/acts/search answered 404 (not found)")
        try:
            found = json.loads(resp.content)
        except ValueError:
            raise FetchError(f"{where}: the answer is not valid JSON") from None
        if not isinstance(found, dict) or not isinstance(found.get("items"), list):
            raise FetchError(f"{where}: the answer has no list of items")
        return found

    def text_html(self, act_id: ActId | str) -> bytes | None:
        """The act's HTML, or None when there is none (the API answers 200 with 0 bytes, or 404)."""
        resp = self._get(f"/acts/{_as_act_id(act_id).path}/text.html")
        return resp.content if resp is not None and resp.content.strip() else None

    def text_pdf(self, act_id: ActId | str) -> bytes | None:
        """The act's PDF, or None on 404."""
        aid = _as_act_id(act_id)
        resp = self._get(f"/acts/{aid.path}/text.pdf")
        if resp is None:
            return None
        if not looks_like_pdf(resp.content):
            # An HTML error page with status 200 must not be archived as the act's text.
            raise FetchError(f"{self.base_url}/acts/{aid.path}/text.pdf did not return a PDF")
        return resp.content

    # -- transport -------------------------------------------------------------------------

    # After this many requests in a row used up their retries, the API is taken to be down for the rest
    # of this client's run: each further request fails at once instead of retrying for ~12 s (29 acts
    # of a sync took 6 minutes against a dead API, holding the sync lock). The next run tries again.
    GIVE_UP_AFTER = 2

    def _get(self, path: str) -> httpx.Response | None:
        """GET with rate limiting and retries; None on 404, FetchError on anything else bad."""
        url = f"{self.base_url}{path}"
        if self._failed_in_a_row >= self.GIVE_UP_AFTER:
            raise FetchError(f"GET {url} not tried: the ELI API failed the {self._failed_in_a_row} requests before "
                             f"it ({self._last_problem}); try again later")
        problem = ""
        wait_asked: float | None = None  # the server's Retry-After
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(retry.delay(attempt, self.backoff, retry_after=wait_asked, max_delay=self.max_delay))
            wait_asked = None
            wait = self._last_request + self.min_interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_request = time.monotonic()
            try:
                resp = self._http.get(url)
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:
                raise FetchError(f"bad ELI API URL {url}: {e}") from None
            except httpx.TimeoutException:
                problem = "timed out"
                continue
            except httpx.TransportError as e:
                problem = f"{type(e).__name__}: {e}".splitlines()[0]
                continue
            status = resp.status_code
            if status == 404:
                self._failed_in_a_row = 0
                return None
            if retry.is_transient(status):
                problem = f"HTTP {status}"
                wait_asked = retry.retry_after(resp.headers.get("Retry-After"))
                continue
            if status >= 400:
                self._failed_in_a_row = 0  # an answer, if not the one wanted: the API is up
                raise FetchError(f"GET {url} failed: HTTP {status}")
            declared = resp.headers.get("Content-Length")
            if (
                declared is not None
                and "Content-Encoding" not in resp.headers
                and declared.isdigit()
                and int(declared) != len(resp.content)
            ):
                problem = f"truncated body ({len(resp.content)} of {declared} bytes)"
                continue
            self._failed_in_a_row = 0
            return resp
        self._failed_in_a_row += 1
        self._last_problem = problem
        raise FetchError(f"GET {url} failed after {self.max_retries + 1} attempts: {problem}")


def _decode_meta(body: bytes, where: str, aid: ActId) -> dict[str, Any]:
    try:
        meta = json.loads(body)
    except ValueError:
        raise FetchError(f"{where}: metadata of {aid} is not valid JSON") from None
    if not isinstance(meta, dict):
        raise FetchError(f"{where}: metadata of {aid} is not a JSON object")
    eli = meta.get("ELI")
    if eli is not None and str(eli).upper() != str(aid):
        raise FetchError(f"{where}: asked for {aid} but the metadata is for {eli}")
    return meta


# -- fetch + archive ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchedAct:
    act_id: ActId
    record: EliRecord
    text: bytes
    format: Literal["html", "pdf"]
    archived_paths: tuple[Path, ...]  # where the raw files now lie (meta.json, text, sums)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text).hexdigest()


def fetch_act(
    act_id: ActId | str,
    *,
    client: EliClient | None = None,
    archive_dir: Path | None = None,
    offline: bool = False,
    source_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    raw_meta: bytes | None = None,
) -> FetchedAct:
    """Get an act's metadata and text, preferring HTML, and archive the raw responses.

    ``source_dir`` reads an archive in the mirror layout directly (no HTTP, nothing copied);
    ``offline`` reads only what an earlier fetch left in ``archive_dir``; ``raw_meta``: the metadata
    response already downloaded (sync), so it is not asked for twice.
    """
    aid = _as_act_id(act_id)
    say = progress or (lambda _msg: None)
    if source_dir is not None:
        return read_archive(Path(source_dir), aid)
    if archive_dir is None:
        raise FetchError("fetch_act needs archive_dir (or source_dir)")
    archive_dir = Path(archive_dir)
    if offline:
        if not (act_dir(archive_dir, aid) / SUMS_FILE).is_file():
            raise FetchError(
                f"{aid} is not in the archive {archive_dir}; run without --offline to download it"
            )
        return read_archive(archive_dir, aid, require_sums=True)

    own_client = client is None
    cl = client or EliClient()
    try:
        if raw_meta is None:
            say(f"{aid}: metadata")
            raw_meta = cl.meta_bytes(aid)
        record = EliRecord.read(json.loads(raw_meta), aid)
        text: bytes | None = None
        fmt: Literal["html", "pdf"] = "html"
        if record.has_html:
            say(f"{aid}: text.html")
            text = cl.text_html(aid)
        if text is None and record.has_pdf:
            say(f"{aid}: text.pdf")
            text, fmt = cl.text_pdf(aid), "pdf"
        if text is None:
            # A record that promises a text the API then lacks (404, or 0 bytes) is worth saying.
            promised = " and ".join(f for f, has in (("text.html", record.has_html), ("text.pdf", record.has_pdf))
                                    if has)
            broken = f" (its record lists {promised}, which the API did not return)" if promised else ""
            raise FetchError(f"{aid} has no text in the ELI API (metadata only){broken}")
    finally:
        if own_client:
            cl.close()
    # Everything is in memory before the first write: a failed download leaves the archive as it was.
    paths = _write_archive(act_dir(archive_dir, aid), {"meta.json": raw_meta, TEXT_FILES[fmt]: text})
    say(f"{aid}: archived {fmt}, {len(text)} bytes")
    return FetchedAct(aid, record, text, fmt, paths)


def read_archive(root: Path, act_id: ActId | str, *, require_sums: bool = False) -> FetchedAct:
    """Read an act from an archive in the mirror layout, checking SHA256SUMS where present."""
    aid = _as_act_id(act_id)
    d = act_dir(root, aid)
    meta_path = d / "meta.json"
    if not meta_path.is_file():
        raise FetchError(f"{aid} is not in {root} (no {meta_path})")
    sums = _read_sums(d)
    if require_sums and sums is None:
        raise FetchError(f"archive of {aid} in {d} is incomplete; fetch it again without --offline")
    record = EliRecord.read(_decode_meta(_read_checked(meta_path, sums), str(meta_path), aid), aid)
    for fmt in ("html", "pdf"):
        path = d / TEXT_FILES[fmt]
        if _nonempty(path):
            text = _read_checked(path, sums)
            paths = [meta_path, path] + ([d / SUMS_FILE] if sums is not None else [])
            return FetchedAct(aid, record, text, fmt, tuple(paths))
    raise FetchError(f"{aid} has no text in {root} (metadata only)")


def has_text(root: Path, aid: ActId) -> bool:
    """Whether an archive in the mirror layout holds a text of the act (some acts are metadata only)."""
    return any(_nonempty(act_dir(root, aid) / name) for name in TEXT_FILES.values())


def _nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def _read_sums(d: Path) -> dict[str, str] | None:
    path = d / SUMS_FILE
    if not path.is_file():
        return None
    sums: dict[str, str] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        if line.strip():
            digest, _, name = line.partition("  ")
            sums[name.strip().lstrip("*")] = digest.strip().lower()
    return sums


def _read_checked(path: Path, sums: dict[str, str] | None) -> bytes:
    data = path.read_bytes()
    if sums is not None:
        expected = sums.get(path.name)
        if expected is None:
            raise FetchError(f"{path} is not listed in {SUMS_FILE}; fetch the act again")
        if hashlib.sha256(data).hexdigest() != expected:
            raise FetchError(f"{path} is corrupt (sha256 mismatch); delete it and fetch the act again")
    return data


def _write_archive(d: Path, files: dict[str, bytes]) -> tuple[Path, ...]:
    d.mkdir(parents=True, exist_ok=True)
    # Drop the old sums first: until the new ones are written the directory reads as incomplete.
    (d / SUMS_FILE).unlink(missing_ok=True)
    for stale in TEXT_FILES.values():
        if stale not in files:
            (d / stale).unlink(missing_ok=True)
    paths = [write_atomic(d / name, data) for name, data in files.items()]
    sums = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in files.items())
    paths.append(write_atomic(d / SUMS_FILE, sums.encode("ascii")))
    return tuple(paths)

