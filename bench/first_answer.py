"""The README's first command from a fresh clone, as a newcomer runs it: install, first answer, embedding done.

    python -m bench.first_answer [--code DIR] [--no-full] [--skip-install] [--keep]

Clones ``--code`` (default: this checkout's HEAD; an older checkout for the "before" figure) into a
temporary folder, installs it in a new virtual environment (``pip install -e .``, timed), then runs the
README's first command in an empty PIPELINE_HOME: `pipeline ingest --source ../shared/eli --act
DU/2025/277 && pipeline ask "Pracuję już 12 lat. Ile dni urlopu mi przysługuje?"`, timed from the end
of the install to the answer. With the background worker (issue 50) the embedding goes on after it:
the script polls `pipeline status --json` until the worker is gone and the queue is empty (timed),
then asks again. It prints the three times and the first line of each answer (the first cited
sentence). ``--no-full`` stops the worker after the first answer (a shared machine: the full
embedding is ~11 min of both cores); ``--skip-install`` uses this checkout's .venv instead of a clone.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import common

QUESTION = "Pracuję już 12 lat. Ile dni urlopu mi przysługuje?"
ACT = "DU/2025/277"
REPO = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], env: dict, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - t0, done


def _first_cited(answer: str) -> str:
    """The answer's first bullet (the offline answer's best cited sentence), else its first line."""
    lines = [ln.strip() for ln in answer.splitlines() if ln.strip()]
    bullets = [ln for ln in lines if ln.startswith("- ")]
    return (bullets or lines or ["(no answer)"])[0][:160]


def _worker_pid(home: Path) -> int | None:
    log = home / "logs" / "embed.log"
    if not log.exists():
        return None
    found = re.findall(r"\[(\d+)\]", log.read_text(encoding="utf-8", errors="replace"))
    return int(found[-1]) if found else None


def _status(pipeline: Path, env: dict, cwd: Path) -> dict:
    done = subprocess.run([str(pipeline), "status", "--json"], env=env, cwd=cwd, capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def main() -> int:
    ap = common.parser(__doc__, epilog=True)
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout to clone [default: this one]")
    ap.add_argument("--no-full", action="store_true", help="stop the embedding after the first answer")
    ap.add_argument("--skip-install", action="store_true", help="use this checkout's .venv, no clone")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    print(common.machine_line(load=True))

    work = Path(tempfile.mkdtemp(prefix="pl-first-answer-"))
    home = work / "home"
    # shared/ beside the clone, as beside a checkout: the README's command reads ../shared/eli
    (work / "shared").symlink_to(common.shared_dir())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EMBED_", "ANSWER_", "DATABASE_", "PIPELINE_", "OPENROUTER_"))}
    env["PIPELINE_HOME"] = str(home)
    try:
        if args.skip_install:
            clone, install = REPO, None
        else:
            clone = work / "pipeline"
            subprocess.run(["git", "clone", "--quiet", str(args.code), str(clone)], check=True)
            install, done = _run(["bash", "-c", "python3 -m venv .venv && .venv/bin/pip install -q -e ."], env, clone)
            if done.returncode != 0:
                print(f"install failed: {done.stderr.strip()[-500:]}")
                return 1
        pipeline = clone / ".venv" / "bin" / "pipeline"
        first, done = _run(["bash", "-c", f'"{pipeline}" ingest --source ../shared/eli --act {ACT} '
                                          f'&& "{pipeline}" ask "{QUESTION}"'], env, clone)
        if done.returncode != 0:
            print(f"the README's first command failed: {done.stderr.strip()[-500:]}")
            return 1
        print(f"install:          {'-' if install is None else f'{install:.0f} s'}")
        print(f"first answer:     {first:.0f} s after the install (ingest and ask)")
        print(f"  {_first_cited(done.stdout)}")
        t0 = time.perf_counter()
        if args.no_full:
            if (pid := _worker_pid(home)) is not None:
                os.kill(pid, signal.SIGTERM)
            print("embedding done:   not measured (--no-full)")
            return 0
        while True:
            status = _status(pipeline, env, clone)
            worker = status.get("embedding_worker")
            queued = sum(m["queued"] for m in status.get("embeddings", []))
            if worker is None and not queued:
                break
            if worker is None:  # queued texts and no worker: it stopped (see its log)
                print(f"the worker stopped with {queued} texts queued: {home / 'logs' / 'embed.log'}")
                return 1
            time.sleep(5)
        embedded = first + time.perf_counter() - t0
        print(f"embedding done:   {embedded:.0f} s after the install")
        later, again = _run([str(pipeline), "ask", QUESTION], env, clone)
        print(f"answer then:      {later:.1f} s\n  {_first_cited(again.stdout)}")
        return 0
    finally:
        subprocess.run([str(REPO / ".venv" / "bin" / "pipeline"), "db", "stop"], env=env, capture_output=True)
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
