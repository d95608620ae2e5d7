"""Ingest on the real mirror: the HTTP path, versions, base acts, local files, `show`, all or nothing.

(The whole mirror, ingested twice, is test_ingest_mirror.py.) Ingests here store no embeddings
(``--no-embed`` / ``model=None``) except where the embedding queue is the point.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from support.corpus import ingestion, store_text
from support.cli import run_cli
from support.database import EMBEDDED_UNITS
from support.paths import ELI_MIRROR, REPO, require_mirror
from eli_server import start_mirror_server

from pipeline.storage import store
from pipeline.sources.parse.model import Article, ParsedAct
from pipeline.core.numbering import check_sequence

METADATA_ONLY = ("DU/2023/1465", "DU/2024/1061")
KODEKS_PRACY = "DU/2025/277"
PATIENT_RIGHTS = "DU/2024/581"


def ingest_act(conn, url: str, act: str, *, model: str | None, archive_dir: Path, source_dir: Path):
    """One act ingested by id from a mirror folder, as `pipeline ingest --source` does it."""
    with ingestion(conn, url, model=model, archive_dir=archive_dir) as run:
        return run.act(act, source_dir=source_dir)


def _db(url: str):
    from pipeline.storage import db

    return db.connect(url)


def test_an_act_named_with_act_that_has_no_text_fails_in_one_line(scratch_url: str) -> None:
    act = METADATA_ONLY[0]
    done = run_cli("ingest", "--source", str(ELI_MIRROR), "--act", act, "--no-embed", env={"DATABASE_URL": scratch_url})
    assert done.returncode == 1
    assert f"  failed: {act} has no text in {ELI_MIRROR} (metadata only)" in done.stderr.splitlines()
    assert "Traceback" not in done.stderr


# --- 2. Kodeks pracy through the real HTTP client ------------------------------------------------

def test_kodeks_pracy_over_http_is_archived_and_reingests_offline(scratch_url: str, tmp_path: Path) -> None:
    mirror = require_mirror()
    archive = tmp_path / "dane"
    args = ["ingest", "--act", KODEKS_PRACY, "--no-embed", "--json", "--archive", str(archive)]
    with start_mirror_server(mirror) as server:
        online = run_cli(*args, env={"DATABASE_URL": scratch_url, "ELI_API_URL": server.url})
        requested = [path for path, _ in server.requests]
    assert online.returncode == 0, online.stderr
    (result,) = json.loads(online.stdout)["acts"]
    assert (result["status"], result["version"], result["source_format"], result["pages"]) == ("new", 1, "pdf", 97)
    # textHTML is false in its metadata: the client asks for the PDF only; then the records of the five
    # acts its record lists as amending it after the text (none in the mirror: warnings, not failures)
    assert requested == [f"/acts/{KODEKS_PRACY}", f"/acts/{KODEKS_PRACY}/text.pdf"] + [
        f"/acts/{a}" for a in ("DU/2025/807", "DU/2025/1423", "DU/2025/1661", "DU/2026/25", "DU/2026/473")]

    # raw responses archived byte for byte in the mirror layout, with sums
    act_dir = archive / "acts" / KODEKS_PRACY
    src = mirror / "acts" / KODEKS_PRACY
    assert sorted(p.name for p in act_dir.iterdir()) == ["SHA256SUMS", "meta.json", "text.pdf"]
    for name in ("meta.json", "text.pdf"):
        assert (act_dir / name).read_bytes() == (src / name).read_bytes()
    sums = (act_dir / "SHA256SUMS").read_text().splitlines()
    assert sorted(sums) == sorted(
        f"{hashlib.sha256((src / n).read_bytes()).hexdigest()}  {n}" for n in ("meta.json", "text.pdf"))

    with _db(scratch_url) as c:
        numbers = [n for (n,) in c.execute(  # a second wording (revision 0010) is the same article again
            "SELECT article FROM current_articles WHERE eli = %s AND wording <> 2 ORDER BY ordinal",
            (KODEKS_PRACY,)).fetchall()]
        rows = c.execute("SELECT count(*) FROM current_articles WHERE eli = %s", (KODEKS_PRACY,)).fetchone()[0]
        art = dict(c.execute("SELECT article, text FROM current_articles WHERE eli = %s AND article IN "
                             "('22^1', '221', '154')", (KODEKS_PRACY,)).fetchall())
        chunk_texts = [t for (t,) in c.execute("SELECT text FROM current_chunks WHERE eli = %s", (KODEKS_PRACY,))]
        base = c.execute("SELECT base_eli FROM acts WHERE eli = %s", (KODEKS_PRACY,)).fetchone()[0]
    assert base == "DU/1974/141"
    assert rows == result["articles"] == len(numbers) + 4 and check_sequence(numbers) == []  # 4 second wordings
    assert {"22^1", "94^3", "151^1", "151^8", "167^2"} <= set(numbers)
    # superscripts read as digits would give 943, 1511, 1518, 1672...: Kodeks pracy ends at art. 305
    assert max(int(re.match(r"\d+", n).group()) for n in numbers) < 310
    # art. 221 is real (dangerous substances), not art. 22^1 (personal data of candidates) misread
    assert numbers.count("221") == numbers.count("22^1") == 1
    assert art["22^1"].startswith("Art. 22^1. § 1. Pracodawca żąda od osoby ubiegającej się o zatrudnienie")
    assert art["221"].startswith("Art. 221. § 1. Niedopuszczalne jest stosowanie substancji chemicznych")
    assert "2) 26 dni – jeżeli pracownik jest zatrudniony co najmniej 10 lat." in art["154"]
    assert len(chunk_texts) == result["chunks"]
    assert not [t for t in chunk_texts if "Dziennik Ustaw" in t or re.search(r"Poz\.\s*277\b", t)]

    # the server is gone: --offline reads the archive only, and the text is the same
    offline = run_cli(*args, "--offline", env={"DATABASE_URL": scratch_url, "ELI_API_URL": server.url})
    assert offline.returncode == 0, offline.stderr
    (again,) = json.loads(offline.stdout)["acts"]
    assert (again["status"], again["version"], again["articles"]) == ("unchanged", 1, result["articles"])
    # --offline --all: every act the archive holds
    every = run_cli("ingest", "--offline", "--all", "--no-embed", "--json", "--archive", str(archive),
                    env={"DATABASE_URL": scratch_url, "ELI_API_URL": server.url})
    assert every.returncode == 0, every.stderr
    assert [(r["act"], r["status"]) for r in json.loads(every.stdout)["acts"]] == [(KODEKS_PRACY, "unchanged")]
    with _db(scratch_url) as c:
        assert c.execute("SELECT count(*) FROM act_versions").fetchone()[0] == 1


def test_the_mirror_server_runs_on_its_own_for_trying_sync_by_hand(scratch_url: str, tmp_path: Path) -> None:
    """README: `python tests/eli_server.py ../shared/eli` prints ELI_API_URL=…; the CLI fetches through it."""
    mirror = require_mirror()
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "eli_server.py"), str(mirror)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("ELI_API_URL=http://127.0.0.1:"), (first, proc.stderr.read() if proc.poll() else "")
        env = {"DATABASE_URL": scratch_url, "ELI_API_URL": first.split("=", 1)[1]}
        done = run_cli("ingest", "--act", "DU/2024/1513", "--no-embed", "--json", "--archive", str(tmp_path), env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["acts"][0]["status"] == "new"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


# --- 5. versions of one act ------------------------------------------------------------------------

def _edited_copy(root: Path, act: str, old: str, new: str) -> Path:
    """A mirror-layout copy of ``act`` in ``root`` whose HTML has ``old`` replaced by ``new``."""
    src = require_mirror() / "acts" / act
    dst = root / "acts" / act
    dst.mkdir(parents=True)
    shutil.copy(src / "meta.json", dst / "meta.json")
    html = (src / "text.html").read_bytes()
    assert html.count(old.encode()) == 1
    (dst / "text.html").write_bytes(html.replace(old.encode(), new.encode()))
    return root


def test_a_changed_article_makes_a_new_version_and_queues_only_its_chunks(conn, scratch_url: str, tmp_path: Path) -> None:
    mirror = require_mirror()
    archive = tmp_path / "dane"
    v1 = ingest_act(conn, scratch_url, PATIENT_RIGHTS, model="test-model", archive_dir=archive, source_dir=mirror)
    assert (v1.status, v1.version, v1.articles, v1.changes) == ("new", 1, 98, {})
    v1_hashes = {h for (h,) in conn.execute(f"SELECT content_sha256 FROM {EMBEDDED_UNITS} u").fetchall()}
    assert v1.queued == len(v1_hashes) == conn.execute("SELECT count(*) FROM embedding_queue").fetchone()[0]
    # Version 1 counts as embedded: vectors exist for its texts and the queue is drained.
    conn.execute("INSERT INTO embedding_models (model, dimensions, backend) VALUES ('test-model', 3, 'stand-in')")
    conn.execute("INSERT INTO embeddings (content_sha256, model, embedding) "
                 "SELECT h, 'test-model', '[1,0,0]' FROM unnest(%s::text[]) h", (sorted(v1_hashes),))
    conn.execute("DELETE FROM embedding_queue")
    conn.commit()

    old, new = "odmówić obecności osoby bliskiej", "odmówić obecności każdej osoby bliskiej"
    edited = _edited_copy(tmp_path / "edited", PATIENT_RIGHTS, old, new)
    v2 = ingest_act(conn, scratch_url, PATIENT_RIGHTS, model="test-model", archive_dir=archive, source_dir=edited)
    assert (v2.status, v2.version, v2.articles) == ("new", 2, 98)
    assert v2.changes == {"added": [], "changed": ["21"], "removed": []}
    assert not list(archive.rglob("*"))  # --source reads in place, archives nothing

    changed_hashes = {h for (h,) in conn.execute(
        f"SELECT u.content_sha256 FROM {EMBEDDED_UNITS} u JOIN act_versions v USING (version_id) "
        "WHERE v.version_no = 2 AND u.article = '21'").fetchall()} - v1_hashes  # pieces whose wording stayed are not new
    queued = {h for (h,) in conn.execute("SELECT content_sha256 FROM embedding_queue").fetchall()}
    assert queued == changed_hashes and v2.queued == len(changed_hashes) >= 1

    rows = conn.execute("SELECT version_no, valid_from, changes FROM act_versions ORDER BY version_no").fetchall()
    assert [(n, d) for n, d, _ in rows] == [(1, dt.date(2024, 4, 16)), (2, dt.date(2024, 4, 16))]
    assert rows[1][2] == v2.changes
    current = conn.execute("SELECT version_no, text FROM current_articles WHERE eli = %s AND article = '21'",
                           (PATIENT_RIGHTS,)).fetchall()
    assert len(current) == 1 and current[0][0] == 2 and new in current[0][1]
    assert conn.execute("SELECT count(*) FROM current_articles").fetchone()[0] == 98
    conn.rollback()

    # the same file again: no version 3
    again = ingest_act(conn, scratch_url, PATIENT_RIGHTS, model=None, archive_dir=archive, source_dir=edited)
    assert (again.status, again.version) == ("unchanged", 2)

    env = {"DATABASE_URL": scratch_url}
    shown_v1 = run_cli("show", PATIENT_RIGHTS, "21", "--version", "1", env=env)
    assert shown_v1.returncode == 0, shown_v1.stderr
    assert shown_v1.stdout.startswith(f"{PATIENT_RIGHTS} art. 21 (version 1, text as of 2024-04-16)")
    assert old in shown_v1.stdout and new not in shown_v1.stdout
    # two versions valid from the same day: the later ingest is the text in force
    for extra in ((), ("--as-of", "2024-04-16"), ("--as-of", "2030-01-01")):
        shown = run_cli("show", PATIENT_RIGHTS, "21", *extra, env=env)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"{PATIENT_RIGHTS} art. 21 (version 2, text as of 2024-04-16)")
        assert new in shown.stdout
    # before the texts' date: the earliest text answers, as far as its dates speak (issue 47)
    before = run_cli("show", PATIENT_RIGHTS, "21", "--as-of", "2024-04-15", env=env)
    assert before.returncode == 0, before.stderr
    assert before.stdout.startswith(f"{PATIENT_RIGHTS} art. 21 (version 2, text as of 2024-04-16)")
    missing = run_cli("show", PATIENT_RIGHTS, "21", "--version", "3", env=env)
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"Error: {PATIENT_RIGHTS} has no stored version 3; stored: {PATIENT_RIGHTS} versions 1-2 "
        "(each ELI id numbers its own versions)"]


# --- 6. consolidated texts of one base act ---------------------------------------------------------

def test_consolidated_texts_of_one_base_act_are_picked_by_date(conn, scratch_url: str, tmp_path: Path) -> None:
    mirror = require_mirror()
    # The real metadata of two consolidated Labour Codes: 2025 (legal status 2025-02-07) and 2023
    # (2023-06-13, no text in the mirror). Which one is in force depends only on that metadata, so
    # each gets a small stand-in text (the Kodeks pracy PDF itself is tested above): 2026/548's
    # PDF and 2019/914's HTML, told apart by their art. 1.
    older = "DU/2023/1465"
    src = tmp_path / "src"
    for act, text in ((KODEKS_PRACY, "DU/2026/548/text.pdf"), (older, "DU/2019/914/text.html")):
        d = src / "acts" / act
        d.mkdir(parents=True)
        shutil.copy(mirror / "acts" / act / "meta.json", d / "meta.json")
        shutil.copy(mirror / "acts" / text, d / Path(text).name)

    archive = tmp_path / "dane"
    # the newer text first: ingest order must not matter, dates do
    newer_result = ingest_act(conn, scratch_url, KODEKS_PRACY, model=None, archive_dir=archive, source_dir=src)
    older_result = ingest_act(conn, scratch_url, older, model=None, archive_dir=archive, source_dir=src)
    assert (newer_result.status, older_result.status) == ("new", "new")  # each ELI has its own version 1

    assert dict(conn.execute("SELECT eli, base_eli FROM acts").fetchall()) == {
        KODEKS_PRACY: "DU/1974/141", older: "DU/1974/141"}
    assert dict(conn.execute("SELECT eli, valid_from FROM act_versions").fetchall()) == {
        KODEKS_PRACY: dt.date(2025, 2, 7), older: dt.date(2023, 6, 13)}

    def in_force(day: dt.date | None) -> list[str]:
        return [e for (e,) in conn.execute("SELECT eli FROM versions_as_of(%s)", (day,)).fetchall()]

    assert in_force(None) == [KODEKS_PRACY]  # one text per base act, the newest
    assert in_force(dt.date(2025, 2, 7)) == [KODEKS_PRACY]
    assert in_force(dt.date(2025, 2, 6)) == [older]
    assert in_force(dt.date(2023, 6, 13)) == [older]
    assert in_force(dt.date(2023, 6, 12)) == []
    assert conn.execute("SELECT eli FROM current_versions").fetchall() == [(KODEKS_PRACY,)]
    conn.rollback()

    # A text whose metadata gives no date: from the start of its year of publication, not for any date.
    undated = {**json.loads((mirror / "acts" / "DU/2026/548/meta.json").read_bytes()), "ELI": "DU/2019/1",
               "publisher": "DU", "year": 2019, "pos": 1, "references": {}}
    for key in ("legalStatusDate", "entryIntoForce", "validFrom", "announcementDate", "promulgation"):
        undated.pop(key, None)
    store_text(conn, undated, ParsedAct([Article("1", "Art. 1. Bez daty.")], source_format="html"),
                        source_sha256="1" * 64, model=None)
    assert conn.execute("SELECT valid_from FROM act_versions WHERE eli = 'DU/2019/1'").fetchone() == (None,)
    assert "DU/2019/1" in in_force(dt.date(2019, 1, 1)) and "DU/2019/1" in in_force(None)
    assert "DU/2019/1" not in in_force(dt.date(2018, 12, 31))
    conn.rollback()

    # Versions are numbered per text (ELI id): a version of the base act's id says which texts there are.
    from pipeline.storage.articles import ArticleNotFound, get_article

    with pytest.raises(ArticleNotFound) as no_version:
        get_article(conn, "DU/1974/141", "1", version_no=1)
    assert str(no_version.value) == (f"DU/1974/141 has no stored version 1; stored: {older} version 1, "
                                     f"{KODEKS_PRACY} version 1 (each ELI id numbers its own versions)")
    conn.rollback()

    # `show` of either ELI gives the text of the base act in force on the date
    env = {"DATABASE_URL": scratch_url}
    then = run_cli("show", KODEKS_PRACY, "1", "--as-of", "2024-01-01", env=env)
    assert then.returncode == 0, then.stderr
    assert then.stdout.startswith(f"{older} art. 1 (version 1, text as of 2023-06-13)")
    assert "Art. 1. W ustawie z dnia 12 maja 2011 r. o Krajowej Radzie Sądownictwa" in then.stdout
    now = run_cli("show", older, "1", env=env)
    assert now.returncode == 0, now.stderr
    assert now.stdout.startswith(f"{KODEKS_PRACY} art. 1 (version 1, text as of 2025-02-07)")
    assert "Art. 1. Ustawa określa:" in now.stdout


# --- 7. local files ---------------------------------------------------------------------------------

def _counts(url: str) -> tuple[int, ...]:
    with _db(url) as c:
        return tuple(c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                     for t in ("acts", "act_versions", "articles", "chunks"))


def test_local_files_take_the_act_from_the_name_or_act(scratch_url: str, tmp_path: Path) -> None:
    mirror = require_mirror()
    env = {"DATABASE_URL": scratch_url}
    pdf = tmp_path / "D20260548.pdf"
    shutil.copy(mirror / "acts/DU/2026/548/text.pdf", pdf)
    html = tmp_path / "ustawa.html"
    shutil.copy(mirror / "acts" / PATIENT_RIGHTS / "text.html", html)

    from_name = run_cli("ingest", str(pdf), "--no-embed", "--json", env=env)
    assert from_name.returncode == 0, from_name.stderr
    (r,) = json.loads(from_name.stdout)["acts"]
    assert (r["act"], r["status"], r["source_format"], r["pages"], r["articles"]) == ("DU/2026/548", "new", "pdf", 7, 39)

    with_act = run_cli("ingest", str(html), "--act", PATIENT_RIGHTS, "--no-embed", "--json", env=env)
    assert with_act.returncode == 0, with_act.stderr
    (r,) = json.loads(with_act.stdout)["acts"]
    assert (r["act"], r["status"], r["source_format"], r["articles"]) == (PATIENT_RIGHTS, "new", "html", 98)

    with _db(scratch_url) as c:
        title, meta = c.execute("SELECT title, meta FROM acts WHERE eli = 'DU/2026/548'").fetchone()
    assert title.casefold() == "ustawa z dnia 27 marca 2026 r. o zarządzaniu danymi"  # as printed: "USTAWA z dnia"
    assert meta["_provenance"] == "local file D20260548.pdf"
    assert _counts(scratch_url)[:2] == (2, 2)
    with _db(scratch_url) as c:  # no ELI record was read, so none was checked
        assert c.execute("SELECT checked_at FROM acts WHERE eli = 'DU/2026/548'").fetchone()[0] is None


def test_a_local_file_of_an_act_read_from_the_api_keeps_its_record(scratch_url: str, tmp_path: Path) -> None:
    """The file is a text of the publication the API described: its base act, currency and check time
    stay, for the stored version and for a new one (a local file has no metadata of its own)."""
    mirror = require_mirror()
    env = {"DATABASE_URL": scratch_url}
    meta = json.loads((mirror / "acts" / KODEKS_PRACY / "meta.json").read_bytes())
    with _db(scratch_url) as c:  # as an ingest from the API stores it (the text made short: no PDF parse)
        store_text(c, meta, ParsedAct([Article("1", "Art. 1. Ustawa określa prawa pracownika.")],
                                               source_format="pdf"), source_sha256="0" * 64, model=None)
        c.execute("UPDATE acts SET checked_at = '2026-11-30 12:00+00' WHERE eli = %s", (KODEKS_PRACY,))
        c.commit()
        record = c.execute("SELECT base_eli, in_force, amended_after, checked_at, meta FROM acts WHERE eli = %s",
                           (KODEKS_PRACY,)).fetchone()
    assert record[0] == "DU/1974/141" and record[1] == "IN_FORCE" and record[2]
    html = tmp_path / "kodeks.html"  # any text will do: a different one makes a new version
    shutil.copy(mirror / "acts" / PATIENT_RIGHTS / "text.html", html)
    for expected in ("new", "unchanged"):
        done = run_cli("ingest", str(html), "--act", KODEKS_PRACY, "--no-embed", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["acts"][0]["status"] == expected
        with _db(scratch_url) as c:
            assert c.execute("SELECT base_eli, in_force, amended_after, checked_at, meta FROM acts WHERE eli = %s",
                             (KODEKS_PRACY,)).fetchone() == record
            assert c.execute("SELECT array_agg(base_eli ORDER BY version_no) FROM act_versions WHERE eli = %s",
                             (KODEKS_PRACY,)).fetchone()[0] == ["DU/1974/141", "DU/1974/141"]
    shown = run_cli("show", "DU/1974/141", "1", env=env)
    assert shown.returncode == 0 and shown.stdout.startswith(f"{KODEKS_PRACY} art. 1 (version 2"), shown.stderr

    # The mirror's rebuilt records carry a "_provenance" note of their own: still records read from the
    # API (checked, kept against a local file), not local ones.
    rebuilt = "DU/2024/1513"
    assert json.loads((mirror / "acts" / rebuilt / "meta.json").read_bytes())["_provenance"].startswith("reconstructed")
    done = run_cli("ingest", "--source", str(mirror), "--act", rebuilt, "--no-embed", env=env)
    assert done.returncode == 0, done.stderr
    local = tmp_path / "D20241513.html"
    shutil.copy(mirror / "acts" / rebuilt / "text.html", local)
    done = run_cli("ingest", str(local), "--no-embed", "--json", env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["acts"][0]["status"] == "unchanged", done.stderr
    with _db(scratch_url) as c:
        checked, provenance = c.execute("SELECT checked_at, meta->>'_provenance' FROM acts WHERE eli = %s",
                                        (rebuilt,)).fetchone()
    assert checked is not None and provenance.startswith("reconstructed")


def test_sync_skips_an_act_of_a_local_file_the_api_does_not_publish(scratch_url: str, server, tmp_path: Path) -> None:
    """It has nothing to be checked against: no failure (which cron would report every night)."""
    html = tmp_path / "regulamin.html"
    shutil.copy(require_mirror() / "acts" / PATIENT_RIGHTS / "text.html", html)
    env = {"DATABASE_URL": scratch_url, "ELI_API_URL": server.url}
    done = run_cli("ingest", str(html), "--act", "DU/2099/1", "--no-embed", env=env)
    assert done.returncode == 0, done.stderr
    synced = run_cli("sync", "--no-embed", "--archive", str(tmp_path / "dane"), "--json", env=env)
    assert synced.returncode == 0, synced.stderr
    (result,) = json.loads(synced.stdout)["acts"]
    assert (result["act"], result["status"]) == ("DU/2099/1", "skipped")
    assert result["error"] == "ingested from a local file; the ELI API does not publish it"
    assert server.count("/acts/DU/2099/1") == 1  # asked once, as any act is


def _stats(conn) -> tuple:
    return (conn.execute("SELECT * FROM corpus_stats").fetchall(),
            conn.execute("SELECT lexeme, ndoc, npostings FROM lexicon ORDER BY lexeme").fetchall(),
            conn.execute("SELECT count(*) FROM postings").fetchone()[0])


def test_remove_takes_an_act_with_every_text_of_it_and_the_statistics_follow(conn, scratch_url: str) -> None:
    mirror = require_mirror()
    older = "DU/2023/1465"  # an earlier consolidated text of the same base act (DU/1974/141)

    def record(act: str) -> dict:
        return json.loads((mirror / "acts" / act / "meta.json").read_bytes())

    def text(*articles: str) -> ParsedAct:
        return ParsedAct([Article(str(i), a) for i, a in enumerate(articles, 1)], source_format="html")

    store_text(conn, record(PATIENT_RIGHTS), text("Art. 1. Pacjent ma prawo do informacji o stanie zdrowia."),
                        source_sha256="1" * 64, model="stand-in")
    before = _stats(conn)
    queued_before = conn.execute("SELECT count(*) FROM embedding_queue").fetchone()[0]
    store_text(conn, record(KODEKS_PRACY), text("Art. 1. Pracownik ma prawo do urlopu wypoczynkowego.",
                                                         "Art. 2. Pracodawca wypłaca wynagrodzenie."),
                        source_sha256="2" * 64, model="stand-in")
    store_text(conn, record(KODEKS_PRACY), text("Art. 1. Pracownik ma prawo do corocznego urlopu."),
                        source_sha256="3" * 64, model="stand-in")  # version 2 of the same text
    store_text(conn, record(older), text("Art. 1. Urlop wypoczynkowy przysługuje pracownikowi."),
                        source_sha256="4" * 64, model="stand-in")
    assert _stats(conn) != before
    conn.commit()

    env = {"DATABASE_URL": scratch_url}
    unconfirmed = run_cli("remove", "DU/1974/141", env=env)
    assert unconfirmed.returncode == 2 and "pass --yes to confirm" in unconfirmed.stderr
    assert conn.execute("SELECT count(*) FROM acts").fetchone()[0] == 3
    conn.rollback()

    # A consolidated text's id names its act: the base act's every text goes, the other act stays.
    done = run_cli("remove", older, "--yes", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"act": older, "base": "DU/1974/141", "acts": [older, KODEKS_PRACY],
                                       "versions": 3, "chunks": 4}
    assert conn.execute("SELECT eli FROM acts").fetchall() == [(PATIENT_RIGHTS,)]
    assert _stats(conn) == before  # the triggers took the removed chunks out of the statistics
    assert conn.execute("SELECT count(*) FROM embedding_queue").fetchone()[0] == queued_before
    conn.rollback()

    again = run_cli("remove", KODEKS_PRACY, "--yes", env=env)
    assert again.returncode == 1 and again.stderr.strip() == (
        f"Error: {KODEKS_PRACY} is not in the database (pipeline acts --all lists what is)")

    # Not while a sync runs: it read its list of acts first and could ingest the act again.
    with psycopg.connect(scratch_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (store.SYNC_LOCK,))
        with pytest.raises(store.RemoveBusy, match="a pipeline sync is running"):
            store.remove_act(conn, PATIENT_RIGHTS)
    assert conn.execute("SELECT count(*) FROM acts").fetchone()[0] == 1


@pytest.mark.parametrize(("name", "content", "message"), [
    ("ustawa.pdf", None, "failed: cannot tell the act of ustawa.pdf from its name; pass --act DU/YYYY/POS"),
    ("D20260548.pdf", b"", "failed: D20260548.pdf is empty"),
    ("D20260548.html", b"", "failed: D20260548.html is empty"),
    ("D20260548.pdf", bytes(range(256)) * 8, "failed: D20260548.pdf is neither a PDF nor an HTML document"),
    ("D20260548.pdf", "pdf-head", "failed: corrupt PDF: "),
])
def test_bad_local_files_fail_in_one_line_and_write_nothing(scratch_url: str, tmp_path: Path, name: str,
                                                           content: bytes | str | None, message: str) -> None:
    real = require_mirror() / "acts/DU/2026/548/text.pdf"
    path = tmp_path / name
    if content is None:
        shutil.copy(real, path)  # a good PDF, but nothing tells which act it is
    elif content == "pdf-head":
        path.write_bytes(real.read_bytes()[:20000])  # a PDF cut short
    else:
        path.write_bytes(content)
    done = run_cli("ingest", str(path), "--no-embed", env={"DATABASE_URL": scratch_url})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line.strip() for line in done.stderr.splitlines() if "failed:" in line or line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(message), done.stderr
    assert _counts(scratch_url) == (0, 0, 0, 0)


# --- all or nothing ----------------------------------------------------------------------------------

def test_a_failure_inside_the_version_transaction_leaves_nothing(conn, scratch_url: str) -> None:
    meta = json.loads((require_mirror() / "acts/DU/2026/548/meta.json").read_bytes())
    # PostgreSQL text cannot hold NUL: the COPY of the second article fails after the acts row,
    # the version row and the first article were sent.
    parsed = ParsedAct([Article("1", "Art. 1. Dobry tekst."), Article("2", "Art. 2. Zły\x00bajt.")], source_format="html")
    with pytest.raises(psycopg.Error):
        store_text(conn, meta, parsed, source_sha256="0" * 64, model="test-model")
    conn.rollback()
    assert _counts(scratch_url) == (0, 0, 0, 0)
    assert conn.execute("SELECT count(*) FROM embedding_queue").fetchone()[0] == 0


def test_a_lost_database_connection_is_recorded_as_a_failed_run(scratch_url: str, tmp_path: Path) -> None:
    from pipeline.storage import db

    lost = db.connect(scratch_url)
    lost.close()
    with pytest.raises(psycopg.OperationalError):
        ingest_act(lost, scratch_url, "DU/2026/548", model=None, archive_dir=tmp_path, source_dir=require_mirror())
    with _db(scratch_url) as c:
        runs = c.execute("SELECT eli, status, message, finished_at IS NOT NULL FROM ingest_runs").fetchall()
    assert runs == [("DU/2026/548", "failed", "the connection is closed", True)]
    assert _counts(scratch_url) == (0, 0, 0, 0)


def test_a_run_whose_process_died_is_marked_failed_by_the_next_run(scratch_url):
    import socket
    import subprocess
    import sys

    from pipeline.storage.runs import RunLog

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid is now free: like an ingest killed with -9
    with psycopg.connect(scratch_url, autocommit=True) as c:
        stale = c.execute("INSERT INTO ingest_runs (eli, source, host, pid) VALUES ('DU/2026/548', 'x', %s, %s) "
                          "RETURNING run_id", (socket.gethostname(), dead.pid)).fetchone()[0]
    with RunLog(scratch_url) as runs:
        runs.start("DU/2026/548", "test")
    with psycopg.connect(scratch_url) as c:
        status, message = c.execute("SELECT status, message FROM ingest_runs WHERE run_id = %s", (stale,)).fetchone()
    assert status == "failed" and "killed" in message
