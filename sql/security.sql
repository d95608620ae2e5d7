-- Which names the interface's functions see, and which role the definer-rights ones run as (docs/sql.md,
-- "Read-only access"). Applied last of sql/ (pipeline.storage.schema.INTERFACE_FILES), on every apply: a
-- CREATE OR REPLACE above resets a function's settings, and a function dropped and re-created there
-- (search_chunks, when its row type grows) belongs to whoever re-created it.

-- 1. A fixed search_path for every function of the interface: pg_catalog first (nothing shadows a built-in),
-- this schema, pg_temp last, whatever the caller's search_path says. Without it a definer-rights function
-- would run a caller's look-alike object with its owner's rights, and a helper would read a caller's own
-- "thesaurus" (or find nothing when called from another schema). Functions with an SQL-standard body
-- (RETURN / BEGIN ATOMIC: in_force_on, bm25_tf, bm25_idf, impact_share, impact_quantiles) bound their names
-- when they were created and need none; a pin would stop the planner inlining them into per-row queries.
DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN
        SELECT p.oid FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = ANY (ARRAY[
            -- definer rights: what a read-only role calls (pipeline db grant-reader)
            'versions_as_of', 'articles_as_of', 'search_chunks', 'text_search_exact', 'sparse_query',
            -- what they, the views and the pipeline call with the caller's rights
            'thesaurus_expansion', 'search_terms', 'search_tsquery', 'checked_query_text', 'polish_or_query',
            'amendment_in_force', 'articles_out_of_force', 'selected_versions', 'bm25_scores', 'postings_depths',
            'search_text_arm', 'refresh_search_stats', 'sparsevec_entries', 'wordings_not_on',
            -- triggers of revisions 0005 and 0008 (their other functions were pinned there)
            'chunks_search_stats', 'sparse_embeddings_immutable'])
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', fn, current_schema());
    END LOOP;
END
$$;

-- 2. The definer-rights functions belong to a role of their own that cannot log in and may only read the
-- tables they read: not to the superuser or the tables' owner, so that a flaw in one of them gives its
-- caller no more than that. Named after the role applying this: "pipeline_owner" for a superuser,
-- "pipeline_owner_<role>" for another, since a role that may act as the owner role reads whatever it is
-- granted, and a non-superuser's owner role is then granted only from that role's own tables.
-- Where the role cannot be created or used (a non-superuser without CREATEROLE, on a server someone else
-- runs), a WARNING says so and the functions keep their owner: the interface is applied all the same.
DO $$
DECLARE
    is_super boolean := (SELECT rolsuper FROM pg_roles WHERE rolname = current_user);
    owner_role name := CASE
        WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN 'pipeline_owner'
        WHEN octet_length('pipeline_owner_' || current_user) <= 63 THEN 'pipeline_owner_' || current_user
        ELSE 'pipeline_owner_' || md5(current_user) END;
    found_role pg_roles%ROWTYPE;
    lend_create boolean := false;
    fn regprocedure;
    -- Exactly what the definer-rights functions read: tables, and the views they read through (a view
    -- reads its tables with its own owner's rights). A function that reads another fails for a read-only
    -- role with "permission denied" (tests/test_reader_role.py calls each in every mode as one).
    readable text := 'acts, act_versions, articles, article_times, chunks, embeddings, embedding_models, '
                     'sparse_embeddings, sparse_models, sparse_features, lexicon, postings, thesaurus, '
                     'embedding_texts, lexeme_stats, corpus_stats, rebuilt_articles';
BEGIN
    SELECT * INTO found_role FROM pg_roles WHERE rolname = owner_role;
    IF NOT FOUND THEN
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN NOINHERIT', owner_role);
        EXCEPTION
            WHEN insufficient_privilege THEN
                RAISE WARNING 'the search functions stay owned by %: it may not create the role % (%); a superuser '
                              'can run CREATE ROLE % NOLOGIN; GRANT % TO %; then pipeline db upgrade',
                    current_user, owner_role, SQLERRM, owner_role, owner_role, current_user;
                RETURN;
            WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile by an upgrade of another database of this server
        END;
        SELECT * INTO found_role FROM pg_roles WHERE rolname = owner_role;
    END IF;
    IF found_role.rolcanlogin OR found_role.rolsuper OR found_role.rolcreaterole OR found_role.rolcreatedb
       OR found_role.rolreplication OR found_role.rolbypassrls THEN
        RAISE WARNING 'the search functions stay owned by %: role % exists and can log in or holds more than '
                      'reading (ALTER ROLE % NOLOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS, '
                      'then pipeline db upgrade)', current_user, owner_role, owner_role;
        RETURN;
    END IF;
    BEGIN
        IF NOT has_schema_privilege(owner_role, current_schema(), 'USAGE') THEN
            EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), owner_role);
        END IF;
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', current_schema(), owner_role);
        EXECUTE format('GRANT SELECT ON %s TO %I', readable, owner_role);
        IF NOT is_super THEN
            -- A non-superuser hands a function only to a role it may act as (and stays one, to replace the
            -- functions on the next apply), and only to one that may create in the schema (lent for the
            -- change, taken back below).
            IF NOT pg_has_role(current_user, owner_role, 'USAGE') THEN
                EXECUTE format('GRANT %I TO %I', owner_role, current_user);
                IF NOT pg_has_role(current_user, owner_role, 'USAGE') THEN
                    RAISE insufficient_privilege USING MESSAGE = format('%I does not inherit the rights of %I',
                                                                        current_user, owner_role);
                END IF;
            END IF;
            IF NOT has_schema_privilege(owner_role, current_schema(), 'CREATE') THEN
                EXECUTE format('GRANT CREATE ON SCHEMA %I TO %I', current_schema(), owner_role);
                lend_create := true;
            END IF;
        END IF;
        FOR fn IN SELECT p.oid FROM pg_proc p
                  WHERE p.prosecdef AND p.pronamespace = current_schema()::regnamespace
                    AND NOT EXISTS (SELECT 1 FROM pg_depend d  -- an extension's functions are its own
                                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
        LOOP
            EXECUTE format('ALTER FUNCTION %s OWNER TO %I', fn, owner_role);
        END LOOP;
        IF lend_create THEN
            EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM %I', current_schema(), owner_role);
        END IF;
    EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
        RAISE WARNING 'the search functions stay owned by %: it may not hand them to role % (%); a superuser can '
                      'run GRANT % TO %; then pipeline db upgrade', current_user, owner_role, SQLERRM, owner_role,
            current_user;
    END;
END
$$;

-- 3. What PostgreSQL lets every role (PUBLIC) call that writes, or waits, is closed in this database (docs/sql.md,
-- "Read-only access"): a read-only role held the writers' advisory locks (db upgrade and ingest waited, sync
-- exited 75, remove refused), slept past its statement timeout after SET statement_timeout = 0 (pg_sleep), and
-- wrote 40 MB of large objects a second (lo_from_bytea). Revoked from PUBLIC rather than from a reader by name:
-- a role keeps what PUBLIC holds. The advisory locks stay the writers' own: granted back by name to the roles
-- owning the pipeline's tables (a superuser needs no grant). Locks on rows of a table of the pipeline's
-- own would need no revoke, but a row lock ends with its transaction, and sync and the upgrade's backfill hold
-- theirs across commits; and the first migration takes its lock before any table exists.
-- A function's privileges are per database: other databases of the server keep PostgreSQL's defaults. Only a
-- superuser (or the functions' owner) may revoke them: another role gets a WARNING naming what to run.
-- Left open: set_config (SET, a command, does what it does), pg_cancel_backend / pg_terminate_backend (a
-- role's own sessions only), the replication-slot functions (REPLICATION only), lo_import / lo_export (the
-- server's files: superusers only already).
DO $$
DECLARE
    is_super boolean := (SELECT rolsuper FROM pg_roles WHERE rolname = current_user);
    closed regprocedure[] := ARRAY(
        SELECT p.oid FROM pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace AND (
            p.proname ~ '^pg_(try_)?advisory_'                                  -- wait, and make writers wait
            OR p.proname IN ('pg_sleep', 'pg_sleep_for', 'pg_sleep_until')       -- wait
            OR p.proname IN ('loread', 'lowrite')                                -- large objects: write to disk
            OR (p.proname LIKE 'lo\_%' AND p.proname NOT IN ('lo_import', 'lo_export'))
            OR p.proname IN ('pg_notify',                    -- the notification queue, on disk, up to 8 GB
                             'pg_logical_emit_message',      -- WAL, replicated to standbys
                             'txid_current', 'pg_current_xact_id'))  -- a transaction id each: a write
        ORDER BY p.oid);
    locks regprocedure[] := ARRAY(SELECT fn FROM unnest(closed) fn WHERE fn::text ~ '^pg_(try_)?advisory_');
    open_list text := (SELECT string_agg(fn::text, ', ') FROM unnest(closed) fn
                       WHERE has_function_privilege('public', fn, 'EXECUTE'));
    lock_list text := (SELECT string_agg(fn::text, ', ') FROM unnest(locks) fn);
    writer name;
BEGIN
    IF NOT is_super THEN
        IF open_list IS NOT NULL THEN
            RAISE WARNING 'every role of database % may still take the pipeline''s locks and call what writes or '
                          'waits (pg_advisory_lock, pg_sleep, lo_from_bytea …): only a superuser can take them from '
                          'PUBLIC; a superuser can run, in database %: REVOKE EXECUTE ON FUNCTION % FROM PUBLIC; '
                          'GRANT EXECUTE ON FUNCTION % TO %',
                current_database(), current_database(), open_list, lock_list, quote_ident(current_user);
        END IF;
        RETURN;
    END IF;
    -- The writers first: a non-superuser owner never goes without its locks.
    FOR writer IN SELECT DISTINCT r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
                  WHERE c.relnamespace = current_schema()::regnamespace AND NOT r.rolsuper
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', lock_list, writer);
    END LOOP;
    IF open_list IS NOT NULL THEN
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', open_list);
    END IF;
END
$$;
