"""The ELI client and fetch stage, against a loopback server serving the real mirror files.

The server (tests/eli_server.py) is a stand-in only for injected faults; every body it returns
otherwise is a real API response from the shared mirror.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from eli_server import Fault, MirrorServer, start_mirror_server

from pipeline.core import __version__
from pipeline.sources.fetch import (
    ActId,
    EliClient,
    FetchError,
    InvalidActId,
    fetch_act,
    parse_act_id,
    read_archive,
)


def _client(server: MirrorServer, **kw) -> EliClient:
    # No rate limit and tiny backoff keep the retry tests fast.
    kw = {"min_interval": 0, "backoff": 0.01, "max_retries": 4, "timeout": 5.0} | kw
    return EliClient(server.url, **kw)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# -- act ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("DU/2025/277", ActId("DU", 2025, 277)),
        ("du/2025/277", ActId("DU", 2025, 277)),
        ("  MP/2024/12 ", ActId("MP", 2024, 12)),
        ("Dz.U. 2025 poz. 277", ActId("DU", 2025, 277)),
        ("Dz. U. z 2024 r. poz. 581", ActId("DU", 2024, 581)),
        ("Dz.U. 1974 nr 24 poz. 141", ActId("DU", 1974, 141)),
        ("M.P. 2023 poz. 5", ActId("MP", 2023, 5)),
    ],
)
def test_parse_act_id_accepts(text: str, expected: ActId) -> None:
    aid = parse_act_id(text)
    assert aid == expected
    assert str(aid) == aid.path == f"{expected.publisher}/{expected.year}/{expected.pos}"


@pytest.mark.parametrize(
    "text", ["DU/abc", "XX/2025/1", "../../etc", "", "   ", "DU/2025", "DU/2025/0", "DU/25/277",
             "DU/2025/277/../1", "DU/2025/277x"]
)
def test_parse_act_id_rejects(text: str) -> None:
    with pytest.raises(InvalidActId) as e:
        parse_act_id(text)
    assert isinstance(e.value, FetchError) and isinstance(e.value, ValueError)
    assert "invalid act id" in str(e.value) and "\n" not in str(e.value)


# -- fetching real files -----------------------------------------------------------------------


@pytest.mark.parametrize("act, fmt", [("DU/2025/277", "pdf"), ("DU/2024/581", "html")])
def test_fetch_archives_byte_identical(server: MirrorServer, mirror: Path, tmp_path: Path,
                                       act: str, fmt: str) -> None:
    with _client(server) as client:
        got = fetch_act(act, client=client, archive_dir=tmp_path)
    src = mirror / "acts" / act
    name = f"text.{fmt}"
    assert got.format == fmt
    assert got.text == (src / name).read_bytes()
    assert got.record.eli == act
    archived = tmp_path / "acts" / act
    assert sorted(p.name for p in archived.iterdir()) == sorted(["meta.json", name, "SHA256SUMS"])
    assert (archived / "meta.json").read_bytes() == (src / "meta.json").read_bytes()
    assert (archived / name).read_bytes() == (src / name).read_bytes()
    sums = (archived / "SHA256SUMS").read_text().splitlines()
    assert sums == [f"{_sha((src / 'meta.json').read_bytes())}  meta.json",
                    f"{_sha((src / name).read_bytes())}  {name}"]
    assert set(got.archived_paths) == {archived / "meta.json", archived / name, archived / "SHA256SUMS"}
    # PDF-only act: the client asks for no HTML when textHTML is false.
    if fmt == "pdf":
        assert server.count(f"/acts/{act}/text.html") == 0
    assert all("pipeline/" + __version__ in h["User-Agent"] for _, h in server.requests)


def test_real_pdf_size_and_hash(server: MirrorServer, mirror: Path, tmp_path: Path) -> None:
    with _client(server) as client:
        got = fetch_act("DU/2025/277", client=client, archive_dir=tmp_path)
    assert got.text.startswith(b"%PDF-") and len(got.text) == 2089207
    assert got.sha256 == _sha((mirror / "acts/DU/2025/277/text.pdf").read_bytes())


def test_empty_html_of_pdf_only_act_is_none(server: MirrorServer) -> None:
    with _client(server) as client:
        assert client.text_html("DU/2025/277") is None  # 200 with 0 bytes, as the real API
        assert client.text_pdf("DU/2024/581") is None  # 404
    assert server.count("/acts/DU/2025/277/text.html") == 1


def test_empty_html_falls_back_to_pdf(server: MirrorServer, tmp_path: Path, mirror: Path) -> None:
    # DU/2023/1465's real metadata says textHTML and textPDF; the mirror has neither file.
    with _client(server) as client:
        with pytest.raises(FetchError, match=r"^DU/2023/1465 has no text in the ELI API \(metadata only\) "
                                             r"\(its record lists text.html and text.pdf, which the API did not return\)$"):
            fetch_act("DU/2023/1465", client=client, archive_dir=tmp_path)
    assert server.count("/acts/DU/2023/1465/text.html") == 1
    assert server.count("/acts/DU/2023/1465/text.pdf") == 1
    assert _files(tmp_path) == []


def test_unknown_act_not_found(server: MirrorServer, tmp_path: Path) -> None:
    with _client(server) as client:
        with pytest.raises(FetchError, match=r"^act DU/1999/1 not found in the ELI API$"):
            fetch_act("DU/1999/1", client=client, archive_dir=tmp_path)
    assert server.count("/acts/DU/1999/1") == 1  # 404 is not retried
    assert _files(tmp_path) == []


def test_offline_reread_after_server_stopped(mirror: Path, tmp_path: Path) -> None:
    with start_mirror_server(mirror) as srv, _client(srv) as client:
        online = fetch_act("DU/2024/581", client=client, archive_dir=tmp_path)
    again = fetch_act("DU/2024/581", archive_dir=tmp_path, offline=True)
    assert (again.text, again.record.raw, again.format) == (online.text, online.record.raw, "html")
    with pytest.raises(FetchError, match="run without --offline"):
        fetch_act("DU/2025/277", archive_dir=tmp_path, offline=True)


def test_offline_detects_corruption(server: MirrorServer, tmp_path: Path) -> None:
    with _client(server) as client:
        fetch_act("DU/2024/581", client=client, archive_dir=tmp_path)
    html = tmp_path / "acts/DU/2024/581/text.html"
    html.write_bytes(html.read_bytes()[:-1])
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch_act("DU/2024/581", archive_dir=tmp_path, offline=True)


def test_source_dir_reads_mirror_without_http(mirror: Path, tmp_path: Path) -> None:
    got = fetch_act("DU/2025/277", archive_dir=tmp_path, source_dir=mirror)
    assert got.format == "pdf"
    assert got.text == (mirror / "acts/DU/2025/277/text.pdf").read_bytes()
    assert got.record.display_address == "Dz.U. 2025 poz. 277"
    assert got.archived_paths[0] == mirror / "acts/DU/2025/277/meta.json"
    assert _files(tmp_path) == []  # nothing copied
    html = read_archive(mirror, "DU/2019/914")
    assert html.format == "html" and html.text.startswith(b"<")
    with pytest.raises(FetchError, match="metadata only"):
        fetch_act("DU/2023/1465", source_dir=mirror)
    with pytest.raises(FetchError, match="is not in"):
        fetch_act("DU/1999/1", source_dir=mirror)


# -- reliability (injected faults) --------------------------------------------------------------

META = "/acts/DU/2025/277"


def test_retry_503_then_ok(server: MirrorServer, mirror: Path) -> None:
    server.inject(META, [Fault.status(503), Fault.status(503)])
    with _client(server) as client:
        record = client.record("DU/2025/277")
    assert record.eli == "DU/2025/277"
    assert server.count(META) == 3


def test_429_retry_after_honoured(server: MirrorServer) -> None:
    server.inject(META, [Fault.status(429, retry_after=1)])
    with _client(server) as client:
        t0 = time.monotonic()
        client.record("DU/2025/277")
        elapsed = time.monotonic() - t0
    assert server.count(META) == 2
    assert elapsed >= 1.0  # backoff alone would be ~0.01 s


def test_permanent_503_gives_up(server: MirrorServer) -> None:
    server.inject(META, [Fault.status(503)] * 10)
    with _client(server, max_retries=3) as client, pytest.raises(FetchError) as e:
        client.record("DU/2025/277")
    assert server.count(META) == 4
    msg = str(e.value)
    assert "failed after 4 attempts: HTTP 503" in msg and "\n" not in msg


def test_an_api_that_stops_answering_is_given_up_on_for_the_rest_of_the_run(server: MirrorServer) -> None:
    """Two requests in a row that used up their retries: later ones fail at once, not after ~12 s each."""
    other = "/acts/DU/2024/581"
    server.inject(META, [Fault.status(503)] * 10)
    server.inject(other, [Fault.status(503)] * 10)
    with _client(server, max_retries=1) as client:
        assert client.record("DU/2026/548").eli == "DU/2026/548"  # answered: nothing counts yet
        for act in ("DU/2025/277", "DU/2024/581"):
            with pytest.raises(FetchError, match="failed after 2 attempts: HTTP 503"):
                client.record(act)
        with pytest.raises(FetchError) as given_up:
            client.record("DU/2026/548")
    assert "not tried: the ELI API failed the 2 requests before it (HTTP 503); try again later" in str(given_up.value)
    assert server.count("/acts/DU/2026/548") == 1  # the last call sent nothing
    with _client(server, max_retries=1) as fresh:  # the next run tries again
        assert fresh.record("DU/2026/548").eli == "DU/2026/548"


def test_truncated_body_retried_then_ok(server: MirrorServer, mirror: Path) -> None:
    pdf = f"{META}/text.pdf"
    server.inject(pdf, [Fault.truncated()])
    with _client(server) as client:
        assert client.text_pdf("DU/2025/277") == (mirror / "acts/DU/2025/277/text.pdf").read_bytes()
    assert server.count(pdf) == 2


def test_truncated_body_always_fails(server: MirrorServer) -> None:
    pdf = f"{META}/text.pdf"
    server.inject(pdf, [Fault.truncated()] * 10)
    with _client(server, max_retries=2) as client:
        with pytest.raises(FetchError, match="failed after 3 attempts"):
            client.text_pdf("DU/2025/277")
    assert server.count(pdf) == 3


def test_invalid_json(server: MirrorServer, tmp_path: Path) -> None:
    server.inject(META, [Fault.invalid_json()])
    with _client(server) as client:
        with pytest.raises(FetchError, match="not valid JSON"):
            fetch_act("DU/2025/277", client=client, archive_dir=tmp_path)
    assert _files(tmp_path) == []


def test_slow_response_retried(server: MirrorServer) -> None:
    server.inject(META, [Fault.slow(1.5)])
    with _client(server, timeout=0.3) as client:
        t0 = time.monotonic()
        assert client.record("DU/2025/277").raw["pos"] == 277
        elapsed = time.monotonic() - t0
    assert server.count(META) == 2
    assert elapsed < 1.5  # gave up on the slow answer instead of waiting for it


def test_rate_limit_spaces_requests(server: MirrorServer) -> None:
    with _client(server, min_interval=0.2) as client:
        t0 = time.monotonic()
        for _ in range(3):
            client.record("DU/2024/581")
        assert time.monotonic() - t0 >= 0.4


def test_failed_text_leaves_archive_untouched(server: MirrorServer, mirror: Path, tmp_path: Path) -> None:
    with _client(server, max_retries=1) as client:
        first = fetch_act("DU/2025/277", client=client, archive_dir=tmp_path)
        before = {p: p.read_bytes() for p in first.archived_paths}
        server.inject(f"{META}/text.pdf", [Fault.status(503), Fault.truncated()])
        with pytest.raises(FetchError):
            fetch_act("DU/2025/277", client=client, archive_dir=tmp_path)
        # and a fresh archive stays empty when the first download fails
        server.inject(f"{META}/text.pdf", [Fault.truncated(), Fault.truncated()])
        with pytest.raises(FetchError):
            fetch_act("DU/2025/277", client=client, archive_dir=tmp_path / "fresh")
    assert {p: p.read_bytes() for p in first.archived_paths} == before
    assert _files(tmp_path) == ["acts/DU/2025/277/SHA256SUMS", "acts/DU/2025/277/meta.json",
                                "acts/DU/2025/277/text.pdf"]
    reread = fetch_act("DU/2025/277", archive_dir=tmp_path, offline=True)
    assert reread.text == before[first.archived_paths[1]]
