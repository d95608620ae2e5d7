"""`pipeline mcp` as a real subprocess, spoken to by the official SDK's own client (stdio and HTTP).

Vectors come from the Ollama stand-in (tests/ollama_stand_in.py: Ollama's real /api/embed protocol,
hashed bag-of-words vectors), so the acts are embedded in seconds instead of minutes; the answer
model is the chat stand-in (tests/chat_stand_in.py). Both are loopback HTTP servers.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio
import psycopg
import pytest
from chat_stand_in import ChatStandIn
from support.cli import run_cli
from support.corpus import embedded_copy
from support.paths import REPO
from ollama_stand_in import OllamaStandIn

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from pipeline.core.limits import MAX_CHECK_CITATIONS

KP = "DU/2025/277"  # Kodeks pracy (consolidated text)
PATIENT = "DU/2024/581"  # patient rights act
SECRET = "sk-or-v1-thisisnotarealkey0123456789"


@pytest.fixture(scope="module")
def ollama():
    with OllamaStandIn({"bge-m3": 1024}) as server:
        yield server


@pytest.fixture(scope="module")
def mcp_url(server_url: str, _corpus_text: str, ollama: OllamaStandIn) -> str:
    """Kodeks pracy + patient rights from the mirror (a copy of the session's stored corpus: storing them
    again cost seconds of the server's CPU), embedded by the stand-in."""
    from pipeline.embedders.ollama import OllamaEmbedder

    return embedded_copy(server_url, _corpus_text, "mcp", OllamaEmbedder(ollama.url, "bge-m3"))


def server_env(url: str, ollama: OllamaStandIn, **extra: str) -> dict[str, str]:
    # The SDK's stdio client passes only a safe subset of the environment: name everything.
    return {"DATABASE_URL": url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url,
            "PIPELINE_HOME": os.environ["PIPELINE_HOME"], **extra}


def stdio(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp"], env=env, cwd=str(REPO))


def show(url: str, act: str, article: str) -> dict:
    result = run_cli("show", act, article, "--json", env={"DATABASE_URL": url})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def utc(value: Any) -> Any:
    """``value`` with UTC times written one way: MCP (pydantic) writes "…Z" where the CLI writes "…+00:00"."""
    if isinstance(value, dict):
        return {k: utc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utc(v) for v in value]
    return value.replace("+00:00", "Z") if isinstance(value, str) and value.endswith("+00:00") else value


def error_line(result: Any) -> str:
    assert result.is_error, result
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    return text


# --- stdio ----------------------------------------------------------------------------------------


def test_stdio_tools_answer_with_citations_that_match_pipeline_show(mcp_url, ollama, server):
    async def session() -> dict:
        out: dict = {}
        # The floor set between the stand-in vectors' similarities of an on-topic and an off-topic question.
        env = server_env(mcp_url, ollama, ANSWER_MIN_SIMILARITY="0.3", ELI_API_URL=server.url)
        async with Client(stdio(env)) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["acts"] = (await client.call_tool("list_acts", {})).structured_content
            out["found"] = (await client.call_tool("find_acts", {"title": "kodeks pracy"})).structured_content
            out["found_stored"] = (await client.call_tool("find_acts", {"title": "pacjenta", "stored": True})
                                   ).structured_content
            out["text"] = (await client.call_tool("search_law", {"query": "urlop na żądanie pracownika",
                                                                 "mode": "text", "k": 3})).structured_content
            out["hybrid"] = (await client.call_tool("search_law", {"query": "Ile dni urlopu na żądanie?",
                                                                   "acts": [KP]})).structured_content
            out["off_topic"] = (await client.call_tool("search_law", {"query": "Jaka jest stolica Francji?"}
                                                       )).structured_content
            top = out["text"]["hits"][0]
            out["article"] = (await client.call_tool("get_article", {"act": top["act"],
                                                                     "article": top["article"]})).structured_content
            out["dated"] = (await client.call_tool("get_article", {"act": KP, "article": "184", "as_of": "2025-03-01"}
                                                   )).structured_content
            out["checked"] = (await client.call_tool("check_citations", {
                "text": "Zgodnie z art. 154 § 1 pkt 2 k.p. i art. 350 k.p. urlop przysługuje."})).structured_content
            out["capped"] = (await client.call_tool("check_citations", {
                "text": "art. 154 k.p. " * (MAX_CHECK_CITATIONS + 2)})).structured_content
            pages, offset = [], 0
            while offset is not None:
                page = (await client.call_tool("get_article", {"act": KP, "article": "151^1", "max_chars": 300,
                                                               "offset": offset})).structured_content
                pages.append(page)
                offset = page["next_offset"]
            out["pages"] = pages
            out["toc"] = (await client.read_resource(f"law://acts/{KP}/toc")).contents[0].text
            out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
        return out

    out = anyio.run(session)
    # Without an answer model the answer tool is not offered.
    assert set(out["tools"]) == {"search_law", "get_article", "list_acts", "find_acts", "compare_versions",
                                 "check_citations"}
    for tool in out["tools"].values():
        assert tool.output_schema and tool.description
    # find_acts: the API through the stand-in (the Labour Code under its base act, stored), and the database.
    labour = out["found"]["acts"][0]
    assert (labour["act"], labour["newest"], labour["stored"], labour["stored_act"]) == ("DU/1974/141", KP, True, KP)
    assert out["found_stored"]["source"] == "stored" and [a["act"] for a in out["found_stored"]["acts"]] == [PATIENT]
    assert out["tools"]["find_acts"].annotations.read_only_hint is True
    assert "Use it" in out["tools"]["search_law"].description and "Wyszukaj" in out["tools"]["search_law"].description

    acts = {a["act"]: a for a in out["acts"]["acts"]}
    assert set(acts) == {KP, PATIENT}
    assert acts[KP]["title"].startswith("Obwieszczenie") and acts[KP]["base_act"] == "DU/1974/141"
    assert acts[KP]["versions"] == [{"act": KP, "version_no": 1, "valid_from": acts[KP]["valid_from"],
                                     "ingested_at": acts[KP]["versions"][0]["ingested_at"]}]
    assert acts[KP]["article_count"] > 500 and acts[PATIENT]["article_count"] > 50

    hits = out["text"]["hits"]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert all(h["similarity"] is None and h["text_score"] > 0 for h in hits)  # text mode: no vector arm
    for hit in hits[:2]:  # the citation of a hit is what `pipeline show` prints for it
        shown = show(mcp_url, hit["act"], hit["article"])
        assert hit["citation"] == shown["citation"] == f"[{shown['act']}, art. {shown['article']}]"
        assert shown["eli"] == shown["act"]  # the old key, kept for one release (CHANGELOG.md)
        assert (hit["version_no"], hit["valid_from"]) == (shown["version_no"], shown["valid_from"])
        assert " ".join(hit["text"].split())[:200] in " ".join(shown["text"].split())
        # The act's currency with every result (docs/how-it-works.md), the same record on both faces.
        assert utc(hit["currency"]) == utc(shown["currency"]) and hit["currency_note"] == shown["currency"]["note"]

    # One schema for a hit: `pipeline search --json` gives what search_law gives, key for key and value for value.
    cli = run_cli("search", "urlop na żądanie pracownika", "--mode", "text", "-k", "3", "--json",
                  env={"DATABASE_URL": mcp_url})
    assert cli.returncode == 0, cli.stderr
    cli_hits = json.loads(cli.stdout)
    assert [list(h) for h in cli_hits] == [list(h) for h in hits]
    assert utc(cli_hits) == utc(hits)

    hybrid = out["hybrid"]["hits"]
    assert len(hybrid) == 5 and {h["act"] for h in hybrid} == {KP}
    # The rule `ask` refuses by, as `pipeline search` warns: an agent sees that nothing here answers.
    assert not any("looks like an answer" in w for w in out["hybrid"]["warnings"]), out["hybrid"]["warnings"]
    assert out["off_topic"]["hits"] and any(w.startswith("none of these articles looks like an answer (best similarity")
                                            for w in out["off_topic"]["warnings"]), out["off_topic"]["warnings"]
    assert any(h["similarity"] is not None for h in hybrid)  # the vector arm took part

    article = out["article"]
    shown = show(mcp_url, hits[0]["act"], hits[0]["article"])
    assert article["text"] == shown["text"][:4000] and article["total_chars"] == len(shown["text"])
    assert (article["act"], article["article"], article["version_no"], article["valid_from"]) == \
        (shown["act"], shown["article"], shown["version_no"], shown["valid_from"])
    assert article["heading_path"] == shown["heading_path"] and article["valid_to"] is None
    assert utc(article["currency"]) == utc(shown["currency"]) and article["currency_note"].startswith(shown["act"])
    # One schema for an article: get_article's keys are show --json's ("eli" aside, kept one release) and its pages'.
    assert set(shown) - {"eli"} | {"offset", "total_chars", "next_offset"} == set(article)
    assert all(h["currency"] and h["currency_note"] for h in hybrid)

    # On a date: the wording in force that day, when it holds, and the article's timeline (revision 0010).
    dated = out["dated"]
    assert (dated["in_force"], dated["wording"], dated["in_force_until"]) == (True, 1, "2025-03-19")
    assert {"from", "until", "kind", "unit", "source", "text"} <= set(dated["timeline"][0])
    assert any(e["kind"] == "wording" and e["from"] == "2025-03-19" for e in dated["timeline"])

    # Citations checked against the stored texts: one that exists, one past the code's last article.
    checked = out["checked"]
    assert [(c["article"], c["unit"], c["status"]) for c in checked["citations"]] == [
        ("154", "§ 1 pkt 2", "ok"), ("350", "", "not_found")]
    assert checked["ok"] is False and checked["counts"] == {"ok": 1, "not_found": 1}
    assert checked["citations"][0]["text"] == KP and len(checked["citations"][0]["sha256"]) == 64
    assert checked["not_checked"] == 0 and checked["warnings"] == []
    # Past the cap: counted and said, never dropped unsaid (issue 49).
    capped = out["capped"]
    assert len(capped["citations"]) == MAX_CHECK_CITATIONS and capped["not_checked"] == 2 and capped["ok"] is False
    assert capped["warnings"][0].startswith("2 more citation(s) not checked")

    long = show(mcp_url, KP, "151^1")
    assert len(out["pages"]) > 1 and "".join(p["text"] for p in out["pages"]) == long["text"]
    assert out["pages"][-1]["next_offset"] is None

    assert out["toc"].startswith(KP) and "DZIAŁ PIERWSZY" in out["toc"] and "art. 1, 2, 3," in out["toc"]
    assert "pytanie_prawne" in out["prompts"]


BAD_CALLS = [
    ("get_article", {"act": "DU/1999/123", "article": "1"}, "DU/1999/123 is not in the database"),
    ("get_article", {"act": KP, "article": "abc"}, "is not an article number"),
    ("get_article", {"act": KP, "article": "9999"}, "has no art. 9999"),
    ("get_article", {"act": "nonsense", "article": "1"}, "invalid act id"),
    ("get_article", {"act": KP, "article": "154", "as_of": "2024-13-45"}, "as_of"),
    ("search_law", {"query": "   "}, "the question is empty"),
    ("search_law", {"query": "\u200b\u2060 "}, "the question is empty"),  # invisible characters only
    ("search_law", {"query": "urlop " * 2000}, "the question is too long: 12000 characters (at most 5000)"),
    ("get_article", {"act": KP, "article": "9" * 10000}, "has no art. 9999"),  # echoed, cut to one short line
    ("search_law", {"query": "urlop", "k": 0}, "k: Input should be greater than or equal to 1"),
    ("search_law", {"query": "urlop", "k": 500}, "k: Input should be less than or equal to 100"),
    # Counts are whole numbers: pydantic's lax mode would take true for 1 and "5" for 5.
    ("search_law", {"query": "urlop", "k": True}, "k: Input should be a valid integer"),
    ("get_article", {"act": KP, "article": "154", "offset": "10"}, "offset: Input should be a valid integer"),
    ("search_law", {"query": "urlop", "acts": ["DU/1999/123"], "mode": "text"}, "DU/1999/123 is not in the database"),
    ("search_law", {"query": "urlop", "mode": "fuzzy"}, "mode"),
    ("search_law", {}, "query: Field required"),
    # The rule the page applies to a pasted text, below every face (issue 49): no NUL, no control character.
    ("check_citations", {"text": "art. 154 k.p.\x00"}, "the text contains a NUL character"),
    ("check_citations", {"text": "art. 154 k.p.\x1b[2J"}, "the text contains a control character (U+001B)"),
    ("no_such_tool", {}, "Unknown tool"),
]


def test_bad_calls_are_one_line_errors_and_the_server_keeps_serving(mcp_url, ollama, tmp_path):
    async def session() -> list:
        results = []
        async with Client(stdio(server_env(mcp_url, ollama))) as client:
            for name, args, _ in BAD_CALLS:
                results.append(await client.call_tool(name, args))
                # After every bad call a good one still works.
                ok = await client.call_tool("search_law", {"query": "urlop", "mode": "text", "k": 1})
                assert not ok.is_error and ok.structured_content["hits"], ok
            with pytest.raises(MCPError) as missing:
                await client.read_resource("law://acts/DU/1999/123/toc")
            results.append(str(missing.value))
            with pytest.raises(MCPError) as empty:  # the prompt checks its question as search_law does
                await client.get_prompt("pytanie_prawne", {"question": " "})
            results.append(empty.value)
            assert not (await client.call_tool("list_acts", {})).is_error
        return results

    results = anyio.run(session)
    for (name, args, expected), result in zip(BAD_CALLS, results):
        line = error_line(result)
        assert expected in line and len(line) < 600, (name, args, line[:300])
    assert "DU/1999/123 is not in the database" in results[-2]
    assert results[-1].code == INVALID_PARAMS and results[-1].message == "prompt pytanie_prawne: the question is empty"


def test_a_lost_database_connection_is_replaced(mcp_url, ollama):
    async def session() -> tuple:
        async with Client(stdio(server_env(mcp_url, ollama))) as client:
            first = await client.call_tool("get_article", {"act": KP, "article": "154"})
            with psycopg.connect(mcp_url, autocommit=True) as admin:
                killed = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                       "WHERE datname = 'mcp' AND pid <> pg_backend_pid()").fetchone()[0]
            second = await client.call_tool("get_article", {"act": KP, "article": "154"})
        return first, killed, second

    first, killed, second = anyio.run(session)
    assert killed >= 1
    assert not second.is_error, second.content
    assert second.structured_content["text"] == first.structured_content["text"]


def test_answer_errors_never_show_the_key(mcp_url, ollama, tmp_path):
    with ChatStandIn(reply="nieważne", api_key="the-right-key") as chat:
        env = server_env(mcp_url, ollama, ANSWER_BASE_URL=chat.base_url, ANSWER_API_KEY=SECRET,
                         ANSWER_MODEL="test-model", ANSWER_MIN_SIMILARITY="0")

        async def session() -> tuple:
            with open(tmp_path / "stderr", "w") as errlog:
                # The server's stderr (its log) is kept too: the key must not be there either.
                async with Client(stdio_client(stdio(env), errlog=errlog)) as client:
                    bad = await client.call_tool("answer", {"question": "Ile dni urlopu na żądanie?"})
                    good = await client.call_tool("list_acts", {})
            return bad, good

        bad, good = anyio.run(session)
    line = error_line(bad)
    assert "rejected the API key (401)" in line and SECRET not in line and SECRET[:12] not in line
    assert not good.is_error
    log = (tmp_path / "stderr").read_text()
    assert SECRET not in log and SECRET[:12] not in log


@pytest.mark.slow  # a second embedded server, initialised from scratch
def test_a_stopped_embedded_server_is_started_again_and_an_empty_database_says_to_ingest(fresh_home):
    # As Claude Desktop starts it: no DATABASE_URL, almost no environment; the local model.
    env = {"PATH": os.environ["PATH"], "PIPELINE_HOME": str(fresh_home)}

    async def session(errlog) -> dict:
        async with Client(stdio_client(stdio(env), errlog=errlog)) as client:
            before = await client.call_tool("list_acts", {})
            stopped = run_cli("db", "stop", env={"PIPELINE_HOME": str(fresh_home), "DATABASE_URL": ""})
            return {"before": before, "stopped": stopped, "after": await client.call_tool("list_acts", {}),
                    "search": await client.call_tool("search_law", {"query": "urlop wypoczynkowy"})}

    with tempfile.TemporaryFile("w+") as errlog:
        out = anyio.run(session, errlog)
        errlog.seek(0)
        log = errlog.read()
    assert not out["before"].is_error and out["before"].structured_content == {"acts": []}
    assert out["stopped"].returncode == 0 and "stopped" in out["stopped"].stdout, out["stopped"].stderr
    assert not out["after"].is_error and out["after"].structured_content == {"acts": []}, out["after"].content
    # Not "run pipeline embed": there is nothing to embed yet.
    assert "no act is stored in this database yet: run pipeline ingest" in error_line(out["search"])
    # The server says which database it serves (another environment may mean another, empty one).
    assert f"pipeline mcp: database: the embedded PostgreSQL in {fresh_home / 'pgdata'}" in log


# --- HTTP -----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"pipeline mcp --http exited: {proc.stderr.read()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("pipeline mcp --http did not listen")


def test_http_transport_with_the_answer_tool(mcp_url, ollama):
    reply = f"Pracownikowi przysługują 4 dni urlopu na żądanie w roku [{KP}, art. 167^2]."
    # The model takes 3 s: long enough to see that other calls do not wait for it.
    with ChatStandIn(reply=reply, cost=0.000123, delay=3) as chat:
        port = free_port()
        env = {**os.environ, **server_env(mcp_url, ollama, ANSWER_BASE_URL=chat.base_url, ANSWER_MODEL="test-model",
                                          ANSWER_MIN_SIMILARITY="0")}
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", "mcp", "--http", "--port", str(port)], env=env,
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_port(port, proc)

            async def session() -> dict:
                out: dict = {}
                async with Client(f"http://127.0.0.1:{port}/mcp") as client, \
                        Client(f"http://127.0.0.1:{port}/mcp") as other:
                    out["tools"] = {t.name for t in (await client.list_tools()).tools}

                    async def answer() -> None:
                        out["answer"] = await client.call_tool(
                            "answer", {"question": "Ile dni urlopu na żądanie mogę wziąć?", "acts": [KP]})

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(answer)
                        with anyio.fail_after(60):
                            while not chat.requests:  # the answer call now waits for the model
                                await anyio.sleep(0.05)
                        # Another client's call is served meanwhile, not after the model's answer.
                        out["article"] = await other.call_tool("get_article", {"act": KP, "article": "154"})
                        out["answered_first"] = "answer" in out
                    out["empty"] = await client.call_tool("answer", {"question": ""})
                    out["search"] = await client.call_tool("search_law", {"query": "urlop na żądanie", "mode": "text"})
                return out

            out = anyio.run(session)
            sent = chat.requests[0].body["messages"][1]["content"]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert out["tools"] == {"search_law", "get_article", "list_acts", "find_acts", "compare_versions", "answer",
                            "check_citations"}
    assert not out["article"].is_error and out["article"].structured_content["article"] == "154"
    assert out["answered_first"] is False
    answer = out["answer"].structured_content
    assert not out["answer"].is_error and answer["answer"] == reply and not answer["refused"]
    assert answer["citations"] == [{"citation": f"[{KP}, art. 167^2]", "act": KP, "article": "167^2", "official": True}]
    assert answer["model"] == "test-model" and answer["cost_usd"] == pytest.approx(0.000123)
    assert answer["prompt_tokens"] > 0 and answer["completion_tokens"] > 0
    assert answer["fragments"] and all(f["act"] == KP for f in answer["fragments"])
    assert all(f["citation"] in sent for f in answer["fragments"])  # the model saw what the result cites
    assert "the question is empty" in error_line(out["empty"])
    assert not out["search"].is_error and out["search"].structured_content["hits"]


# --- the command ----------------------------------------------------------------------------------


def test_mcp_command_help_and_option_errors():
    help_ = run_cli("mcp", "--help")
    assert help_.returncode == 0 and "--http" in help_.stdout
    bad = run_cli("mcp", "--port", "9000")
    assert bad.returncode == 2 and "--host and --port need --http" in bad.stderr and "Traceback" not in bad.stderr
    with socket.socket() as taken:  # a port in use: one line before anything claims to listen
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = run_cli("mcp", "--http", "--port", str(port), env={"DATABASE_URL": "postgresql://nobody@/none"})
    assert busy.returncode == 1 and f"Error: cannot listen on 127.0.0.1:{port}: " in busy.stderr, busy.stderr
    assert "streamable HTTP on" not in busy.stderr and "Traceback" not in busy.stderr


def test_an_unknown_act_in_a_search_filter_is_an_error_in_the_cli_too(mcp_url):
    # The rule lives in pipeline.retrieval.search (search_law and `pipeline search` share it): no silent zero hits.
    result = run_cli("search", "urlop", "--mode", "text", "--act", "DU/1999/123", env={"DATABASE_URL": mcp_url})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "Error: DU/1999/123 is not in the database; run: pipeline ingest --act DU/1999/123"
    base = run_cli("search", "urlop", "--mode", "text", "--act", "DU/1974/141", "--json", env={"DATABASE_URL": mcp_url})
    assert base.returncode == 0 and {h["act"] for h in json.loads(base.stdout)} == {KP}  # a base act id still works
