"""Both listening faces on a network (`pipeline serve`, `pipeline mcp --http`): the allowed hosts (Host and
Origin), the bearer token, the warning beyond loopback, the security headers on every response of the
page and its relative redirects.

Each face's real application runs in a real uvicorn server on loopback (a thread of this process, over
an empty database at head), spoken to by plain HTTP and, for MCP, by the SDK's own client. A foreign
Host is sent as a header: DNS rebinding is exactly a browser sending another name to this address."""
from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import anyio
import httpx
import httpx2
import pytest
from support.cli import run_cli
from support.database import create_database
from support.servers import free_port, serving

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pipeline.interfaces.listening import SECURITY_HEADERS, Policy
from pipeline.interfaces.mcp_server import build_server, http_app
from pipeline.interfaces.web import build_app
from pipeline.service import Service

try:
    from embedding_stand_in import StandInEmbedder
except ImportError:  # tests/ imported as a package
    from tests.embedding_stand_in import StandInEmbedder

TOKEN = "network-test-token-0123456789abcdef"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def network_db(server_url) -> str:
    return create_database(server_url, "network")


@contextlib.contextmanager
def web(db: str, host: str = "127.0.0.1", allowed: tuple[str, ...] = (), token: str | None = None) -> Iterator[str]:
    port = free_port()
    app = build_app(Service(db, embedder=StandInEmbedder(), pool_size=2), warm=False,
                    policy=Policy.listening(host, port, allowed, token))
    with serving(app, port) as base:
        yield base


@contextlib.contextmanager
def mcp(db: str, host: str = "127.0.0.1", allowed: tuple[str, ...] = (), token: str | None = None) -> Iterator[str]:
    port = free_port()
    server = build_server(Service(db, embedder=StandInEmbedder(), pool_size=2))
    with serving(http_app(server, Policy.listening(host, port, allowed, token)), port) as base:
        yield base + "/mcp"


def tools(url: str, headers: dict[str, str] | None = None) -> set[str]:
    """The tools the SDK's own client lists, sending ``headers`` with every request."""
    async def listed() -> set[str]:
        async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            return {t.name for t in (await client.list_tools()).tools}
    return anyio.run(listed)


def initialize(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=30)


def secured(response: httpx.Response) -> bool:
    return all(response.headers.get(name) == value for name, value in SECURITY_HEADERS.items())


# --- the allowed hosts --------------------------------------------------------------------------------

def test_a_foreign_host_is_refused_and_an_allowed_one_passes_on_the_page(network_db):
    with web(network_db, allowed=("law.example",)) as base:
        assert httpx.get(base + "/acts", timeout=30).status_code == 200
        port = base.rsplit(":", 1)[1]
        for host in (f"localhost:{port}", f"[::1]:{port}", "LAW.example", "law.example:443"):
            assert httpx.get(base + "/acts", headers={"Host": host}, timeout=30).status_code == 200, host
        # DNS rebinding: a name of the attacker's that resolves here; a loopback name on another port.
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1:1"):
            refused = httpx.get(base + "/acts", headers={"Host": host}, timeout=30)
            assert refused.status_code == 421 and "nie odpowiada pod tym adresem" in refused.text, host
            assert "--allowed-host" in refused.text and secured(refused)
        assert httpx.get(base + "/static/web.css", headers={"Host": "evil.example"}, timeout=30).status_code == 421
        bad = httpx.get(base + "/acts", headers={"Host": "a b\x01"}, timeout=30)
        assert bad.status_code == 400 and "\x01" not in bad.text


def test_a_foreign_host_is_refused_by_mcp_beyond_loopback_and_an_allowed_one_passes(network_db):
    # Listening on every interface, where the SDK itself checks nothing.
    with mcp(network_db, host="0.0.0.0") as url:
        refused = initialize(url, Host="evil.example")
        assert refused.status_code == 421 and "not one this server answers to" in refused.text
        assert "search_law" in tools(url)
    # On loopback behind a reverse proxy: the proxy's public name passes (the SDK's own check refused it).
    with mcp(network_db, allowed=("law.example",)) as url:
        assert initialize(url, Host="law.example").status_code == 200
        assert initialize(url, Host="evil.example").status_code == 421


def test_a_foreign_origin_is_refused_on_both_faces(network_db):
    with web(network_db) as base:
        assert httpx.get(base + "/acts", headers={"Origin": base}, timeout=30).status_code == 200
        for origin in ("http://evil.example", "null", base.replace("127.0.0.1", "evil.example")):
            refused = httpx.get(base + "/acts", headers={"Origin": origin}, timeout=30)
            assert refused.status_code == 403 and "innej strony" in refused.text, origin
        # The one form that posts: a page elsewhere cannot submit it here.
        posted = httpx.post(base + "/check", data={"text": "art. 154 k.p."}, headers={"Origin": "http://evil.example"},
                            timeout=30)
        assert posted.status_code == 403
    with mcp(network_db, host="0.0.0.0") as url:
        refused = initialize(url, Origin="http://evil.example")
        assert refused.status_code == 403 and secured(refused)
        answered = initialize(url, Origin=url.rsplit("/", 1)[0])
        assert answered.status_code == 200 and secured(answered)  # MCP's answers carry the headers too


# --- the token ----------------------------------------------------------------------------------------

def test_with_a_token_the_page_needs_it_and_a_browser_logs_in_once(network_db):
    with web(network_db, token=TOKEN) as base:
        for path in ("/acts", "/static/web.css", "/favicon.ico"):
            missing = httpx.get(base + path, timeout=30)
            assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer"), path
            assert secured(missing)
        assert "wymaga logowania" in httpx.get(base + "/acts", timeout=30).text
        wrong = httpx.get(base + "/acts", headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"}, timeout=30)
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert httpx.get(base + "/acts", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).status_code == 200
        assert httpx.get(base + "/acts", params={"token": "wrong-token-0123456789"}, timeout=30).status_code == 401
        # A browser: the token once in the address, then a cookie; the address loses the token.
        login = httpx.get(base + "/acts", params={"token": TOKEN, "x": "1"}, timeout=30)
        assert login.status_code == 303 and login.headers["location"] == "/acts?x=1"
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and TOKEN not in cookie
        jar = dict(login.cookies)
        assert httpx.get(base + "/acts", cookies=jar, timeout=30).status_code == 200
        assert httpx.get(base + "/static/web.css", cookies=jar, timeout=30).status_code == 200
        assert httpx.get(base + "/acts", cookies={"pipeline_token": TOKEN}, timeout=30).status_code == 401
        # The token does not open the door to a foreign Host.
        assert httpx.get(base + "/acts", headers={"Host": "evil.example", "Authorization": f"Bearer {TOKEN}"},
                         timeout=30).status_code == 421


def test_with_a_token_mcp_needs_it(network_db):
    with mcp(network_db, token=TOKEN) as url:
        missing = initialize(url)
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert initialize(url, Authorization="Bearer wrong-token-0123456789").status_code == 401
        assert initialize(url, Authorization=f"Bearer {TOKEN}").status_code == 200
        assert "search_law" in tools(url, {"Authorization": f"Bearer {TOKEN}"})
        with pytest.raises(BaseException):  # the SDK's client cannot connect without it
            tools(url, {"Authorization": "Bearer wrong-token-0123456789"})
        # No cookie login for MCP: ?token= is not a credential there.
        assert httpx.post(url, params={"token": TOKEN}, json=INITIALIZE, headers=MCP_HEADERS,
                          timeout=30).status_code == 401


# --- the commands -------------------------------------------------------------------------------------

@pytest.mark.parametrize("face", [("mcp", "--http"), ("serve",)], ids=["mcp", "serve"])
def test_listening_beyond_loopback_without_a_token_warns(face, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    env = {"DATABASE_URL": "postgresql://nobody@/none", "PIPELINE_TOKEN": None, "PIPELINE_ALLOWED_HOSTS": None}
    with socket.socket() as taken:  # a busy port: the command says its lines, then stops without serving
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        open_ = run_cli(*face, "--host", "0.0.0.0", "--port", port, env=env)
        with_file = run_cli(*face, "--host", "0.0.0.0", "--port", port, "--token-file", str(token_file), env=env)
        with_env = run_cli(*face, "--host", "0.0.0.0", "--port", port, env={**env, "PIPELINE_TOKEN": TOKEN})
        loopback = run_cli(*face, "--port", port, env=env)
    warnings = [line for line in open_.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "listening on 0.0.0.0 without a token" in warnings[0], open_.stderr
    assert open_.returncode == 1 and "cannot listen on 0.0.0.0" in open_.stderr and "Traceback" not in open_.stderr
    for quiet in (with_file, with_env, loopback):
        assert quiet.returncode == 1 and "warning" not in quiet.stderr, quiet.stderr


@pytest.mark.parametrize("face", [("mcp", "--http"), ("serve",)], ids=["mcp", "serve"])
def test_bad_network_options_are_one_line(face, tmp_path):
    short = tmp_path / "short"
    short.write_text("secret\n")
    env = {"DATABASE_URL": "postgresql://nobody@/none", "PIPELINE_TOKEN": None}
    weak = run_cli(*face, "--token-file", str(short), env=env)
    assert weak.returncode == 1 and "at least 16" in weak.stderr and "Traceback" not in weak.stderr
    both = run_cli(*face, "--token-file", str(short), env={**env, "PIPELINE_TOKEN": TOKEN})
    assert both.returncode == 1 and "not both" in both.stderr
    empty = run_cli(*face, env={**env, "PIPELINE_TOKEN": ""})
    assert empty.returncode == 1 and "PIPELINE_TOKEN" in empty.stderr and "Traceback" not in empty.stderr
    url = run_cli(*face, "--allowed-host", "http://law.example/", env=env)
    assert url.returncode == 2 and "--allowed-host" in url.stderr and "Traceback" not in url.stderr
    assert run_cli(*face, "--token-file", str(tmp_path / "none"), env=env).returncode == 2
    assert "--allowed-host" in run_cli(*face, "--help").stdout


def test_mcp_network_options_need_http(tmp_path):
    result = run_cli("mcp", "--allowed-host", "law.example")
    assert result.returncode == 2 and "need --http" in result.stderr and "Traceback" not in result.stderr


# --- every response of the page -------------------------------------------------------------------------

def test_every_response_of_the_page_has_the_security_headers_and_redirects_stay_relative(network_db):
    with web(network_db) as base:
        port = base.rsplit(":", 1)[1]
        asset = httpx.get(base + "/static/web.css", timeout=30)
        assert asset.status_code == 200 and secured(asset)
        missing = httpx.get(base + "/no/such/page", timeout=30)
        assert missing.status_code == 404 and secured(missing)
        wrong_method = httpx.delete(base + "/acts", timeout=30)
        assert wrong_method.status_code == 405 and secured(wrong_method) and "GET" in wrong_method.headers["allow"]
        for path, location in (("/static", "/static/"), ("/acts/", "/acts"), ("/favicon.ico", "/static/favicon.svg"),
                               ("/search/?q=urlop", "/search?q=urlop")):
            redirect = httpx.get(base + path, headers={"Host": f"localhost:{port}"}, timeout=30)
            assert redirect.is_redirect and redirect.headers["location"] == location, path
            assert secured(redirect), path
        # A path that looks like another host is no redirect to it.
        assert httpx.get(base + "//evil.example/", timeout=30).status_code == 404
        head = httpx.head(base + "/answer/stream?q=urlop", timeout=30)
        assert head.status_code == 200 and secured(head)
