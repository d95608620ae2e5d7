"""The worst a hostile input costs, face by face (issue 49): a generator of hostile inputs (ranges, repeated
citations, long questions, deep lists of units, Unicode oddities, odd article numbers) thrown at every face for a
fixed time, and the CPU each request took.

    python -m bench.hostile [--seconds 60] [--seed 1] [--keep]

Faces, each in this process so that its CPU is this process' (time.process_time: every thread): the CLI's
(pipeline.Service, what `pipeline check/search/show` call), the web page (the ASGI app over httpx, the page's
checks and rendering included) and MCP (the SDK's client over the server in memory: its schemas, its
threads). Each face's three requests: check a text, search a question (text mode: no embedding model is
loaded, the cost of the question itself is what is measured), show an article. For each face and request:
how many were made, the worst CPU seconds with the input that cost it, and the 95th percentile. The database
is bench.hostile_check's (the Labour Code, no vectors); `--keep` reuses it.
"""
from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable

from bench.hostile_check import bench_database

_CODES = ("k.p.", "k.c.", "k.k.", "Kodeksu pracy", "ustawy z dnia 26 czerwca 1974 r. – Kodeks pracy", "KP")
_ODD = ("\u200b", "\u202e", "\u0301", "\ufeff", "¹", "²", "\u00a0", "ｆ", "𝟙", "\u2028")
_WORDS = ("urlop", "wypoczynkowy", "pracownik", "pracodawca", "wynagrodzenie", "umowa", "rozwiązanie",
          "wypowiedzenie", "okres", "staż", "dni", "godzin", "nadliczbowych", "świadectwo", "pracy")


def hostile_text(rng: random.Random) -> tuple[str, str]:
    """(family, text) of one hostile text for a check."""
    family = rng.choice(("range", "repeated", "deep list", "unicode", "long letter"))
    if family == "range":
        text = f"art. {rng.randint(1, 9)}–{rng.choice((10**3, 10**5, 10**8, 10**12))} {rng.choice(_CODES)}"
    elif family == "repeated":
        text = (f"art. {rng.randint(1, 400)} " * 20000)[:rng.choice((10_000, 50_000, 100_000))]
    elif family == "deep list":
        text = "art. 5 pkt 1–50" + ", 1–50" * rng.choice((100, 1000, 5000)) + f" {rng.choice(_CODES)}"
    elif family == "unicode":
        text = "".join(rng.choice(_ODD) + f"art. {rng.randint(1, 300)}{rng.choice(_ODD)} k.p. " for _ in range(2000))
    else:
        text = " ".join(f"Zgodnie z art. {rng.randint(1, 300)} § {rng.randint(1, 5)} pkt {rng.randint(1, 9)} "
                        f"{rng.choice(_CODES)} oraz art. {rng.randint(1, 50)}–{rng.randint(51, 400)} tej ustawy."
                        for _ in range(400))
    return family, text[:100_000]


def hostile_question(rng: random.Random) -> tuple[str, str]:
    family = rng.choice(("long", "unicode", "one word", "operators"))
    if family == "long":
        text = " ".join(rng.choice(_WORDS) for _ in range(2000))[:5000]
    elif family == "unicode":
        text = "".join(rng.choice(_ODD) + rng.choice(_WORDS) for _ in range(600))[:5000]
    elif family == "one word":
        text = rng.choice(_WORDS) * rng.choice((1, 100, 300))
    else:
        text = " ".join(rng.choice(("&", "|", "!", "<->", ":*", "(", ")", "'", "\\")) + rng.choice(_WORDS)
                        for _ in range(800))[:5000]
    return family, text


def hostile_article(rng: random.Random) -> tuple[str, str]:
    family = rng.choice(("long number", "superscript", "unicode", "plain"))
    if family == "long number":
        return family, "9" * rng.choice((10, 100, 1000))
    if family == "superscript":
        return family, f"{rng.randint(1, 300)}^{rng.randint(1, 20)}{rng.choice(('', 'a', 'zz'))}"
    if family == "unicode":
        return family, f"{rng.randint(1, 300)}{rng.choice(_ODD)}"
    return family, str(rng.randint(1, 300))


def _cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    try:
        call()
    except Exception:  # a refusal is an answer too: its cost is what is measured
        pass
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    import httpx

    from bench import common
    from pipeline import Service
    from pipeline.interfaces.mcp_server import build_server
    from pipeline.interfaces.web.app import build_app

    ap = common.parser(__doc__)
    ap.add_argument("--seconds", type=float, default=60.0, help="time given to each face's each request")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    url = bench_database(args.keep)
    rng = random.Random(args.seed)
    law = Service(url, pool_size=2, warm=False)
    act = "DU/2025/277"

    def service_face(kind: str, value: str) -> Callable[[], object]:
        return {"check": lambda: law.check(value), "search": lambda: law.search(value, mode="text"),
                "show": lambda: law.show(act, value)}[kind]

    app = build_app(law, warm=False)

    async def page(kind: str, value: str) -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            if kind == "check":
                await client.post("/check", data={"text": value})
            elif kind == "search":
                await client.get("/search", params={"q": value, "mode": "text"})
            else:
                await client.get(f"/acts/{act}/art/{value}")

    def page_face(kind: str, value: str) -> Callable[[], object]:
        return lambda: asyncio.run(page(kind, value))

    server = build_server(law)

    async def mcp(kind: str, value: str) -> None:
        from mcp.client import Client

        async with Client(server) as client:
            if kind == "check":
                await client.call_tool("check_citations", {"text": value})
            elif kind == "search":
                await client.call_tool("search_law", {"query": value, "mode": "text"})
            else:
                await client.call_tool("get_article", {"act": act, "article": value})

    def mcp_face(kind: str, value: str) -> Callable[[], object]:
        return lambda: asyncio.run(mcp(kind, value))

    inputs = {"check": hostile_text, "search": hostile_question, "show": hostile_article}
    print(f"{'face':<5} {'request':<7} {'n':>4} {'p95 CPU s':>10} {'worst CPU s':>12}  worst input")
    for face, make in (("cli", service_face), ("page", page_face), ("mcp", mcp_face)):
        for kind, generate in inputs.items():
            costs: list[tuple[float, str]] = []
            until = time.monotonic() + args.seconds
            while time.monotonic() < until:
                family, value = generate(rng)
                costs.append((_cpu(make(kind, value)), f"{family}, {len(value)} characters"))
            cpu = sorted(c for c, _ in costs)
            worst = max(costs)
            p95 = statistics.quantiles(cpu, n=20)[-1] if len(cpu) >= 2 else cpu[0]
            print(f"{face:<5} {kind:<7} {len(costs):>4} {p95:>10.3f} {worst[0]:>12.3f}  {worst[1]}", flush=True)
    law.close()


if __name__ == "__main__":
    main()
