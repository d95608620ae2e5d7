"""Ingest throughput on the real mirror: parse + chunk + store, against a plain pypdf baseline.

    python -m bench.ingest                    # every PDF and HTML text of the ELI mirror (~2-4 min)
    python -m bench.ingest --acts 3 --json    # the first 3 PDFs only, machine-readable

Pipeline: ``parse_pdf`` / ``parse_html`` (articles, superscripts, headings, page furniture removed),
then what ``ingest_document`` does, timed per stage: ``store_version`` (chunking, one transaction of
COPYs, tsvector of every chunk, and the BM25 statistics and postings its triggers keep).
Baseline: ``pypdf`` ``extract_text()`` of every page and a ``^Art. N`` regex split, on the same
PDFs in the same run. It is what a naive ingest does, and it is wrong in ways the pipeline is not
(superscripts read as digits, running headers in the text); it is here for the speed ratio.

The database is a fresh ``pipeline_bench`` database, dropped afterwards (``--keep`` keeps it), on
the server of DATABASE_URL, else on an embedded server in $PIPELINE_HOME (default
pipeline-bench in the system's temporary folder, not your own data).
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import common

BENCH_DB = "pipeline_bench"
_ART = re.compile(r"(?m)^Art\.\s*\d+")


@dataclass
class Row:
    act: str
    format: str
    pages: int
    articles: int
    chunks: int
    parse_s: float
    store_s: float
    baseline_s: float = 0.0
    baseline_articles: int = 0


def texts(mirror: Path, fmt: str) -> list[tuple[str, Path]]:
    found = []
    for path in (mirror / "acts").glob(f"*/*/*/text.{fmt}"):
        if path.stat().st_size:
            pub, year, pos = path.parent.parts[-3:]
            found.append((f"{pub}/{year}/{pos}", path))
    return sorted(found, key=lambda t: (int(t[0].split("/")[1]), int(t[0].split("/")[2])))


def bench_database(keep: bool) -> tuple[str, Callable[[], None]]:
    """A fresh migrated database; returns its URL and a function that drops it."""
    server = common.server_url(common.tmp_path("pipeline-bench"))
    url = common.scratch_database(server, BENCH_DB)

    def drop() -> None:
        if not keep:
            common.drop_database(server, BENCH_DB)

    return url, drop


def baseline(data: bytes) -> tuple[int, int]:
    """pypdf text of every page, split at lines starting "Art. N": (pages, articles)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    text = "\n".join(page.extract_text() or "" for page in reader.pages)
    return len(reader.pages), len(_ART.findall(text))


def run(args) -> dict:
    from pipeline.storage import db, store
    from pipeline.sources.fetch import read_archive
    from pipeline.indexing.ingest import parse_text

    os.environ["PIPELINE_PARSE_CACHE"] = "off"  # time the parser, not the parse cache

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    mirror = args.mirror
    if not (mirror / "acts").is_dir():
        sys.exit(f"no ELI mirror at {mirror} (set PIPELINE_SHARED)")
    pdfs = texts(mirror, "pdf")[: args.acts]
    htmls = [] if args.no_html else texts(mirror, "html")[: args.acts]
    url, drop = bench_database(args.keep)
    rows: list[Row] = []
    try:
        with db.connect(url) as conn:
            for act, _ in pdfs + htmls:
                fetched = read_archive(mirror, act)
                t0 = time.perf_counter()
                parsed = parse_text(fetched.text, fetched.format)
                t1 = time.perf_counter()
                stored = store.store_version(conn, fetched.meta, parsed, model=None, max_chars=1200, overlap=200,
                                             source_sha256=hashlib.sha256(fetched.text).hexdigest())
                t2 = time.perf_counter()
                row = Row(act, fetched.format, parsed.pages, stored.articles, stored.chunks, t1 - t0, t2 - t1)
                if fetched.format == "pdf" and not args.no_baseline:
                    t4 = time.perf_counter()
                    _, row.baseline_articles = baseline(fetched.text)
                    row.baseline_s = time.perf_counter() - t4
                rows.append(row)
                if not args.json:
                    print(f"  {act:<13} {row.format:<4} {row.pages:>4} p {row.articles:>5} art {row.chunks:>5} ch  "
                          f"parse {row.parse_s:6.2f}s  store {row.store_s:5.2f}s"
                          + (f"  baseline {row.baseline_s:5.2f}s ({row.baseline_articles} 'Art.')" if row.baseline_s else ""),
                          file=sys.stderr, flush=True)
    finally:
        drop()
    return summarize(rows)


def summarize(rows: list[Row]) -> dict:
    pdf = [r for r in rows if r.format == "pdf"]
    html = [r for r in rows if r.format == "html"]
    pdf_s = sum(r.parse_s + r.store_s for r in pdf)
    html_s = sum(r.parse_s + r.store_s for r in html)
    base_s = sum(r.baseline_s for r in pdf)
    pages = sum(r.pages for r in pdf)

    def rate(n: float, s: float) -> float | None:
        return round(n / s, 2) if s else None

    return {
        "machine": {"cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
                    "load_1min": round(os.getloadavg()[0], 2), "platform": platform.platform(),
                    "python": platform.python_version()},
        "pdf": {"documents": len(pdf), "pages": pages, "articles": sum(r.articles for r in pdf),
                "chunks": sum(r.chunks for r in pdf), "seconds": round(pdf_s, 2),
                "parse_seconds": round(sum(r.parse_s for r in pdf), 2),
                "store_seconds": round(sum(r.store_s for r in pdf), 2),
                "pages_per_s": rate(pages, pdf_s), "chunks_per_s": rate(sum(r.chunks for r in pdf), pdf_s)},
        "html": {"documents": len(html), "articles": sum(r.articles for r in html),
                 "chunks": sum(r.chunks for r in html), "seconds": round(html_s, 2),
                 "parse_seconds": round(sum(r.parse_s for r in html), 2),
                 "store_seconds": round(sum(r.store_s for r in html), 2),
                 "docs_per_s": rate(len(html), html_s), "chunks_per_s": rate(sum(r.chunks for r in html), html_s)},
        "baseline_pdf": {"seconds": round(base_s, 2), "pages_per_s": rate(pages, base_s),
                         "art_lines": sum(r.baseline_articles for r in pdf)} if base_s else None,
        "pipeline_vs_baseline_time": round(pdf_s / base_s, 2) if base_s else None,
        "acts": [asdict(r) for r in rows],
    }


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--mirror", type=Path, default=common.eli_dir(), help="ELI mirror root (has acts/) [default: $PIPELINE_SHARED/eli]")
    ap.add_argument("--acts", type=int, default=None, help="Only the first N PDFs (and N HTMLs).")
    ap.add_argument("--no-html", action="store_true", help="PDFs only.")
    ap.add_argument("--no-baseline", action="store_true", help="Skip the pypdf baseline.")
    ap.add_argument("--keep", action="store_true", help=f"Keep the {BENCH_DB} database afterwards.")
    ap.add_argument("--json", action="store_true", help="Print the summary as JSON.")
    args = ap.parse_args()
    summary = run(args)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    m, p, h, b = summary["machine"], summary["pdf"], summary["html"], summary["baseline_pdf"]
    print(f"machine: {m['cpus']} CPUs ({m['usable_cpus']} usable), load {m['load_1min']}, {m['platform']}, "
          f"Python {m['python']}")
    print(f"pipeline PDF:  {p['documents']} docs, {p['pages']} pages, {p['articles']} articles, {p['chunks']} chunks "
          f"in {p['seconds']} s (parse {p['parse_seconds']}, chunk+store {p['store_seconds']}): "
          f"{p['pages_per_s']} pages/s, {p['chunks_per_s']} chunks/s")
    if h["documents"]:
        print(f"pipeline HTML: {h['documents']} docs, {h['articles']} articles, {h['chunks']} chunks in {h['seconds']} s "
              f"(parse {h['parse_seconds']}, chunk+store {h['store_seconds']}): "
              f"{h['docs_per_s']} docs/s, {h['chunks_per_s']} chunks/s")
    if b:
        print(f"baseline PDF (pypdf extract_text + 'Art. N' regex): {b['seconds']} s, {b['pages_per_s']} pages/s, "
              f"{b['art_lines']} 'Art.' lines")
        print(f"pipeline / baseline time on the same PDFs: {summary['pipeline_vs_baseline_time']}x")


if __name__ == "__main__":
    main()
