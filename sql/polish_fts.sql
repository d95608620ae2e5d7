-- Text search configuration "polish": Polish words reduced to base forms (urlopu -> urlop).
--
-- Safe to run repeatedly and inside a transaction (migrations call it).
-- With polish.dict/.affix/.stop in $SHAREDIR/tsearch_data (pipeline.storage.textsearch.install_dictionary
-- writes them) "polish" uses an ispell dictionary built from hunspell-pl; without them it falls back
-- to plain "simple" (no base forms, no stop words) so the product still works on a stock server,
-- e.g. the pgvector Docker image. Stored tsvectors built in one mode must be rebuilt after a switch.
--
-- The dictionary file name can be overridden with the setting pipeline.polish_dict_file
-- (tests use it to exercise the fallback without touching the server's files).

DO $$
DECLARE
    schema_oid oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    dict_file text := coalesce(nullif(current_setting('pipeline.polish_dict_file', true), ''), 'polish');
    ispell_ok boolean := false;
BEGIN
    -- A subtransaction: a missing or broken file rolls back only the dictionary, not the caller.
    BEGIN
        -- ispell checks stop words against its output (base forms), so "mam" -> "mama" would
        -- slip through; a simple dictionary with Accept = false drops stop words as typed.
        IF NOT EXISTS (SELECT 1 FROM pg_ts_dict
                       WHERE dictname = 'polish_stop' AND dictnamespace = schema_oid) THEN
            EXECUTE format('CREATE TEXT SEARCH DICTIONARY polish_stop '
                           '(TEMPLATE = simple, StopWords = %I, Accept = false)', dict_file);
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_ts_dict
                       WHERE dictname = 'polish_ispell' AND dictnamespace = schema_oid) THEN
            EXECUTE format('CREATE TEXT SEARCH DICTIONARY polish_ispell '
                           '(TEMPLATE = ispell, DictFile = %I, AffFile = %I)', dict_file, dict_file);
        END IF;
        -- Loads the files in this backend: an existing dictionary whose files vanished fails here.
        PERFORM ts_lexize('polish_stop', 'urlopu'), ts_lexize('polish_ispell', 'urlopu');
        ispell_ok := true;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'polish text search: ispell dictionary unavailable (%), using simple', SQLERRM;
    END;

    IF NOT EXISTS (SELECT 1 FROM pg_ts_config
                   WHERE cfgname = 'polish' AND cfgnamespace = schema_oid) THEN
        CREATE TEXT SEARCH CONFIGURATION polish (COPY = pg_catalog.simple);
    END IF;

    -- Words the ispell dictionary does not know (names, numbers-with-letters) pass on to simple.
    IF ispell_ok THEN
        ALTER TEXT SEARCH CONFIGURATION polish
            ALTER MAPPING FOR asciiword, word, asciihword, hword, hword_asciipart, hword_part
            WITH polish_stop, polish_ispell, pg_catalog.simple;
    ELSE
        ALTER TEXT SEARCH CONFIGURATION polish
            ALTER MAPPING FOR asciiword, word, asciihword, hword, hword_asciipart, hword_part
            WITH pg_catalog.simple;
    END IF;
END
$$;

-- OR of all lexemes of a natural question: websearch_to_tsquery ANDs every word, which matches
-- almost nothing for questions like "Ile dni urlopu mi przysługuje?". Rank with ts_rank_cd.
-- NULL when the text has no searchable words (instead of an empty query plus a NOTICE).
CREATE OR REPLACE FUNCTION polish_or_query(q text) RETURNS tsquery
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT string_agg(quote_literal(t.lexeme), ' | ')::tsquery
    FROM unnest(to_tsvector('polish', q)) AS t
$$;
