"""Security: hostile text in every input, keys never shown, the read-only SQL role really is read-only.

Inputs are passed through the CLI as a user would; afterwards every table must still be there with
the same rows. The database is this module's own (one act, embedded through the Ollama stand-in).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
from chat_stand_in import ChatStandIn
from support.cli import run_cli
from support.corpus import embed_in_bulk, ingestion
from support.database import create_database
from support.paths import REPO, require_mirror
from ollama_stand_in import OllamaStandIn

from pipeline.storage import db, schema
from pipeline.embedders.ollama import OllamaEmbedder

ACT = "DU/2024/1513"  # e-services act, HTML, 35 articles
QUESTION = "Czy usługodawca musi podać swój adres elektroniczny?"
INJECTIONS = [
    "'; DROP TABLE acts;--",
    "usługa' OR '1'='1",
    "$$; DROP TABLE chunks; $$",
    "'); DELETE FROM articles; --",
    "usług:* & !(adres) <-> 'x' | \\",
    "%s %(q)s {0} \\x00",
]
SEARCH_CHUNKS = "search_chunks"  # by name: its argument list lives only in sql/search.sql


@pytest.fixture(scope="module")
def ollama():
    with OllamaStandIn({"bge-m3": 1024}) as server:
        yield server


@pytest.fixture(scope="module")
def url(server_url, ollama) -> str:
    mirror = require_mirror()
    url = create_database(server_url, "security")
    embedder = OllamaEmbedder(ollama.url, "bge-m3")
    with db.connect(url) as c, ingestion(c, url, model=embedder.name, archive_dir=Path("/nonexistent")) as run:
        r = run.act(ACT, source_dir=mirror)
        assert r.status == "new", r.error
        embed_in_bulk(c, embedder)
    return url


@pytest.fixture(scope="module")
def env(url, ollama) -> dict:
    return {"DATABASE_URL": url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url, "EMBED_MODEL": "bge-m3",
            "ANSWER_MIN_SIMILARITY": "0"}


def snapshot(url: str) -> dict:
    """Every table, view and function of the schema with the row count of each table."""
    with psycopg.connect(url) as c:
        tables = [t for (t,) in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                                          "ORDER BY 1")]
        return {
            "tables": {t: c.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables},  # catalog names
            "views": c.execute("SELECT array_agg(viewname ORDER BY viewname) FROM pg_views "
                               "WHERE schemaname = current_schema()").fetchone()[0],
            "functions": c.execute("SELECT array_agg(oid::regprocedure::text ORDER BY oid::regprocedure::text) FROM pg_proc "
                                   "WHERE pronamespace = current_schema()::regnamespace").fetchone()[0],
            "roles": c.execute("SELECT array_agg(rolname ORDER BY rolname) FROM pg_roles WHERE rolsuper").fetchone()[0],
        }


def one_error(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("Error:") or "failed:" in line]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0].strip()


# --- SQL injection -----------------------------------------------------------------------------------

def test_hostile_questions_are_only_text(url: str, env: dict, ollama) -> None:
    """Every hostile text through the service that each face calls (text search, hybrid search, the
    offline answer), and the first of them through the CLI as a user types it."""
    from pipeline import Service

    before = snapshot(url)
    with Service(url, embedder=OllamaEmbedder(ollama.url, "bge-m3"), pool_size=1) as service:
        for text in INJECTIONS:
            assert isinstance(service.search(text, mode="text").to_dict(), dict)
            assert isinstance(service.search("usługa " + text).to_dict(), dict)
            assert service.ask(text, offline=True).answer
    for args in (["search", INJECTIONS[0], "--mode", "text", "--json"], ["search", "usługa " + INJECTIONS[0], "--json"],
                 ["ask", INJECTIONS[0], "--offline", "--json"]):
        done = run_cli(*args, env=env, timeout=120)
        assert done.returncode == 0, (args, done.stderr)
        assert isinstance(json.loads(done.stdout), (list, dict))
    assert snapshot(url) == before


@pytest.mark.parametrize(("args", "code", "message"), [
    (["ingest", "--act", "DU/2025/277'; DROP TABLE acts;--", "--no-embed"], 2,
     "Error: Invalid value for '--act': invalid act id \"DU/2025/277'; DROP TABLE acts;--\""),
    (["search", "usługa", "--act", "DU/2024/1513'); DELETE FROM chunks;--"], 2,
     "Error: Invalid value for '--act': invalid act id"),
    (["ask", QUESTION, "--offline", "--act", "DU/2024/1513' OR '1'='1"], 2, "Error: Invalid value for '--act': invalid act id"),
    (["show", "DU/2025/277'; DROP TABLE acts;--", "1"], 2, "Error: Invalid value for 'ACT': invalid act id"),
    (["search", "usługa", "--as-of", "2025-01-01'; DROP TABLE acts;--"], 2, "Error: Invalid value for '--as-of'"),
    (["db", "grant-reader", "x\"; DROP TABLE acts;--"], 2, "Error: Invalid value for ROLE: role name"),
    (["db", "grant-reader", "reader1", "--password", "pw'; DROP TABLE acts;--"], 0, None),
])
def test_hostile_act_ids_and_options_are_refused_in_one_line(args: list[str], code: int, message: str | None,
                                                            url: str, env: dict, tmp_path: Path) -> None:
    before = snapshot(url)
    if args[0] == "ingest":
        args = [*args, "--archive", str(tmp_path)]
    done = run_cli(*args, env=env, timeout=120)
    assert done.returncode == code, done.stderr
    if message:
        assert one_error(done.stderr).startswith(message)
    assert snapshot(url) == before


@pytest.mark.parametrize("article", ["1'; DROP TABLE articles;--", "1 OR 1=1", "999"])
def test_hostile_article_numbers_are_one_line_errors(article: str, url: str, env: dict) -> None:
    before = snapshot(url)
    done = run_cli("show", ACT, article, env=env, timeout=120)
    error = one_error(done.stderr)
    assert "unexpected" not in error and "PIPELINE_DEBUG" not in error, error
    # Malformed: a usage error (exit 2); well-formed but not stored: not found (exit 1).
    assert (done.returncode, error) in (
        (2, f"Error: {article!r} is not an article number (examples: 154, 151^1, 22^1c, 19a)"),
        (1, f"Error: {ACT} has no art. {article} in the selected text")), (done.returncode, error)
    assert done.stdout == ""
    assert snapshot(url) == before


def test_hostile_eval_files_are_refused_or_only_text(url: str, env: dict, tmp_path: Path) -> None:
    before = snapshot(url)
    good = tmp_path / "hostile.jsonl"
    good.write_text("\n".join(json.dumps({"id": f"q{i}", "question": q, "expect": [{"act": ACT, "art": "5"}]},
                                         ensure_ascii=False) for i, q in enumerate(INJECTIONS)), encoding="utf-8")
    done = run_cli("eval", str(good), "--json", env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["questions"]) == len(INJECTIONS)
    for record, where in [({"question": "x", "expect": [{"act": "DU/2024/1513'; DROP TABLE acts;--", "art": "1"}]}, "act"),
                          ({"question": "x", "expect": [{"act": ACT, "art": "1; DELETE FROM articles"}]}, "art"),
                          ({"question": "x", "expect": "'); DROP TABLE chunks;--"}, "expect")]:
        bad = tmp_path / f"bad-{where}.jsonl"
        bad.write_text(json.dumps(record) + "\n", encoding="utf-8")
        refused = run_cli("eval", str(bad), env=env, timeout=120)
        assert refused.returncode == 2, (where, refused.stderr)
        assert one_error(refused.stderr).startswith(f"Error: bad-{where}.jsonl:1: ")
    assert snapshot(url) == before


# --- keys are never printed ---------------------------------------------------------------------------

SECRET = "sk-secret-123"


def test_doctor_masks_the_answer_key_in_text_and_json(url: str, env: dict) -> None:
    keyed = {**env, "OPENROUTER_API_KEY": SECRET}
    text = run_cli("doctor", env=keyed, timeout=120)
    as_json = run_cli("doctor", "--json", env=keyed, timeout=120)
    answer = {c["name"]: c for c in json.loads(as_json.stdout)}["answer model"]
    # doctor calls OpenRouter: without internet (CI) it fails, and the failure must not show the key either.
    status = answer["status"]
    assert status in ("ok", "fail")
    for done in (text, as_json):
        assert done.returncode == (0 if status == "ok" else 1), done.stdout + done.stderr
        assert SECRET not in done.stdout + done.stderr
    line = f"[{'ok  ' if status == 'ok' else 'FAIL'}] answer model: model openai/gpt-4o-mini at https://openrouter.ai/api/v1, OPENROUTER_API_KEY=***"
    assert any(ln.startswith(line) for ln in text.stdout.splitlines()), text.stdout
    assert answer["detail"].startswith("model openai/gpt-4o-mini at https://openrouter.ai/api/v1, OPENROUTER_API_KEY=***")


def test_embedding_key_is_not_shown_by_status_or_doctor(url: str) -> None:
    keyed = {"DATABASE_URL": url, "EMBED_BACKEND": "openai", "EMBED_BASE_URL": "http://127.0.0.1:9/v1",
             "EMBED_MODEL": "bge-m3", "EMBED_API_KEY": "sk-embed-secret-777", "ANSWER_API_KEY": "sk-answer-secret-888",
             "ANSWER_BASE_URL": "http://127.0.0.1:9/v1"}
    outputs = [run_cli(*args, env=keyed, timeout=120) for args in (["db", "status"], ["db", "status", "--json"],
                                                                    ["doctor"], ["doctor", "--json"])]
    for done in outputs:
        assert "Traceback" not in done.stderr
        assert "sk-embed-secret-777" not in done.stdout + done.stderr
        assert "sk-answer-secret-888" not in done.stdout + done.stderr
    assert json.loads(outputs[1].stdout)["embedder"]["api_key_set"] is True


def test_ask_json_with_a_model_carries_no_key(env: dict) -> None:
    with ChatStandIn(f"Tak, musi [{ACT}, art. 5].", api_key=SECRET) as chat:
        keyed = {**env, "ANSWER_BASE_URL": chat.base_url, "ANSWER_API_KEY": SECRET, "OPENROUTER_API_KEY": "sk-or-other-1"}
        done = run_cli("ask", QUESTION, "--json", env=keyed, timeout=120)
        streamed = run_cli("ask", QUESTION, env=keyed, timeout=120)
    assert done.returncode == 0 and streamed.returncode == 0, done.stderr + streamed.stderr
    answer = json.loads(done.stdout)
    assert answer["answer"] == f"Tak, musi [{ACT}, art. 5]." and answer["citations"] == [{"citation": f"[{ACT}, art. 5]", "act": ACT, "article": "5", "official": True}]
    for out in (done.stdout + done.stderr, streamed.stdout + streamed.stderr):
        assert SECRET not in out and "sk-or-other-1" not in out
    # The OpenRouter key never went to another server; the server got the key meant for it.
    assert {r.headers["authorization"] for r in chat.requests} == {f"Bearer {SECRET}"}


# --- the read-only role ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reader(url: str):
    done = run_cli("db", "grant-reader", "reader1", "--password", "pw", env={"DATABASE_URL": url}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "role reader1 can read: current_versions, current_articles, version_articles, "
        "current_chunks, embedding_status, embedding_texts, thesaurus, act_currency, "
        "current_acts, lexeme_stats, corpus_stats, article_references, definitions, "
        "article_timelines, entry_rules, amendment_changes, delegations; and call: versions_as_of(), articles_as_of(), "
        "thesaurus_expansion(), search_terms(), search_tsquery(), search_chunks(), "
        "text_search_exact(), sparse_query()",
        "role reader1: statement timeout 10s, at most 20 connections, no temporary tables; the search functions "
        "run as pipeline_owner"]
    # The embedded server trusts local socket logins, so the password is not what is tested: the rights are.
    reader_url = url.replace("postgres:@", "reader1:pw@", 1)
    assert reader_url != url
    with psycopg.connect(reader_url, autocommit=True) as c:
        assert c.execute("SELECT current_user").fetchone()[0] == "reader1"
        yield c


@pytest.mark.parametrize("view", schema.READER_VIEWS)
def test_reader_can_select_the_documented_views(view: str, reader) -> None:
    n = reader.execute(f"SELECT count(*) FROM {view}").fetchone()[0]  # fixed names
    assert n > 0 or view in ("thesaurus", "amendment_changes")  # this corpus holds no amending act


def _sql_doc() -> str:
    """docs/sql.md, which holds the documented views and functions and the psql examples."""
    return (REPO / "docs" / "sql.md").read_text(encoding="utf-8")


def test_a_reader_without_a_password_is_told_it_cannot_log_in(url: str, reader) -> None:
    done = run_cli("db", "grant-reader", "reader2", env={"DATABASE_URL": url}, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("role reader2 can read: "), done.stderr
    assert done.stderr.strip() == ("note: reader2 cannot log in; give --password, "
                                   "or use it from another login with SET ROLE reader2")
    # Granted again without --password, a reader keeps the login its password gave it: no such note.
    again = run_cli("db", "grant-reader", "reader1", env={"DATABASE_URL": url}, timeout=120)
    assert again.returncode == 0 and again.stderr == "", again.stderr


@pytest.mark.parametrize(("role", "message"), [
    ("postgres", "role postgres is a superuser: it reads everything whatever is granted"),
    ("pg_monitor", "role name 'pg_monitor': names starting with pg_ are PostgreSQL's own roles"),
    ("PUBLIC", "role name 'PUBLIC': a name PostgreSQL reserves for roles"),
])
def test_grant_reader_refuses_roles_that_cannot_be_read_only(role: str, message: str, url: str) -> None:
    done = run_cli("db", "grant-reader", role, env={"DATABASE_URL": url}, timeout=120)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    with psycopg.connect(url) as c:  # the owner still reads its tables, and no role named after the keyword
        assert c.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
        assert c.execute("SELECT count(*) FROM pg_roles WHERE lower(rolname) = 'public'").fetchone()[0] == 0


def test_every_view_of_the_readme_table_is_granted() -> None:
    section = _sql_doc()
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    # Bare names are views or tables; functions are written with their arguments.
    documented = {name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)}
    assert "version_articles" in documented and "search_chunks" not in documented
    assert documented == set(schema.READER_VIEWS)


def test_the_readme_sql_examples_run_as_the_reader(reader, url: str) -> None:
    section = _sql_doc()
    block = section[section.index("```sql") + len("```sql"):]
    block = block[:block.index("```")]
    statements = [s.strip() for s in re.sub(r"--[^\n]*", "", block).split(";") if s.strip()]
    assert len(statements) >= 6
    with psycopg.connect(url) as admin:  # the query vector psql would be given (:'qvec'), from the stored ones
        model, vector = admin.execute("SELECT model, embedding::text FROM embeddings LIMIT 1").fetchone()
    for sql in statements:
        # :'qsp' (a sparse vector): this database's model has none stored, so the arm stays empty.
        # This database holds one act: the examples' Labour Code becomes it (a filter on an act not
        # stored is an error, not an empty answer).
        sql = sql.replace(":'qvec'", f"'{vector}'").replace(":'qsp'", "'{1:0.5}/16384'") \
            .replace("'multilingual-e5-small'", f"'{model}'").replace("'DU/2025/277'", f"'{ACT}'")
        reader.execute(sql).fetchall()  # InsufficientPrivilege on anything the role may not read


def test_the_pipeline_as_a_reader_says_it_needs_the_owner(reader, url: str) -> None:
    done = run_cli("search", "urlop", "--mode", "text", env={"DATABASE_URL": url.replace("postgres:@", "reader1:pw@", 1)},
                   timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("Error: the role in DATABASE_URL may not read the pipeline's tables "
                                          "(permission denied for table alembic_version)"), done.stderr


def test_reader_can_search_in_text_mode_and_as_of(reader) -> None:
    rows = reader.execute("SELECT eli, article, base_eli, version_no, valid_from FROM search_chunks("
                          "'adres elektroniczny usługodawcy', NULL, NULL, 5, NULL, NULL, false, 'text')").fetchall()
    assert len(rows) == 5 and {r[0] for r in rows} == {ACT}
    # Which text each hit is from, which a reader cannot look up in act_versions itself.
    assert {r[2:] for r in rows} == set(reader.execute(
        "SELECT base_eli, version_no, valid_from FROM current_versions WHERE eli = %s", (ACT,)).fetchall())
    assert reader.execute("SELECT count(*) FROM versions_as_of('2030-01-01')").fetchone()[0] == 1
    # The sparse arm's query function reads tables the role may not: it runs as its owner, and says that
    # this database's model has no sparse vectors (as search_chunks() would), not a NULL.
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="no sparse vectors for model bge-m3"):
        reader.execute("SELECT sparse_query('bge-m3', '{1:0.5}/4'::sparsevec)")


def test_a_role_not_granted_the_functions_cannot_run_them(url: str) -> None:
    """The definer-rights functions read every text for their caller: PostgreSQL lets any role (PUBLIC)
    execute a new function, so the interface takes that back; grant-reader gives them by name."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS stranger")
        admin.execute("CREATE ROLE stranger LOGIN")
        try:
            with psycopg.connect(url.replace("postgres:@", "stranger:@", 1), autocommit=True) as c:
                for sql in ("SELECT * FROM search_chunks('urlop', mode => 'text')", "SELECT * FROM versions_as_of()",
                            "SELECT * FROM text_search_exact('urlop')",
                            "SELECT sparse_query('bge-m3', '{1:0.5}/4'::sparsevec)"):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function"):
                        c.execute(sql)
        finally:
            admin.execute("DROP OWNED BY stranger")
            admin.execute("DROP ROLE stranger")


@pytest.mark.parametrize("sql", [
    "SELECT * FROM chunks", "SELECT * FROM acts", "SELECT * FROM act_versions", "SELECT * FROM articles",
    "SELECT * FROM embeddings", "SELECT * FROM embedding_queue", "SELECT * FROM ingest_runs",
    "SELECT * FROM alembic_version", "SELECT * FROM lexicon", "SELECT * FROM postings",
    "SELECT * FROM sparse_embeddings", "SELECT * FROM sparse_features", "SELECT * FROM sparse_models",
    "INSERT INTO acts (eli) VALUES ('DU/2000/1')", "UPDATE act_versions SET article_count = 0",
    "DELETE FROM chunks", "DELETE FROM thesaurus", "TRUNCATE acts", "INSERT INTO thesaurus DEFAULT VALUES",
    "DROP TABLE acts", "DROP VIEW current_chunks", "DROP FUNCTION versions_as_of(date)",
    "ALTER TABLE chunks ADD COLUMN x int", "CREATE TABLE public.mine (x int)",
    "SELECT refresh_search_stats()", "GRANT SELECT ON chunks TO reader1", "ALTER ROLE reader1 SUPERUSER",
])
def test_reader_cannot_read_tables_or_change_anything(sql: str, reader, url: str) -> None:
    before = snapshot(url)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        reader.execute(sql)
    assert snapshot(url) == before


ATTACK = """
CREATE OR REPLACE FUNCTION pg_temp.as_owner() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM set_config('attack.user', current_user, false); RETURN true; END $$;
CREATE TEMP VIEW corpus_stats AS SELECT 1 AS id, 1::float8 AS chunks, 1::float8 AS avg_length WHERE pg_temp.as_owner();
GRANT SELECT ON pg_temp.corpus_stats TO PUBLIC;
"""


def _attack(reader) -> str | None:
    """Shadow a table that search_chunks() reads with a temporary view that runs the reader's code."""
    reader.execute("DROP VIEW IF EXISTS pg_temp.corpus_stats")
    reader.execute("SELECT set_config('attack.user', '', false)")
    reader.execute(ATTACK)
    reader.execute("SELECT count(*) FROM search_chunks('usługa', NULL, NULL, 5, NULL, NULL, false, 'text')").fetchone()
    return reader.execute("SELECT current_setting('attack.user', true)").fetchone()[0] or None


def test_definer_functions_do_not_run_the_readers_code_as_their_owner(reader, url: str) -> None:
    """A reader has no temporary objects (grant-reader takes TEMPORARY away); given them, the fixed
    search_path still keeps them out, and without it the hijacked code would run as the owner role, which
    can only read, not as the superuser."""
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied to create temporary"):
        _attack(reader)
    # search_chunks() and the text arm it calls (which reads corpus_stats) each pin their search_path.
    chain = (SEARCH_CHUNKS, "search_text_arm")
    with psycopg.connect(url, autocommit=True) as owner:
        owner.execute("GRANT TEMPORARY ON DATABASE security TO reader1")
        saved = {fn: owner.execute(f"SELECT proconfig FROM pg_proc WHERE oid = '{fn}'::regproc").fetchone()[0]
                 for fn in chain}
        function_owner = owner.execute(f"SELECT proowner::regrole::text FROM pg_proc WHERE oid = '{SEARCH_CHUNKS}'::regproc"
                                       ).fetchone()[0]
        try:
            assert _attack(reader) is None  # search_chunks() never looked at pg_temp
            # Control: without their fixed search_path the same attack runs the reader's code as the owner role.
            for fn in chain:
                owner.execute(f"ALTER FUNCTION {fn} RESET search_path")
            try:
                assert _attack(reader) == function_owner == "pipeline_owner"
            finally:
                for fn in chain:
                    path = next(s for s in saved[fn] if s.startswith("search_path=")).split("=", 1)[1]
                    owner.execute(f"ALTER FUNCTION {fn} SET search_path = {path}")
            insecure = owner.execute("""SELECT oid::regprocedure::text FROM pg_proc
                                        WHERE prosecdef AND pronamespace = current_schema()::regnamespace
                                          AND NOT coalesce(proconfig, '{}') && ARRAY(
                                              SELECT 'search_path=pg_catalog, ' || current_schema() || ', pg_temp')""").fetchall()
            assert insecure == []  # every SECURITY DEFINER function pins its search_path: pg_catalog first (nothing shadows a built-in), pg_temp last
            assert _attack(reader) is None
        finally:
            reader.execute("DROP VIEW IF EXISTS pg_temp.corpus_stats")
            owner.execute("REVOKE TEMPORARY ON DATABASE security FROM reader1")


def test_reader_password_from_stdin_logs_in(url: str):
    """`--password-stdin` keeps the password out of `ps` and shell history, and it works."""
    done = run_cli("db", "grant-reader", "reader3", "--password-stdin", env={"DATABASE_URL": url}, input="s3cret pw\n",
                   timeout=120)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(url) as c:  # the embedded server trusts local logins: check the stored password itself
        assert c.execute("SELECT rolcanlogin, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = 'reader3'"
                         ).fetchone() == (True, True)
    login = psycopg.conninfo.make_conninfo(url, user="reader3", password="s3cret pw")
    with psycopg.connect(login) as c:
        assert c.execute("SELECT current_user").fetchone() == ("reader3",)
    both = run_cli("db", "grant-reader", "reader3", "--password", "x", "--password-stdin", input="y\n",
                   env={"DATABASE_URL": url}, timeout=120)
    assert both.returncode == 2 and "one way" in both.stderr
