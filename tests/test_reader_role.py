"""The read-only SQL role (`pipeline db grant-reader`) and the functions it calls, as an attacker or a careless
client would meet them: its statement timeout and connection limit, no temporary tables, the definer-rights
functions owned by a role that cannot log in and reads only what they read, helpers whose search_path a
caller cannot change, and every bad argument an error with the documented SQLSTATE (docs/sql.md).

The database is this module's own (one act, embedded with the stand-in model, sparse head included); the
roles are the server's, so their names start with rr_.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import psycopg
import pytest
from embedding_stand_in import StandInEmbedder
from support.cli import run_cli
from support.corpus import embed_in_bulk, ingestion
from support.database import create_database
from support.paths import require_mirror

from pipeline.storage import db, derived, schema, store

ACT = "DU/2024/1513"  # e-services act, HTML, 35 articles
READER = "rr_reader"
OWNER = "pipeline_owner"  # the tests' server runs the pipeline as its superuser (sql/security.sql)
# What the definer-rights functions read, and nothing else (sql/security.sql).
OWNER_READS = {"acts", "act_versions", "articles", "article_times", "chunks", "embeddings", "embedding_models",
               "sparse_embeddings", "sparse_models", "sparse_features", "lexicon", "postings", "thesaurus",
               "embedding_texts", "lexeme_stats", "corpus_stats", "rebuilt_articles"}


@pytest.fixture(scope="module")
def url(server_url) -> str:
    url = create_database(server_url, "reader_role")
    embedder = StandInEmbedder(sparse=True)
    with db.connect(url) as c, ingestion(c, url, model=embedder.name, archive_dir=Path("/nonexistent")) as run:
        assert run.act(ACT, source_dir=require_mirror()).status == "new"
        embed_in_bulk(c, embedder)
    return url


def as_role(url: str, role: str) -> str:
    """``url`` logging in as ``role`` (the embedded server trusts local logins: the rights are what is tested)."""
    return psycopg.conninfo.make_conninfo(url, user=role, password="pw")


@pytest.fixture(scope="module")
def granted(url):
    """The reader, granted through the CLI as a user would, with a short timeout and few connections."""
    done = run_cli("db", "grant-reader", READER, "--password", "pw", "--statement-timeout", "1500ms",
                   "--connection-limit", "3", env={"DATABASE_URL": url}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (f"role {READER}: statement timeout 1500ms, at most 3 connections, no "
                                           f"temporary tables; the search functions run as {OWNER}")
    # PostgreSQL gives TEMPORARY to PUBLIC: the first reader takes it away, and says so.
    assert done.stderr.strip() == ("note: TEMPORARY on database reader_role is now revoked from PUBLIC (every role "
                                   "had it): grant it by name to a role that needs temporary tables here (GRANT "
                                   "TEMPORARY ON DATABASE reader_role TO …)")
    return done


@pytest.fixture(scope="module")
def reader(url, granted):
    with psycopg.connect(as_role(url, READER), autocommit=True) as c:
        assert c.execute("SELECT current_user").fetchone()[0] == READER
        yield c


# --- the role's own settings ----------------------------------------------------------------------------

def test_the_reader_has_a_statement_timeout_and_a_connection_limit(reader, url) -> None:
    assert reader.execute("SHOW statement_timeout").fetchone()[0] == "1500ms"
    started = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
        reader.execute("SELECT count(*) FROM generate_series(1, 30000) a, generate_series(1, 30000) b")  # ~30 s
    assert time.monotonic() - started < 10
    with psycopg.connect(url) as admin:
        assert admin.execute("SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (READER,)).fetchone()[0] == 3
        # In this database only: the role reads other databases under other rules.
        assert admin.execute("SELECT setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                             "FROM pg_db_role_setting WHERE setrole = %s::regrole", (READER,)).fetchone() == (True,)
    with psycopg.connect(as_role(url, READER)), psycopg.connect(as_role(url, READER)):  # 3 with the fixture's
        with pytest.raises(psycopg.OperationalError, match=f"too many connections for role \"{READER}\""):
            psycopg.connect(as_role(url, READER)).close()


def test_the_python_api_takes_the_limits_as_keywords(url) -> None:
    granted = schema.grant_reader(url, "rr_api_reader", "pw", statement_timeout=2.5, connection_limit=5)
    assert (granted["statement_timeout"], granted["connection_limit"], granted["owner_role"]) == ("2500ms", 5, OWNER)
    assert granted["notes"] == []  # TEMPORARY was taken from PUBLIC by the first reader
    with psycopg.connect(as_role(url, "rr_api_reader")) as c:
        assert c.execute("SHOW statement_timeout").fetchone()[0] == "2500ms"
    with psycopg.connect(url) as admin:
        assert admin.execute("SELECT rolconnlimit, rolcanlogin FROM pg_roles WHERE rolname = 'rr_api_reader'"
                             ).fetchone() == (5, True)


@pytest.mark.parametrize(("args", "message"), [
    (["--statement-timeout", "5"], "Error: Invalid value for --statement-timeout: statement timeout '5': give a "
                                   "number and a unit (500ms, 5s, 2min, 1h)"),
    (["--statement-timeout", "0s"], "Error: Invalid value for --statement-timeout: statement timeout '0s': from "
                                    "1ms to 24h"),
    (["--statement-timeout", "25h"], "Error: Invalid value for --statement-timeout: statement timeout '25h': from "
                                     "1ms to 24h"),
    (["--connection-limit", "0"], "Error: Invalid value for '--connection-limit': 0 is not in the range 1<=x<=10000."),
])
def test_bad_limits_are_one_line_errors(args: list[str], message: str, url: str) -> None:
    done = run_cli("db", "grant-reader", "rr_never", *args, env={"DATABASE_URL": url}, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr, done.stderr
    with psycopg.connect(url) as admin:
        assert admin.execute("SELECT count(*) FROM pg_roles WHERE rolname = 'rr_never'").fetchone()[0] == 0


def test_the_reader_cannot_create_temporary_objects(reader, url) -> None:
    for statement in ("CREATE TEMP TABLE mine (x int)", "CREATE TEMP VIEW mine AS SELECT 1",
                      "CREATE FUNCTION pg_temp.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied to create temporary"):
            reader.execute(statement)
    with psycopg.connect(url) as admin:  # the roles owning the tables keep it, by name
        assert admin.execute("SELECT has_database_privilege('public', current_database(), 'TEMPORARY')"
                             ).fetchone()[0] is False


# --- the security probe's moves (issue 49): nothing a reader calls writes, or waits ----------------------

def test_the_reader_cannot_take_the_writers_locks(reader, url) -> None:
    """A reader holding these kept db upgrade and ingest waiting, sync exiting 75 and remove refusing."""
    keys = {"upgrade": schema.UPGRADE_LOCK, "sync": store.SYNC_LOCK, "act": store.lock_key(ACT),
            "derived data": derived.REFRESH_LOCK}
    for key in keys.values():
        for call in ("pg_advisory_lock(%s)", "pg_try_advisory_lock(%s)", "pg_advisory_lock_shared(%s)",
                     "pg_try_advisory_lock_shared(%s)", "pg_advisory_xact_lock(%s)", "pg_try_advisory_xact_lock(%s)",
                     "pg_advisory_xact_lock_shared(%s)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function pg_"):
                reader.execute(f"SELECT {call}", (key,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the two-key form too
            reader.execute("SELECT pg_try_advisory_lock(%s, %s)", (key >> 32, key & 0x7FFFFFFF))
    with psycopg.connect(url) as writer:  # the pipeline's own role still takes them
        assert all(writer.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0] for key in keys.values())


def test_the_reader_cannot_sleep_past_its_timeout(reader) -> None:
    """PostgreSQL lets every role SET its statement_timeout (a role's setting is a default): what the reader
    can no longer do is wait. SET statement_timeout = 0; SELECT pg_sleep(11.5) ran past the 10 s limit."""
    reader.execute("SET statement_timeout = 0")
    try:
        for call in ("pg_sleep(11.5)", "pg_sleep_for('11.5 s')", "pg_sleep_until(now() + interval '11.5 s')"):
            started = time.monotonic()
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function pg_sleep"):
                reader.execute(f"SELECT {call}")
            assert time.monotonic() - started < 1.0
    finally:
        reader.execute("RESET statement_timeout")


@pytest.mark.parametrize("call", [
    "lo_from_bytea(0, repeat('x', 1000)::bytea)", "lo_creat(-1)", "lo_create(0)", "lo_put(1, 0, '\\x00')",
    "lo_open(1, 131072)", "lowrite(0, '\\x00')", "lo_unlink(1)",  # large objects: on disk, replicated
    "pg_notify('rr', 'x')",  # the notification queue, on disk
    "pg_logical_emit_message(false, 'rr', 'x')",  # WAL
    "txid_current()", "pg_current_xact_id()",  # a transaction id each
])
def test_the_reader_cannot_write_through_a_function(call: str, reader) -> None:
    """lo_from_bytea wrote 40 MB a second as the reader."""
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function"):
        reader.execute(f"SELECT {call}")


def test_nothing_the_reader_may_call_writes_or_waits(reader) -> None:
    """Every function of PostgreSQL's of the kinds closed to a reader, as the reader sees them: new ones in a
    later PostgreSQL (another pg_sleep_…, lo_…) fail here."""
    callable_ = reader.execute(r"""
        SELECT p.oid::regprocedure::text FROM pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace AND has_function_privilege(p.oid, 'EXECUTE')
          AND (p.proname ~ '^(pg_(try_)?advisory_|pg_sleep|lo_|loread|lowrite|pg_notify|pg_logical_emit|dblink)'
               OR p.proname IN ('txid_current', 'pg_current_xact_id'))
        ORDER BY 1""").fetchall()
    assert callable_ == []


def test_the_reader_has_an_idle_transaction_timeout_and_a_temporary_file_limit(reader) -> None:
    """An open transaction holds its locks (a migration's ALTER waits behind it) and old rows from VACUUM;
    a sort spilled to disk filled it. The temporary file limit is a superuser's setting: the reader cannot
    lift it."""
    assert reader.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == "1min"
    assert reader.execute("SHOW temp_file_limit").fetchone()[0] == "1GB"
    for value in ("-1", "'2GB'"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match='permission denied to set parameter "temp_file'):
            reader.execute(f"SET temp_file_limit = {value}")


def test_the_reader_cannot_keep_its_locks_past_its_session(url, granted) -> None:
    """A prepared transaction keeps its locks (a migration's ALTER waits behind them) with no session and
    under no timeout: refused while max_prepared_transactions is 0, PostgreSQL's default (docs/sql.md)."""
    with psycopg.connect(as_role(url, READER)) as c:
        c.execute("SELECT 1 FROM current_articles LIMIT 1")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="prepared transactions are disabled"):
            c.execute("PREPARE TRANSACTION 'rr_held'")


def test_the_owner_role_cannot_be_made_a_reader(url) -> None:
    done = run_cli("db", "grant-reader", OWNER, env={"DATABASE_URL": url}, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"role {OWNER} owns the pipeline's tables or functions" in done.stderr


# --- who the definer-rights functions run as -------------------------------------------------------------

def test_definer_functions_belong_to_a_role_that_cannot_log_in_and_only_reads(url, reader) -> None:
    with psycopg.connect(url) as admin:
        owners = admin.execute("SELECT oid::regprocedure::text, proowner::regrole::text FROM pg_proc "
                               "WHERE prosecdef AND pronamespace = current_schema()::regnamespace").fetchall()
        assert {name.split("(")[0] for name, _ in owners} == {"versions_as_of", "articles_as_of", "search_chunks",
                                                              "text_search_exact", "sparse_query"}
        assert {owner for _, owner in owners} == {OWNER}
        assert admin.execute("SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolinherit FROM pg_roles "
                             "WHERE rolname = %s", (OWNER,)).fetchone() == (False, False, False, False, False)
        rights = admin.execute("""
            SELECT c.relname, p.privilege FROM pg_class c
            CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(privilege)
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
              AND has_table_privilege(%s, c.oid, p.privilege)""", (OWNER,)).fetchall()
        assert {privilege for _, privilege in rights} == {"SELECT"}
        assert {table for table, _ in rights} == OWNER_READS
        assert not admin.execute("SELECT has_schema_privilege(%s, current_schema(), 'CREATE')", (OWNER,)).fetchone()[0]
        assert not admin.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (READER, OWNER)).fetchone()[0]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        reader.execute(f"SET ROLE {OWNER}")
    _every_definer_function_runs(reader, url)


def _every_definer_function_runs(reader, url: str) -> None:
    """Each definer-rights function, in every mode, for the reader: were the owner role denied a table one
    of them reads, this would be "permission denied"."""
    with psycopg.connect(url) as admin:
        model, vector = admin.execute("SELECT model, embedding::text FROM embeddings LIMIT 1").fetchone()
        sparse = admin.execute("SELECT embedding::text FROM sparse_embeddings LIMIT 1").fetchone()[0]
        as_of = admin.execute("SELECT valid_from FROM act_versions").fetchone()[0]
        articles = admin.execute("SELECT count(*) FROM articles_as_of(NULL)").fetchone()[0]
    call = ("SELECT count(*) FROM search_chunks('adres elektroniczny usługodawcy', %s::vector, %s, k => 5, "
            "acts => %s, as_of => %s, mode => %s, fusion => %s, query_sparse => %s::sparsevec)")
    for mode in ("hybrid", "vector", "text", "sparse"):
        for fusion in ("rrf", "convex"):
            for acts, day in ((None, None), ([ACT], as_of)):
                n = reader.execute(call, (vector, model, acts, day, mode, fusion, sparse)).fetchone()[0]
                assert n > 0, (mode, fusion, acts)
    assert reader.execute("SELECT count(*) FROM text_search_exact('adres elektroniczny', 5)").fetchone()[0] == 5
    assert reader.execute("SELECT sparse_query(%s, %s::sparsevec) IS NOT NULL", (model, sparse)).fetchone()[0]
    assert reader.execute("SELECT count(*) FROM versions_as_of(NULL)").fetchone()[0] == 1
    assert reader.execute("SELECT count(*) FROM articles_as_of(NULL)").fetchone()[0] == articles > 0


# --- search_path ---------------------------------------------------------------------------------------

def test_every_function_of_the_interface_resolves_names_in_a_fixed_search_path(url) -> None:
    """Pinned (proconfig), or an SQL-standard body whose names were bound when it was created."""
    with psycopg.connect(url) as admin:
        loose = admin.execute("""
            SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
            WHERE p.pronamespace = current_schema()::regnamespace AND l.lanname IN ('sql', 'plpgsql')
              AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                              AND d.deptype = 'e')
              AND p.prosqlbody IS NULL
              AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) s WHERE s LIKE 'search\\_path=%%')""").fetchall()
        assert loose == []
        pins = dict(admin.execute("SELECT proname, array_to_string(proconfig, ';') FROM pg_proc "
                                  "WHERE proname IN ('thesaurus_expansion', 'search_terms', 'search_tsquery') "
                                  "AND pronamespace = current_schema()::regnamespace").fetchall())
    assert pins == dict.fromkeys(("thesaurus_expansion", "search_terms", "search_tsquery"),
                                 "search_path=pg_catalog, public, pg_temp")


@pytest.fixture()
def hostile_schema(url):
    """A schema of another role's, readable by every role, with look-alikes of what the helpers call."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("DROP SCHEMA IF EXISTS rr_evil CASCADE")
        admin.execute("DROP ROLE IF EXISTS rr_mallory")
        admin.execute("CREATE ROLE rr_mallory")
        admin.execute("CREATE SCHEMA rr_evil AUTHORIZATION rr_mallory")
        admin.execute("SET ROLE rr_mallory")
        admin.execute("GRANT USAGE ON SCHEMA rr_evil TO PUBLIC")
        admin.execute("CREATE TABLE rr_evil.thesaurus AS SELECT 'adres'::text AS term, 'zzhijack'::text AS expansion")
        admin.execute("GRANT SELECT ON rr_evil.thesaurus TO PUBLIC")
        admin.execute("CREATE FUNCTION rr_evil.thesaurus_expansion(q text) RETURNS text LANGUAGE sql "
                      "AS $$SELECT 'zzhijack'$$")
        admin.execute("RESET ROLE")
        try:
            yield "rr_evil"
        finally:
            admin.execute("DROP SCHEMA rr_evil CASCADE")
            admin.execute("DROP ROLE rr_mallory")


def test_a_hostile_search_path_changes_no_result(reader, url, hostile_schema: str) -> None:
    question = "adres elektroniczny usługodawcy"
    calls = ["SELECT public.search_terms(%(q)s)", "SELECT public.search_tsquery(%(q)s)::text",
             "SELECT coalesce(public.thesaurus_expansion(%(q)s), '')",
             "SELECT array_agg(chunk_id ORDER BY score DESC, chunk_id) FROM public.search_chunks(%(q)s, mode => 'text')",
             "SELECT array_agg(chunk_id) FROM public.text_search_exact(%(q)s, 5)"]

    def results() -> list:
        return [reader.execute(sql, {"q": question}).fetchone()[0] for sql in calls]

    reader.execute("RESET search_path")
    expected = results()
    assert "zzhijack" not in str(expected)
    reader.execute(f"SET search_path = {hostile_schema}, pg_catalog, public")
    try:
        assert results() == expected
        # Control: without its pinned search_path, search_terms() takes the hostile schema's expansion.
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("ALTER FUNCTION search_terms(text) RESET search_path")
            try:
                assert "zzhijack" in results()[0]
            finally:
                admin.execute("ALTER FUNCTION search_terms(text) SET search_path = pg_catalog, public, pg_temp")
        assert results() == expected
    finally:
        reader.execute("RESET search_path")


# --- bad arguments: the documented SQLSTATE --------------------------------------------------------------

BIG = "urlop " * 200_000  # 1.2 MB: the Polish dictionary took search_chunks() 6.5 s over one like it


BAD_ARGUMENTS = [
    ("SELECT * FROM search_chunks('urlop', mode => 'text', k => -1)", "k must be between 1 and 1000, not -1"),
    ("SELECT * FROM search_chunks('urlop', mode => 'text', k => 0)", "k must be between 1 and 1000, not 0"),
    ("SELECT * FROM search_chunks('urlop', mode => 'text', k => 2147483647)", "k must be between 1 and 1000"),
    ("SELECT * FROM search_chunks('urlop', mode => 'text', k => NULL)", "k must be between 1 and 1000, not NULL"),
    ("SELECT * FROM search_chunks('urlop', mode => 'text', fetch_k => -5)", "fetch_k must be between 1 and 10000"),
    ("SELECT * FROM search_chunks('urlop', mode => 'text', rrf_k => -1)", "rrf_k must be between 0 and 100000"),
    ("SELECT * FROM search_chunks('urlop', mode => NULL)", "mode must be hybrid, vector, text or sparse, not NULL"),
    ("SELECT * FROM search_chunks('urlop', mode => 'text', text_weight => 'NaN')", "must be finite numbers"),
    ("SELECT * FROM search_chunks(NULL, mode => 'text')", "text search needs a query_text with a word in it, not NULL"),
    ("SELECT * FROM search_chunks('', mode => 'text')", "text search needs a query_text with a word in it, not a blank"),
    ("SELECT * FROM search_chunks(' \t\n', mode => 'text')", "needs a query_text with a word in it, not a blank"),
    # hybrid: the text is checked before the missing vector
    ("SELECT * FROM search_chunks(NULL)", "hybrid search needs a query_text with a word in it, not NULL"),
    ("SELECT * FROM text_search_exact(NULL)", "text search needs a query_text with a word in it, not NULL"),
    ("SELECT * FROM text_search_exact('', 5)", "text search needs a query_text with a word in it, not a blank"),
    ("SELECT * FROM text_search_exact('urlop', -1)", "k must be between 1 and 1000, not -1"),
    ("SELECT * FROM search_chunks(repeat('a', 10001), mode => 'text')", "query_text is 10001 characters long"),
    # in every mode, though only the text arm reads it
    ("SELECT * FROM search_chunks(repeat('a', 10001), '[1,0]'::vector, 'x', mode => 'vector')",
     "query_text is 10001 characters long"),
]


def test_every_bad_argument_is_invalid_parameter_value(reader) -> None:
    """Each documented bad argument (docs/sql.md) raises SQLSTATE 22023 with its message: none is an empty
    answer, an overflow (22003) or a statement left to the timeout."""
    wrong = []
    for sql, message in BAD_ARGUMENTS:
        try:
            reader.execute(sql).fetchall()
            wrong.append((sql, "no error"))
        except psycopg.Error as exc:
            if exc.sqlstate != "22023" or message not in str(exc):
                wrong.append((sql, exc.sqlstate, str(exc)))
    assert wrong == []
    # The longest text read is searched.
    assert reader.execute("SELECT count(*) FROM search_chunks(%s, mode => 'text')", (("adres elektroniczny " * 600)[:10000],)
                          ).fetchone()[0] > 0


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM search_chunks(%s, mode => 'text')", "SELECT count(*) FROM text_search_exact(%s)",
    "SELECT thesaurus_expansion(%s)", "SELECT search_terms(%s)", "SELECT search_tsquery(%s)",
])
def test_a_megabyte_query_is_refused_at_once(sql: str, reader) -> None:
    started = time.monotonic()
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="query_text is 1200000 characters long; at most 10000"):
        reader.execute(sql, (BIG,))
    assert time.monotonic() - started < 1.0


# --- a pipeline role that is not a superuser -------------------------------------------------------------

def test_a_role_that_may_not_create_roles_migrates_and_keeps_the_functions(server_url, caplog) -> None:
    """DATABASE_URL to a server someone else runs: the pipeline's role owns its database and tables but may
    not create roles. The interface is applied all the same, with a warning, the functions staying its own;
    once it may (CREATEROLE), the next apply hands them to an owner role of its own."""
    role = "rr_pipeline"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "rr_external" WITH (FORCE)')
        admin.execute(f"DROP ROLE IF EXISTS pipeline_owner_{role}")
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEROLE")
        admin.execute(f'CREATE DATABASE "rr_external" OWNER {role}')
    external = server_url.replace("/postgres?", "/rr_external?")
    with psycopg.connect(external, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")  # pgvector is not a trusted extension: the server's admin adds it
    url = external.replace("postgres:@", f"{role}:@", 1)  # a URL: alembic's engine reads it too
    with caplog.at_level(logging.WARNING, logger="pipeline.storage.schema"):
        schema.upgrade(url)
    warned = [r.getMessage() for r in caplog.records if r.name == "pipeline.storage.schema"]
    assert warned[0] == (f"warning: the search functions stay owned by {role}: it may not create the role "
                         f"pipeline_owner_{role} (permission denied to create role); a superuser can run CREATE ROLE "
                         f"pipeline_owner_{role} NOLOGIN; GRANT pipeline_owner_{role} TO {role}; then pipeline db "
                         "upgrade")
    assert len(warned) == 2 and warned[1].startswith(CANNOT_CLOSE), warned
    owners = "SELECT DISTINCT proowner::regrole::text FROM pg_proc WHERE prosecdef AND pronamespace = 'public'::regnamespace"
    with psycopg.connect(url) as c:
        assert c.execute(owners).fetchall() == [(role,)]
        assert c.execute("SELECT count(*) FROM search_chunks('urlop', mode => 'text')").fetchone()[0] == 0
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"ALTER ROLE {role} CREATEROLE")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.storage.schema"):
        assert schema.apply_interface(url, force=True)
        assert schema.apply_interface(url, force=True)  # and again, now as a member of the owner role
    # Only a superuser may close PostgreSQL's functions: the role is told what to have one run.
    warned = [r.getMessage() for r in caplog.records if r.name == "pipeline.storage.schema"]
    assert len(warned) == 2 and warned[0] == warned[1] and warned[0].startswith("warning: every role of database")
    with psycopg.connect(url) as c:
        assert c.execute(owners).fetchall() == [(f"pipeline_owner_{role}",)]
        assert c.execute("SELECT rolcanlogin, has_schema_privilege(rolname, 'public', 'CREATE') FROM pg_roles "
                         "WHERE rolname = %s", (f"pipeline_owner_{role}",)).fetchone() == (False, False)
        assert c.execute("SELECT count(*) FROM search_chunks('urlop', mode => 'text')").fetchone()[0] == 0
    # A superuser runs what the warning says; the role's writers keep their locks, a reader has none.
    statements = warned[0].removeprefix(CANNOT_CLOSE)
    revoke, grant = statements.split("; ")
    assert revoke.startswith("REVOKE EXECUTE ON FUNCTION ") and revoke.endswith(" FROM PUBLIC")
    assert {"pg_advisory_lock(bigint)", "pg_sleep(double precision)", "lo_from_bytea(oid,bytea)"} <= set(
        revoke.removeprefix("REVOKE EXECUTE ON FUNCTION ").removesuffix(" FROM PUBLIC").split(", "))
    assert grant.startswith("GRANT EXECUTE ON FUNCTION pg_") and grant.endswith(f" TO {role}")
    with psycopg.connect(external, autocommit=True) as admin:
        admin.execute(statements)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.storage.schema"):
        schema.upgrade(url, force_interface=True)  # the migrations' lock, the interface's, the backfill's
    assert [r for r in caplog.records if r.name == "pipeline.storage.schema"] == []
    with psycopg.connect(url) as writer:
        assert writer.execute("SELECT pg_try_advisory_lock(%s), pg_try_advisory_xact_lock(%s)",
                              (store.SYNC_LOCK, store.lock_key(ACT))).fetchone() == (True, True)
    granted = schema.grant_reader(url, "rr_external_reader", "pw")
    assert granted["notes"][0] == ("rr_external_reader may write temporary files without limit (a sort spilled to "
                                   "disk): only a superuser can run ALTER ROLE rr_external_reader IN DATABASE "
                                   "rr_external SET temp_file_limit = '1GB'")
    with psycopg.connect(as_role(external, "rr_external_reader")) as c:
        for call in (f"pg_try_advisory_lock({store.SYNC_LOCK})", "pg_sleep(0)", "lo_creat(-1)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(f"SELECT {call}")
            c.rollback()


CANNOT_CLOSE = ("warning: every role of database rr_external may still take the pipeline's locks and call what "
                "writes or waits (pg_advisory_lock, pg_sleep, lo_from_bytea …): only a superuser can take them from "
                "PUBLIC; a superuser can run, in database rr_external: ")
