"""Currency of every answer, on the real mirrored metadata served by the loopback ELI server.

DU/2025/277 (Kodeks pracy, consolidated 2025) lists five amendments after it; DU/1974/141's real
(excerpted) record lists its consolidated texts. What the API says later (a changed record while
the PDF stays the same, a newer consolidated text, an act going out of force) is served from an
overlay in tmp_path. The tests of the database part run in order on one database: the Labour
Code PDF is parsed once (~40 s); nothing uses the real embedding model (the Ollama stand-in
embeds for `ask`).
"""
from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
from pathlib import Path

import psycopg
import pytest
from support.cli import run_cli
from support.database import create_database
from support.paths import ELI_MIRROR, require_mirror
from eli_server import Fault, start_mirror_server

from pipeline.indexing.latest import resolve_newest
from pipeline.sources import record as eli_record
from pipeline.sources.fetch import EliClient
from pipeline.sources.record import EliRecord, display_title
from pipeline.storage import currency
from pipeline.storage.store import SYNC_LOCK

try:
    from chat_stand_in import ChatStandIn
    from ollama_stand_in import OllamaStandIn
except ImportError:  # tests/ imported as a package
    from tests.chat_stand_in import ChatStandIn
    from tests.ollama_stand_in import OllamaStandIn

LABOUR_CODE = "DU/1974/141"
TJ_2025 = "DU/2025/277"
TJ_NEWER = "DU/2026/1245"  # the newer consolidated text of the Labour Code (not in the mirror)
PATIENT_RIGHTS = "DU/2024/581"
LATER = [("DU/2025/807", "2025-06-04"), ("DU/2025/1423", "2025-09-26"), ("DU/2025/1661", "2025-11-05"),
         ("DU/2026/25", "2025-12-04"), ("DU/2026/473", "2026-03-11")]


def _meta(act: str) -> dict:
    pub, year, pos = act.split("/")
    return json.loads((ELI_MIRROR / "acts" / pub / year / pos / "meta.json").read_text())


def _base_record() -> dict:
    record = json.loads((ELI_MIRROR / "other" / "DU-1974-141-meta.EXCERPT.json").read_text())
    record.pop("_excerpt_note")  # not part of the API's answer
    return record


def _newer_tj_record() -> dict:
    """The record DU/2026/1245 would have: DU/2025/277's, renumbered, with a later legal status date."""
    record = copy.deepcopy(_meta(TJ_2025))
    record.update(ELI=TJ_NEWER, year=2026, pos=1245, address="WDU20260001245", displayAddress="Dz.U. 2026 poz. 1245",
                  announcementDate="2026-07-10", promulgation="2026-08-20", legalStatusDate="2026-07-01",
                  changeDate="2026-08-21T09:00:00")
    record["references"] = {k: v for k, v in record["references"].items() if k != eli_record.LATER_AMENDMENTS}
    return record


def _put(overlay: Path, act: str, name: str, data: dict | bytes) -> None:
    path = overlay / "acts" / act / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode())


# --- metadata -> currency (no database) ------------------------------------------------------------


def test_real_record_lists_five_amendments_after_the_consolidated_text():
    require_mirror()
    found = EliRecord.read(_meta(TJ_2025)).amendments_after()
    assert [(a.eli, a.date.isoformat(), a.date_of) for a in found] == [(e, d, "act") for e, d in LATER]


def test_base_act_uses_its_amending_acts_and_a_bare_record_knows_nothing():
    require_mirror()
    found = EliRecord.read(_base_record()).amendments_after()
    assert {a.date_of for a in found} == {"entry_into_force"}
    assert ("DU/2026/1046", "2026-11-05") in [(a.eli, a.date.isoformat()) for a in found]
    assert EliRecord.read(_meta(PATIENT_RIGHTS)).amendments_after() is None  # rebuilt record: no references


def test_resolve_newest_through_the_references_graph(tmp_path):
    require_mirror()
    _put(tmp_path, LABOUR_CODE, "meta.json", _base_record())
    with start_mirror_server(ELI_MIRROR) as server, EliClient(server.url, min_interval=0) as client:
        server.overlay = tmp_path
        base = resolve_newest(client, LABOUR_CODE)
        older = resolve_newest(client, "DU/2023/1465")  # an expired consolidated text of the same act
    assert (base.base, base.newest, base.via) == (LABOUR_CODE, TJ_2025, "references")
    assert (older.base, older.newest) == (LABOUR_CODE, TJ_2025)


def test_resolve_newest_through_acts_search_when_the_record_lists_none(tmp_path):
    require_mirror()
    record = _base_record()
    del record["references"]["Inf. o tekście jednolitym"]
    _put(tmp_path, LABOUR_CODE, "meta.json", record)
    civil = copy.deepcopy(_meta("DU/2024/1061"))  # another base act's text, numbered higher: not ours
    civil.update(ELI="DU/2026/2000", year=2026, pos=2000)
    items = [_meta(TJ_2025), _meta("DU/2023/1465"), _newer_tj_record(), civil]
    search = {"count": len(items), "totalCount": len(items), "offset": 0, "items": items}
    (tmp_path / "acts" / "search.json").write_text(json.dumps(search, ensure_ascii=False))
    with start_mirror_server(ELI_MIRROR) as server, EliClient(server.url, min_interval=0) as client:
        server.overlay = tmp_path
        found = resolve_newest(client, LABOUR_CODE)
        asked = [u for u in server.urls if u.startswith("/acts/search?")]
    assert (found.newest, found.via) == (TJ_NEWER, "search")
    assert len(asked) == 1 and "title=Kodeks+pracy" in asked[0] and "type=Obwieszczenie" in asked[0]


def test_note_and_warning_say_it_in_one_polish_line():
    amended = currency.Currency(TJ_2025, LABOUR_CODE, "IN_FORCE", "obowiązujący", None, None, None, None,
                                tuple(EliRecord.read(_meta(TJ_2025)).amendments_after()))
    assert "DU/2026/473 (z 2026-03-11)" in amended.note() and "5 aktami" in amended.note()
    line = currency.warning([amended])
    assert line.startswith("Uwaga: DU/2025/277") and "\n" not in line
    current = currency.Currency("DU/2026/548", "DU/2026/548", "IN_FORCE", "obowiązujący", None, None, None, None, ())
    assert currency.warning([current]) is None
    assert "bez późniejszych zmian" in current.note()


def test_with_a_date_only_what_happened_by_then_counts():
    """`--as-of`: amendments after the date asked about do not bear on the law as it stood then, and an
    act repealed after it was still in force on it."""
    amended = currency.Currency(TJ_2025, LABOUR_CODE, "IN_FORCE", "obowiązujący", dt.date(2025, 2, 7), None, None,
                                None, tuple(EliRecord.read(_meta(TJ_2025)).amendments_after()))
    then = dataclasses.replace(amended, as_of=dt.date(2025, 10, 1))
    assert [a.eli for a in then.amendments] == ["DU/2025/807", "DU/2025/1423"]
    assert "akty zmieniające datowane do 2025-10-01: 2 – DU/2025/807" in then.note() and "późniejszych: 3" in then.note()
    assert "DU/2026/473" not in then.note() and "DU/2026/473" not in currency.warning([then])
    assert "akty zmieniające datowane do 2025-10-01: 2, ostatni DU/2025/1423" in currency.warning([then])
    assert (then.to_dict()["amendments_after"], then.to_dict()["amended_after_total"]) == (2, 5)
    before = dataclasses.replace(amended, as_of=dt.date(2025, 5, 1))
    assert currency.warning([before]) is None and "brak aktów zmieniających datowanych do 2025-05-01" in before.note()
    repealed = dataclasses.replace(amended, amended_after=(), in_force=currency.NOT_IN_FORCE,
                                   expiration_date=dt.date(2025, 8, 1))
    assert currency.warning([repealed]) == f"Uwaga: {TJ_2025} nie obowiązuje od 2025-08-01."  # no "zmian" to miss
    assert currency.warning([dataclasses.replace(repealed, as_of=dt.date(2025, 7, 1))]) is None
    assert "2025-07-01 jeszcze obowiązywał" in dataclasses.replace(repealed, as_of=dt.date(2025, 7, 1)).note()
    assert currency.warning([dataclasses.replace(repealed, as_of=dt.date(2025, 8, 1))]) is not None


def test_the_state_is_one_answer_and_the_page_badge_shows_it():
    """Currency.state says where the act stands on the date asked; the web page's badge shows that state
    and re-states no rule: an act repealed after the date asked was still in force on it (the badge once
    read the raw `in_force` and said "nie obowiązuje" under a tooltip saying it still was)."""
    from pipeline.interfaces.web.render import badge

    amended = currency.Currency(TJ_2025, LABOUR_CODE, "IN_FORCE", "obowiązujący", dt.date(2025, 2, 7), None, None,
                                None, tuple(EliRecord.read(_meta(TJ_2025)).amendments_after()))
    repealed = dataclasses.replace(amended, amended_after=(), in_force=currency.NOT_IN_FORCE,
                                   expiration_date=dt.date(2025, 8, 1))
    still = dataclasses.replace(repealed, as_of=dt.date(2025, 7, 1))
    unknown = dataclasses.replace(amended, amended_after=None)
    current = dataclasses.replace(amended, amended_after=())
    assert [c.state for c in (amended, repealed, still, unknown, current)] == [
        "amended", "not_in_force", "current", "unknown", "current"]
    assert still.to_dict()["repealed_since"] and not repealed.to_dict()["repealed_since"]
    labels = [badge(c.to_dict())["label"] for c in (amended, repealed, still, unknown, current)]
    assert labels == ["zmieniony później: DU/2026/473 (i 4 wcześniej)", "nie obowiązuje", "aktualny",
                      "aktualność nieznana", "aktualny"]
    assert "jeszcze obowiązywał" in badge(still.to_dict())["note"]


# --- the database part: ingest --latest, acts, show, search, sync, ask -------------------------------


@pytest.fixture(scope="module")
def env(server_url, tmp_path_factory):
    """Database, loopback API with an overlay folder, archive; ingest --latest of the Labour Code."""
    require_mirror()
    url = create_database(server_url, "currency")
    overlay = tmp_path_factory.mktemp("overlay")
    archive = tmp_path_factory.mktemp("archive")
    _put(overlay, LABOUR_CODE, "meta.json", _base_record())
    with start_mirror_server(ELI_MIRROR) as server:
        server.overlay = overlay
        yield {"url": url, "server": server, "overlay": overlay, "archive": str(archive),
               "env": {"DATABASE_URL": url, "ELI_API_URL": server.url}}


STAND_IN_MODEL = "stand-in-64"


def _cli(env: dict, *args: str, **extra: str):
    result = run_cli(*args, env={**env["env"], **extra})
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _acts(env: dict) -> dict:
    result = _cli(env, "acts", "--json")
    assert result.returncode == 0, result.stderr
    return {a["eli"]: a for a in json.loads(result.stdout)}


def test_ingest_latest_resolves_the_base_act_and_stores_currency(env):
    result = _cli(env, "ingest", "--act", LABOUR_CODE, "--latest", "--no-embed", "--archive", env["archive"])
    assert result.returncode == 0, result.stderr
    assert f"{LABOUR_CODE} -> newest consolidated text {TJ_2025}" in result.stderr
    # Its record lists no consolidated texts and /acts/search fails: the act itself is ingested, with a
    # warning that a newer text was not looked for (sync checks it the same way).
    env["server"].inject("/acts/search", [Fault.not_found()])
    result = _cli(env, "ingest", "--act", PATIENT_RIGHTS, "--latest", "--no-embed", "--archive", env["archive"])
    assert result.returncode == 0, result.stderr
    assert (f"warning: newer consolidated texts not looked for: {env['server'].url}/acts/search answered 404 "
            f"(not found); {PATIENT_RIGHTS} ingested as named") in result.stderr

    acts = _acts(env)
    assert set(acts) == {TJ_2025, PATIENT_RIGHTS}
    kp = acts[TJ_2025]
    assert (kp["base_eli"], kp["text_as_of"], kp["in_force"], kp["amendments_after"]) == (
        LABOUR_CODE, "2025-02-07", "IN_FORCE", 5)
    assert [(a["eli"], a["date"]) for a in kp["amended_after"]] == LATER
    assert acts[PATIENT_RIGHTS]["amendments_after"] is None
    with psycopg.connect(env["url"]) as c:
        row = c.execute("SELECT amendments_after, amended_after->-1->>'eli', is_current FROM current_acts "
                        "WHERE base_eli = %s", (LABOUR_CODE,)).fetchone()
    assert row == (5, "DU/2026/473", True)
    table = _cli(env, "acts")
    assert table.returncode == 0 and "DU/2026/473 (2026-03-11)" in table.stdout
    # Which act is which: the title's naming part (a consolidated text's announcement cut off).
    row = next(line for line in table.stdout.splitlines() if line.startswith(TJ_2025))
    assert row.endswith("  ustawy - Kodeks pracy") and kp["title"].startswith("Obwieszczenie Marszałka Sejmu")
    assert display_title(_meta("DU/2018/1000")["title"]) == (
        "Ustawa z dnia 10 maja 2018 r. o ochronie danych osobowych")  # its first footnote left out


def test_show_and_search_carry_the_note(env):
    shown = _cli(env, "show", TJ_2025, "154")
    assert shown.returncode == 0, shown.stderr
    assert "Aktualność: DU/2025/277: tekst jednolity według stanu na 2025-02-07" in shown.stdout
    assert json.loads(_cli(env, "show", TJ_2025, "154", "--json").stdout)["currency"]["amendments_after"] == 5
    hits = json.loads(_cli(env, "search", "urlop wypoczynkowy", "--mode", "text", "--json").stdout)
    assert hits and all(h["currency"] and h["currency"]["eli"] == h["act"] for h in hits)
    assert {h["currency"]["amendments_after"] for h in hits if h["act"] == TJ_2025} == {5}
    # A date asked about: only the amendments up to it.
    then = _cli(env, "show", TJ_2025, "154", "--as-of", "2025-10-01")
    assert then.returncode == 0, then.stderr
    assert "akty zmieniające datowane do 2025-10-01: 2" in then.stdout and "DU/2026/473" not in then.stdout
    hits = json.loads(_cli(env, "search", "urlop wypoczynkowy", "--mode", "text", "--as-of", "2025-10-01",
                           "--json").stdout)
    assert {h["currency"]["amendments_after"] for h in hits if h["act"] == TJ_2025} == {2}
    # Before the earliest stored text: not "no matching articles" alone, but why.
    before = _cli(env, "search", "urlop wypoczynkowy", "--mode", "text", "--as-of", "2025-01-01", "--act", TJ_2025)
    assert before.returncode == 0, before.stderr
    assert f"no stored text of {LABOUR_CODE} is in force on 2025-01-01 (the earliest stored is {TJ_2025}" in before.stderr
    assert "in force on" not in _cli(env, "search", "urlop", "--mode", "text", "--as-of", "2025-10-01").stderr


def test_sync_stores_changed_metadata_when_the_text_is_unchanged(env):
    server = env["server"]
    record = _meta(TJ_2025)
    record["references"][eli_record.LATER_AMENDMENTS].append({"id": "DU/2026/1046", "date": "2026-06-19"})
    record["changeDate"] = "2026-09-01T08:00:00"
    _put(env["overlay"], TJ_2025, "meta.json", record)
    pdf_before = server.count(f"/acts/{TJ_2025}/text.pdf")
    html_before = server.count(f"/acts/{PATIENT_RIGHTS}/text.html")

    result = _cli(env, "sync", "--no-embed", "--archive", env["archive"])
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines())
    assert lines[TJ_2025].startswith("amended since; new since last check: DU/2026/1046")
    assert lines[PATIENT_RIGHTS].startswith("unchanged")
    # The changed record made sync download the PDF again; same bytes: no parse, no new version.
    assert server.count(f"/acts/{TJ_2025}/text.pdf") == pdf_before + 1
    assert server.count(f"/acts/{PATIENT_RIGHTS}/text.html") == html_before  # record unchanged: no text asked
    with psycopg.connect(env["url"]) as c:
        versions = c.execute("SELECT count(*) FROM act_versions WHERE eli = %s", (TJ_2025,)).fetchone()[0]
    assert versions == 1
    kp = _acts(env)[TJ_2025]
    assert kp["amendments_after"] == 6
    assert dt.datetime.fromisoformat(kp["change_date"]) == dt.datetime(2026, 9, 1, 8, tzinfo=eli_record.WARSAW)
    assert kp["change_date"] == "2026-09-01T06:00:00+00:00"  # ISO 8601, as JSON readers expect


def test_ask_warns_on_the_labour_code_and_tells_the_model(env):
    # A small stand-in model: what is tested is the currency, not the vectors (1024-d took ~9 s more).
    with OllamaStandIn({STAND_IN_MODEL: 64}) as ollama:
        embed_env = {"EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url, "EMBED_MODEL": STAND_IN_MODEL,
                     "ANSWER_MIN_SIMILARITY": "-1"}
        assert _cli(env, "embed", **embed_env).returncode == 0
        reply = "Pracownikowi przysługuje 26 dni urlopu po 10 latach pracy [DU/2025/277, art. 154]."
        with ChatStandIn(reply) as chat:
            asked = _cli(env, "ask", "Ile dni urlopu wypoczynkowego po 10 latach pracy?", "--act", TJ_2025,
                         ANSWER_BASE_URL=chat.base_url, ANSWER_MODEL="test-model", ANSWER_API_KEY="k",
                         **embed_env)
        assert asked.returncode == 0, asked.stderr
        warnings = [line for line in asked.stderr.splitlines() if line.startswith("Uwaga: DU/2025/277")]
        assert len(warnings) == 1 and "6 aktami" in warnings[0] and "DU/2026/1046" in warnings[0]
        user = chat.requests[0].body["messages"][1]["content"]
        assert "Aktualność aktów (metadane ELI):" in user and "DU/2026/473 (z 2026-03-11)" in user
        assert user.rstrip().endswith("Pytanie: Ile dni urlopu wypoczynkowego po 10 latach pracy?")
        with ChatStandIn(reply) as chat:
            then = _cli(env, "ask", "Ile dni urlopu wypoczynkowego po 10 latach pracy?", "--act", TJ_2025,
                        "--as-of", "2025-10-01", ANSWER_BASE_URL=chat.base_url, ANSWER_MODEL="test-model",
                        ANSWER_API_KEY="k", **embed_env)
        assert then.returncode == 0, then.stderr
        assert "akty zmieniające datowane do 2025-10-01: 2, ostatni DU/2025/1423" in then.stderr
        user = chat.requests[0].body["messages"][1]["content"]
        assert "akty zmieniające datowane do 2025-10-01: 2" in user and "DU/2026/473" not in user
        assert "Pytanie dotyczy stanu prawnego na dzień 2025-10-01" in user  # the model knows the date asked

        offline = _cli(env, "ask", "Jakie prawa ma pacjent w szpitalu?", "--act", PATIENT_RIGHTS, "--offline",
                       "--json", **embed_env)
    answer = json.loads(offline.stdout)
    assert answer["citations"] and answer["currency_warning"] is None
    assert set(answer["currency"]) == {PATIENT_RIGHTS}


def test_sync_ingests_a_newer_consolidated_text_and_sees_an_act_go_out_of_force(env):
    overlay = env["overlay"]
    base = _base_record()
    base["references"]["Inf. o tekście jednolitym"].insert(0, {"id": TJ_NEWER})
    _put(overlay, LABOUR_CODE, "meta.json", base)
    expired = _meta(TJ_2025)
    expired.update(status="wygaśnięcie aktu", inForce="NOT_IN_FORCE", expirationDate="2026-08-19",
                   changeDate="2026-08-21T10:00:00")
    expired["references"].pop(eli_record.LATER_AMENDMENTS)
    _put(overlay, TJ_2025, "meta.json", expired)
    _put(overlay, TJ_NEWER, "meta.json", _newer_tj_record())
    # The newer text's PDF is not in the mirror; a small real Dz.U. PDF stands in for it (its
    # articles do not matter here, only that the new act becomes the current text of DU/1974/141).
    (overlay / "acts" / TJ_NEWER / "text.pdf").symlink_to(ELI_MIRROR / "acts/DU/2026/548/text.pdf")
    repealed = _meta(PATIENT_RIGHTS)
    repealed.update(status="uchylony", inForce="NOT_IN_FORCE", expirationDate="2026-10-01")
    _put(overlay, PATIENT_RIGHTS, "meta.json", repealed)

    result = _cli(env, "sync", "--no-embed", "--archive", env["archive"])
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines())
    assert lines[TJ_2025].startswith(f"new version -> {TJ_NEWER} (version 1)")
    assert "bez późniejszych zmian" in lines[TJ_2025]
    assert lines[PATIENT_RIGHTS].startswith("not in force")

    acts = _acts(env)
    assert set(acts) == {TJ_NEWER, PATIENT_RIGHTS}  # DU/2025/277 no longer holds the current text
    every = json.loads(_cli(env, "acts", "--all", "--json").stdout)
    assert {(a["eli"], a["is_current"]) for a in every} == {(TJ_NEWER, True), (PATIENT_RIGHTS, True), (TJ_2025, False)}
    assert (acts[TJ_NEWER]["base_eli"], acts[TJ_NEWER]["amendments_after"]) == (LABOUR_CODE, 0)
    with psycopg.connect(env["url"]) as c:
        old = c.execute("SELECT in_force, is_current FROM act_currency WHERE eli = %s", (TJ_2025,)).fetchone()
        changes = c.execute("SELECT changes FROM act_versions WHERE eli = %s", (TJ_NEWER,)).fetchone()[0]
    assert old == ("NOT_IN_FORCE", False)
    # The new consolidated text's changes are against the text it follows (the 2025 one), not empty.
    assert "1" in changes["changed"] and "154" in changes["removed"], {k: v[:5] for k, v in changes.items()}

    with OllamaStandIn({STAND_IN_MODEL: 64}) as ollama:
        asked = _cli(env, "ask", "Jakie prawa ma pacjent w szpitalu?", "--act", PATIENT_RIGHTS, "--offline",
                     EMBED_BACKEND="ollama", OLLAMA_URL=ollama.url, EMBED_MODEL=STAND_IN_MODEL, ANSWER_MIN_SIMILARITY="-1")
    assert asked.returncode == 0, asked.stderr
    assert "Uwaga: DU/2024/581 nie obowiązuje od 2026-10-01" in asked.stderr


def test_sync_is_resumable_exclusive_and_reports_failures(env):
    with psycopg.connect(env["url"], autocommit=True) as c:
        # An interrupted sync that had checked the Labour Code already.
        interrupted = c.execute("INSERT INTO sync_runs DEFAULT VALUES RETURNING sync_id").fetchone()[0]
        c.execute("UPDATE acts SET checked_at = now() WHERE eli = %s", (TJ_NEWER,))
        result = _cli(env, "sync", "--no-embed", "--archive", env["archive"])
        assert result.returncode == 0, result.stderr
        lines = dict(line.split("  ", 1) for line in result.stdout.splitlines())
        assert lines[TJ_NEWER].startswith("skipped: checked at") and str(interrupted) in lines[TJ_NEWER]
        assert lines[PATIENT_RIGHTS].startswith("not in force")
        assert f"(resumed sync {interrupted})" in result.stderr

        c.execute("SELECT pg_advisory_lock(%s)", (SYNC_LOCK,))
        busy = _cli(env, "sync", "--no-embed")
        c.execute("SELECT pg_advisory_unlock(%s)", (SYNC_LOCK,))
    assert busy.returncode == 75 and busy.stderr.strip() == (  # EX_TEMPFAIL: cron tells it from a failed act
        "Error: another pipeline sync is running; try again when it has finished")

    env["server"].inject(f"/acts/{PATIENT_RIGHTS}", [Fault.not_found()])
    # The base act's record missing: the consolidated text's own record is still checked, with a warning.
    env["server"].inject(f"/acts/{LABOUR_CODE}", [Fault.not_found()])
    failed = _cli(env, "sync", "--no-embed", "--archive", env["archive"], "--json")
    assert failed.returncode == 1
    report = json.loads(failed.stdout)
    by_act = {a["act"]: a for a in report["acts"]}
    assert by_act[PATIENT_RIGHTS]["status"] == "failed" and "not found" in by_act[PATIENT_RIGHTS]["error"]
    assert by_act[TJ_NEWER]["status"] == "unchanged" and report["resumed"] is None
    assert by_act[TJ_NEWER]["error"] is None
    assert by_act[TJ_NEWER]["warning"].startswith(f"newer consolidated texts not looked for: act {LABOUR_CODE} not found")


def test_sync_parses_again_only_when_the_downloaded_text_differs(env):
    overlay = env["overlay"]
    record = json.loads((overlay / "acts" / PATIENT_RIGHTS / "meta.json").read_text())
    record["changeDate"] = "2026-10-02T12:00:00"
    _put(overlay, PATIENT_RIGHTS, "meta.json", record)
    html = (ELI_MIRROR / "acts" / PATIENT_RIGHTS / "text.html").read_bytes()
    _put(overlay, PATIENT_RIGHTS, "text.html", html + b"\n<!-- served again -->\n")  # other bytes, same text
    result = _cli(env, "sync", "--no-embed", "--archive", env["archive"])
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines())
    assert lines[PATIENT_RIGHTS].startswith("not in force")
    with psycopg.connect(env["url"]) as c:
        versions = c.execute("SELECT count(*) FROM act_versions WHERE eli = %s", (PATIENT_RIGHTS,)).fetchone()[0]
        run = c.execute("SELECT status FROM ingest_runs WHERE eli = %s ORDER BY run_id DESC LIMIT 1",
                        (PATIENT_RIGHTS,)).fetchone()[0]
    assert (versions, run) == (1, "unchanged")  # parsed and logged as an ingest run: the same articles


def test_upgrade_fills_currency_from_metadata_stored_before_it(server_url):
    require_mirror()
    from pipeline.storage import schema

    url = create_database(server_url, "currency_backfill", migrate=False)
    schema.upgrade(url, "0002")
    record = _meta(TJ_2025)
    with psycopg.connect(url) as c:
        c.execute("INSERT INTO acts (eli, publisher, year, pos, base_eli, meta) VALUES (%s, 'DU', 2025, 277, %s, %s)",
                  (TJ_2025, LABOUR_CODE, json.dumps(record)))
    schema.upgrade(url)
    with psycopg.connect(url) as c:
        row = c.execute("SELECT amendments_after, amended_after->0->>'eli', change_date IS NOT NULL, checked_at IS NOT NULL "
                        "FROM act_currency WHERE eli = %s", (TJ_2025,)).fetchone()
    assert row == (5, "DU/2025/807", True, True)
