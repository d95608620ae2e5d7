"""Issue 49's medium and low findings on the listening faces (`pipeline serve`, `pipeline mcp --http`), each
as it was found: secrets on the error page, one MCP client locking everyone out, token guessing, weak
tokens, a login that never ended, pages a shared cache could keep, a redirect off the site, a connection
held open by slow headers, a huge argument echoed, and an answer asked before any vector exists.

Each face's real application runs in a real uvicorn server on loopback (tests/support/servers.py, with
the settings both commands use), spoken to by plain HTTP (a raw socket where httpx would tidy the request)."""
from __future__ import annotations

import contextlib
import logging
import re
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from support.cli import run_cli
from support.database import create_database
from support.servers import free_port, serving

from pipeline.core.errors import ConfigError
from pipeline.interfaces import listening
from pipeline.interfaces.listening import Policy, read_token
from pipeline.interfaces.mcp_server import build_server, http_app
from pipeline.interfaces.web import build_app
from pipeline.service import Service

try:
    from embedding_stand_in import StandInEmbedder
except ImportError:  # tests/ imported as a package
    from tests.embedding_stand_in import StandInEmbedder

TOKEN = "hardening-test-token-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SECRET = "hunter2-Secret-pw"
GUESSES = 10  # wrong tokens a minute a client address may send (docs/web.md)


def _rpc(method: str, params: dict, id_: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


INITIALIZE = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "probe", "version": "1"}})


@pytest.fixture(scope="module")
def empty_db(server_url) -> str:
    return create_database(server_url, "hardening")


@contextlib.contextmanager
def web(db: str, token: str | None = None) -> Iterator[str]:
    port = free_port()
    app = build_app(Service(db, embedder=StandInEmbedder(), pool_size=1), warm=False,
                    policy=Policy.listening("127.0.0.1", port, (), token))
    with serving(app, port) as base:
        yield base


@contextlib.contextmanager
def mcp(db: str, token: str | None = None) -> Iterator[str]:
    port = free_port()
    server = build_server(Service(db, embedder=StandInEmbedder(), pool_size=1))
    with serving(http_app(server, Policy.listening("127.0.0.1", port, (), token)), port) as base:
        yield base + "/mcp"


def raw_get(base: str, target: str) -> bytes:
    """The reply's head to ``GET target`` sent as written (httpx would escape a backslash)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply.split(b"\r\n\r\n", 1)[0]


# --- secrets on the error page ------------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "postgresql://reader@127.0.0.1:{port}/law?password=" + SECRET,
    "host=127.0.0.1 port={port} user=reader password=" + SECRET + " dbname=law",
], ids=["query", "conninfo"])
def test_a_database_failure_shows_an_id_and_only_the_log_has_the_details(url, caplog):
    url = url.format(port=free_port())  # nothing listens there
    with caplog.at_level(logging.WARNING), web(url) as base:
        page = httpx.get(base + "/acts", timeout=60)
    assert page.status_code == 503 and "Baza danych jest chwilowo niedostępna" in page.text
    found = re.search(r"Numer błędu: ([0-9a-f]{8})", page.text)
    assert found, page.text
    # The visitor sees neither the password nor where the database is.
    for hidden in (SECRET, "reader", "127.0.0.1", "Szczegóły"):
        assert hidden not in page.text, hidden
    logged = [r.getMessage() for r in caplog.records if found.group(1) in r.getMessage()]
    assert len(logged) == 1 and "cannot connect to the database" in logged[0] and "password=***" in logged[0]
    assert SECRET not in caplog.text


# --- one MCP client locks everyone out -----------------------------------------------------------------

def test_mcp_keeps_no_session_a_client_could_pile_up(empty_db):
    with mcp(empty_db) as url, httpx.Client(headers=MCP_HEADERS, timeout=30) as http:
        for _ in range(200):  # the probe sent 10 000 in 36 s: each one a session kept 30 minutes
            answered = http.post(url, json=INITIALIZE)
            assert answered.status_code == 200 and "mcp-session-id" not in answered.headers
        # Any client calls a tool at once, in one request, with nothing kept for it.
        called = http.post(url, json=_rpc("tools/call", {"name": "list_acts", "arguments": {}}))
        assert called.status_code == 200 and '"acts"' in called.text and "mcp-session-id" not in called.headers


# --- token guesses ------------------------------------------------------------------------------------

def test_token_guesses_are_limited_per_client_and_logged_with_its_address(empty_db, caplog):
    with caplog.at_level(logging.INFO), web(empty_db, token=TOKEN) as base:
        login = httpx.get(base + "/acts", params={"token": TOKEN}, timeout=30)
        jar = dict(login.cookies)
        statuses = [httpx.get(base + "/acts", headers={"Authorization": f"Bearer wrong-{i:02d}-0123456789abc"},
                              timeout=30).status_code for i in range(GUESSES + 2)]
        assert statuses == [401] * GUESSES + [429, 429]
        # Past the guesses a right token is refused too (else a guess would still tell), in the address too.
        limited = httpx.get(base + "/acts", headers=BEARER, timeout=30)
        assert limited.status_code == 429 and 0 < int(limited.headers["retry-after"]) <= 60
        assert "zbyt wiele błędnych tokenów" in limited.text
        assert httpx.get(base + "/acts", params={"token": TOKEN}, timeout=30).status_code == 429
        # A browser logged in before still reads: a cookie is signed, no guess.
        assert httpx.get(base + "/acts", cookies=jar, timeout=30).status_code == 200
    refusals = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused")]
    assert refusals and all(" from 127.0.0.1 " in line for line in refusals), refusals


def test_mcp_token_guesses_are_limited_too(empty_db):
    with mcp(empty_db, token=TOKEN) as url, httpx.Client(headers=MCP_HEADERS, timeout=30) as http:
        statuses = [http.post(url, json=INITIALIZE, headers={"Authorization": f"Bearer wrong-{i:02d}-0123456789"})
                    .status_code for i in range(GUESSES + 1)]
        assert statuses[-1] == 429 and set(statuses[:-1]) == {401}
        assert http.post(url, json=INITIALIZE, headers=BEARER).status_code == 429


@pytest.mark.parametrize("weak", ["passwordpassword", "aaaaaaaaaaaaaaaaaaaa", "abcdefgh" * 3, "0123456701234567"])
def test_a_weak_token_is_refused_with_a_clear_message(weak):
    with pytest.raises(ConfigError, match="too easy to guess"):
        read_token(None, {"PIPELINE_TOKEN": weak})
    assert read_token(None, {"PIPELINE_TOKEN": TOKEN}) == TOKEN
    result = run_cli("serve", env={"DATABASE_URL": "postgresql://nobody@/none", "PIPELINE_TOKEN": "passwordpassword"})
    assert result.returncode == 1 and "too easy to guess" in result.stderr and "Traceback" not in result.stderr


# --- the login ----------------------------------------------------------------------------------------

def test_a_login_expires_and_a_logout_ends_it(empty_db, monkeypatch):
    with web(empty_db, token=TOKEN) as base:
        login = httpx.get(base + "/acts", params={"token": TOKEN}, timeout=30)
        assert f"Max-Age={12 * 3600}" in login.headers["set-cookie"]
        jar = dict(login.cookies)
        page = httpx.get(base + "/acts", cookies=jar, timeout=30)
        assert page.status_code == 200 and 'action="/logout"' in page.text
        out = httpx.post(base + "/logout", cookies=jar, timeout=30)
        assert out.status_code == 303 and out.headers["location"] == "/"
        assert 'pipeline_token=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
        # The cookie a browser (or a thief) kept opens nothing after the logout.
        assert httpx.get(base + "/acts", cookies=jar, timeout=30).status_code == 401
        monkeypatch.setattr(listening, "LOGIN_HOURS", 0, raising=False)  # a login that is over as soon as it is given
        stale = dict(httpx.get(base + "/acts", params={"token": TOKEN}, timeout=30).cookies)
        refused = httpx.get(base + "/acts", cookies=stale, timeout=30)
        assert refused.status_code == 401 and "wymaga logowania" in refused.text


def test_pages_behind_the_token_are_private_to_caches(empty_db):
    with web(empty_db, token=TOKEN) as base:
        for path in ("/acts", "/static/web.css", "/search"):
            answered = httpx.get(base + path, headers=BEARER, timeout=30)
            assert answered.status_code == 200 and "private" in answered.headers["cache-control"], path
    with mcp(empty_db, token=TOKEN) as url:
        answered = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER}, timeout=30)
        assert answered.status_code == 200 and "private" in answered.headers["cache-control"]


def test_the_login_redirect_stays_on_the_site(empty_db):
    with web(empty_db, token=TOKEN) as base:
        for target in (f"/\\evil.com?token={TOKEN}", f"/\\\\evil.com/x?token={TOKEN}", f"//evil.com?token={TOKEN}"):
            head = raw_get(base, target)
            assert head.startswith(b"HTTP/1.1 303"), head
            location = re.search(rb"\r\nlocation: ([^\r]*)", head, re.IGNORECASE).group(1).decode()
            # A browser reads "\" as "/": "/\evil.com" would be the host evil.com.
            assert location.startswith("/") and location[1:2] not in ("/", "\\") and "\\" not in location, location


# --- slow headers -------------------------------------------------------------------------------------

def test_a_client_that_sends_its_headers_slowly_is_cut_off(empty_db, monkeypatch):
    monkeypatch.setattr(listening, "HEADER_TIMEOUT", 1.5, raising=False)
    with web(empty_db) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(f"GET /acts HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
            start, closed = time.monotonic(), False
            while time.monotonic() - start < 8:
                try:
                    conn.sendall(b"X-Slow: 1\r\n")  # a header a second: never the end of them
                    conn.settimeout(1.0)
                    closed = conn.recv(1024) == b""
                except TimeoutError:
                    continue
                except OSError:
                    closed = True
                if closed:
                    break
            assert closed and time.monotonic() - start < 5
        # A client that sends its request at once is served, twice on one connection, a pause between.
        with httpx.Client(timeout=30) as client:
            assert client.get(base + "/acts").status_code == 200
            time.sleep(1.0)
            assert client.get(base + "/acts").status_code == 200


# --- a huge argument ----------------------------------------------------------------------------------

def test_a_huge_argument_is_not_echoed_whole(empty_db, caplog):
    huge = "1" * 1_000_000
    with caplog.at_level(logging.INFO), web(empty_db) as base:
        for field in ({"text": "art. 1 k.p.", "as_of": huge}, {"text": huge}):
            reply = httpx.post(base + "/check", data=field, timeout=60)
            assert reply.status_code in (400, 413) and len(reply.text) < 20_000, (reply.status_code, len(reply.text))
    calls = [("get_article", {"act": "DU/2025/277", "article": huge}), ("get_article", {"act": huge, "article": "1"}),
             ("search_law", {"query": "urlop", "acts": [huge]}), ("compare_versions", {"act": "DU/2025/277", "article": huge}),
             ("find_acts", {"title": huge, "stored": True}), ("search_law", {"query": huge})]
    with caplog.at_level(logging.INFO), mcp(empty_db) as url, httpx.Client(headers=MCP_HEADERS, timeout=60) as http:
        for name, arguments in calls:
            reply = http.post(url, json=_rpc("tools/call", {"name": name, "arguments": arguments}))
            assert reply.status_code == 200 and '"isError":true' in reply.text.replace(" ", ""), name
            assert len(reply.text) < 4000, (name, len(reply.text))
        prompt = http.post(url, json=_rpc("prompts/get", {"name": "pytanie_prawne", "arguments": {"question": huge}}))
        assert prompt.status_code == 200 and len(prompt.text) < 4000
    assert all(len(r.getMessage()) < 4000 for r in caplog.records), max(len(r.getMessage()) for r in caplog.records)


# --- an answer before any vector ----------------------------------------------------------------------

def test_the_answer_page_without_vectors_says_so_and_logs_no_error(server_url, _corpus_text, caplog):
    db = create_database(server_url, "hardening_text", copy_of=_corpus_text)  # texts stored, none embedded
    with caplog.at_level(logging.WARNING), web(db) as base:
        searched = httpx.get(base + "/search", params={"q": "urlop wypoczynkowy"}, timeout=60)
        assert searched.status_code == 200
        answered = httpx.get(base + "/answer", params={"q": "urlop wypoczynkowy"}, timeout=60)
        stream = httpx.get(base + "/answer/stream", params={"q": "urlop wypoczynkowy"}, timeout=60)
    assert "chwilowo niedostępna" not in answered.text and "nie ma jeszcze wektorów" in answered.text
    assert 'href="/search?q=urlop+wypoczynkowy"' in answered.text
    assert "event: failure" in stream.text and "nie ma jeszcze wektorów" in stream.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text

