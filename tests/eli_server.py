"""A loopback HTTP server that serves a mirror directory in the ELI API's URL layout.

It serves the mirror's real files byte for byte; it is a stand-in only for faults, which tests
queue per path::

    with start_mirror_server(Path("../shared/eli")) as server:
        server.inject("/acts/DU/2025/277", [Fault.status(503), Fault.status(503)])
        EliClient(server.url, min_interval=0).record("DU/2025/277")   # 503, 503, then the real file
        assert server.count("/acts/DU/2025/277") == 3

A test can change what the API says without copying the mirror into the repository: files in an
overlay folder (same layout, e.g. under tmp_path) replace or add to the mirror's, and
``acts/search.json`` there is the answer to ``/acts/search`` (whatever the query)::

    server.overlay = tmp_path          # tmp_path/acts/DU/2025/277/meta.json now wins

Without such a file, ``/acts/search`` filters the records (meta.json) of the overlay and the mirror as
the real API does (title words case-insensitively, type, inForce=1, year, publisher; limit/offset
paging) and answers ``{count, totalCount, offset, items, searchQuery}``; ``/acts/{publisher}/{year}``
lists a year's records the same way.
"""
from __future__ import annotations

import json
import re
from urllib.parse import parse_qs
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass

from pathlib import Path

from support.servers import StandInHandler, StandInServer

_ROUTE = re.compile(r"/acts/(DU|MP)/(\d{4})/(\d{1,6})(?:/(text\.pdf|text\.html|struct|references))?")
_SEARCH = "/acts/search"
_YEAR = re.compile(r"/acts/(DU|MP)/(\d{4})")
_FILES = {None: "meta.json", "text.pdf": "text.pdf", "text.html": "text.html",
          "struct": "struct.json", "references": "references.json"}
_TYPES = {".json": "application/json", ".pdf": "application/pdf", ".html": "text/html; charset=utf-8"}


@dataclass(frozen=True)
class Fault:
    """One misbehaviour, used for one request to its path."""

    kind: str  # "status" | "slow" | "truncated" | "invalid_json" | "empty"
    code: int = 0
    retry_after: str | None = None
    seconds: float = 0.0

    @classmethod
    def status(cls, code: int, retry_after: float | str | None = None) -> Fault:
        return cls("status", code=code, retry_after=None if retry_after is None else str(retry_after))

    @classmethod
    def not_found(cls) -> Fault:
        return cls.status(404)

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        """Sleep before answering normally (a client with a shorter timeout gives up first)."""
        return cls("slow", seconds=seconds)

    @classmethod
    def truncated(cls) -> Fault:
        """Declare the real Content-Length, send half the body, close the connection."""
        return cls("truncated")

    @classmethod
    def invalid_json(cls) -> Fault:
        """200 with a JSON content type and a body that is not JSON (like a WAF page)."""
        return cls("invalid_json")

    @classmethod
    def empty(cls) -> Fault:
        """200 with an empty body."""
        return cls("empty")


class _Handler(StandInHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        fault = self.server.stand_in.record(path, dict(self.headers.items()), self.path)
        try:
            self._answer(path, fault)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to do

    def _answer(self, path: str, fault: Fault | None) -> None:
        if fault is not None and fault.kind == "slow":
            time.sleep(fault.seconds)
        if fault is not None and fault.kind == "status":
            body = json.dumps({"status": fault.code, "message": "injected fault"}).encode()
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return self._send(fault.code, body, "application/json", headers)
        if fault is not None and fault.kind == "invalid_json":
            return self._send(200, b"<html><body>Request rejected</body></html>", "application/json")
        if fault is not None and fault.kind == "empty":
            return self._send(200, b"", "text/html; charset=utf-8")

        found = self._resolve(path)
        if found is None:
            return self._send(404, b'{"status":404,"message":"Not Found"}', "application/json")
        body, ctype = found
        if fault is not None and fault.kind == "truncated":
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._send(200, body, ctype)

    def _resolve(self, path: str) -> tuple[bytes, str] | None:
        if path == _SEARCH:
            found = self._file("acts/search.json")  # a fixed answer, whatever the query
            if found:
                return found.read_bytes(), _TYPES[".json"]
            return self._search(parse_qs(self.path.partition("?")[2])), _TYPES[".json"]
        if year := _YEAR.fullmatch(path):
            return self._search({"publisher": [year.group(1)], "year": [year.group(2)], "limit": ["100000"]}), \
                _TYPES[".json"]
        m = _ROUTE.fullmatch(path)
        if m is None:
            return None
        act = f"acts/{m.group(1)}/{m.group(2)}/{m.group(3)}"
        file = self._file(f"{act}/{_FILES[m.group(4)]}")
        if file is not None:
            return file.read_bytes(), _TYPES[file.suffix]
        meta = self._file(f"{act}/meta.json")
        if m.group(4) == "text.html" and meta is not None:
            # The real API answers 200 with 0 bytes on text.html of an act whose textHTML is false.
            if not json.loads(meta.read_bytes()).get("textHTML"):
                return b"", _TYPES[".html"]
        return None

    def _records(self) -> list[dict]:
        """Every act record (meta.json) of the overlay and the mirror, the overlay's winning."""
        found: dict[str, dict] = {}
        for root in (self.server.stand_in.root, self.server.stand_in.overlay):
            for meta in sorted(root.glob("acts/*/*/*/meta.json")) if root is not None else ():
                record = json.loads(meta.read_bytes())
                found[record.get("ELI") or "/".join(meta.parts[-4:-1])] = record
        return sorted(found.values(), key=lambda r: (str(r.get("publisher")), int(r.get("year") or 0),
                                                      int(r.get("pos") or 0)))

    def _search(self, query: dict[str, list[str]]) -> bytes:
        """/acts/search over the records: every title word in the title (case-insensitively), one of the
        types, inForce=1, year, publisher; then limit/offset (the real API's default limit is 500)."""
        one = {k: v[-1] for k, v in query.items()}
        words = one.get("title", "").casefold().split()
        types = {t.casefold() for t in query.get("type", [])}
        items = [r for r in self._records()
                 if all(w in str(r.get("title") or "").casefold() for w in words)
                 and (not types or str(r.get("type")).casefold() in types)
                 and (one.get("inForce") != "1" or r.get("inForce") == "IN_FORCE")
                 and ("year" not in one or str(r.get("year")) == one["year"])
                 and ("publisher" not in one or r.get("publisher") == one["publisher"])]
        offset, limit = int(one.get("offset", 0)), int(one.get("limit", 500))
        page = items[offset:offset + limit]
        echo = {"title": one.get("title", ""), "type": sorted(types), "year": int(one.get("year", -1)),
                "publisher": one.get("publisher", ""), "statusInForce": one.get("inForce") == "1"}
        return json.dumps({"count": len(page), "totalCount": len(items), "offset": offset, "items": page,
                           "searchQuery": echo}, ensure_ascii=False).encode()

    def _file(self, relative: str) -> Path | None:
        """The overlay's file when it has one, else the mirror's."""
        for root in (self.server.stand_in.overlay, self.server.stand_in.root):
            if root is not None and (root / relative).is_file():
                return root / relative
        return None

    def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


class MirrorServer(StandInServer):
    """The running server: ``url``, ``inject()``, ``count()``, ``requests``, ``close()``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._faults: dict[str, deque[Fault]] = {}
        self._counts: Counter[str] = Counter()
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, headers) in arrival order
        self.urls: list[str] = []  # path and query string, in arrival order
        self.overlay: Path | None = None  # files here win over the mirror's (see the module doc)
        self._lock = threading.Lock()
        super().__init__(_Handler)
        self.url = self.address
        self.start()

    def inject(self, path: str, faults: list[Fault]) -> None:
        """Queue faults for ``path`` (e.g. "/acts/DU/2025/277"); each request uses up one."""
        with self._lock:
            self._faults.setdefault(path.rstrip("/"), deque()).extend(faults)

    def count(self, path: str) -> int:
        with self._lock:
            return self._counts[path.rstrip("/")]

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._counts.clear()
            self.requests.clear()
            self.urls.clear()

    def record(self, path: str, headers: dict[str, str], raw: str = "") -> Fault | None:
        with self._lock:
            self._counts[path] += 1
            self.requests.append((path, headers))
            self.urls.append(raw or path)
            queue = self._faults.get(path)
            return queue.popleft() if queue else None

    def close(self) -> None:
        self.stop()


def start_mirror_server(root: Path) -> MirrorServer:
    """Serve ``root`` (a mirror in the acts/{pub}/{year}/{pos}/ layout) on 127.0.0.1, a free port."""
    return MirrorServer(root)


if __name__ == "__main__":  # python tests/eli_server.py ../shared/eli: the mirror as the ELI API, for trying sync
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(description="Serve an ELI mirror folder as the ELI API on 127.0.0.1.")
    parser.add_argument("mirror", type=Path, help="a folder in the mirror layout (acts/DU/2025/277/meta.json)")
    mirror = parser.parse_args().mirror
    if not (mirror / "acts").is_dir():
        parser.error(f"{mirror} has no acts/ folder")
    with start_mirror_server(mirror) as server:
        print(f"ELI_API_URL={server.url}", flush=True)
        print("serving; Ctrl-C stops", file=sys.stderr, flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
