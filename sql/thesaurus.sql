-- Colloquial-to-statutory thesaurus for the full-text arm (docs/sql.md).
-- Rows with source = 'file' mirror pipeline/data/thesaurus.tsv (re-synced by `pipeline db upgrade`);
-- add your own with source = 'user' and they are kept.
CREATE TABLE IF NOT EXISTS thesaurus (
    term      text NOT NULL,           -- everyday word or phrase, matched on base forms
    expansion text NOT NULL,           -- statutory wording added to the query
    source    text NOT NULL DEFAULT 'user' CHECK (source IN ('file', 'user')),
    PRIMARY KEY (term, expansion)
);
COMMENT ON TABLE thesaurus IS
    'Colloquial term -> statutory wording added to a question''s search (source: file = shipped, re-synced on upgrade; user = yours, kept).';

-- The longest text the search functions read (docs/sql.md): far above a question (the pipeline asks at most
-- MAX_QUESTION_CHARS, 5 000) and far below what costs seconds: the Polish dictionary reads ~150 kB/s, so one
-- 1 MB text held search_chunks() 6.5 s. Every function that reads a query's words checks it here first.
CREATE OR REPLACE FUNCTION checked_query_text(q text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF length(q) > 10000 THEN
        RAISE EXCEPTION 'query_text is % characters long; at most 10000 are read', length(q) USING ERRCODE = '22023';
    END IF;
    RETURN q;
END
$$;
COMMENT ON FUNCTION checked_query_text(text) IS
    'Internal: the query text, or invalid_parameter_value (22023) when it is longer than 10000 characters.';

-- Statutory wording for the colloquial terms of a question: the expansions of every thesaurus
-- term whose base forms all occur in it ("mama" -> "osoba bliska"). NULL when none applies.
-- Used by both arms: added to the full-text terms, and to the text whose vector is searched.
CREATE OR REPLACE FUNCTION thesaurus_expansion(q text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    words tsvector := to_tsvector('polish', checked_query_text(q));  -- read once, not once per thesaurus row
BEGIN
    RETURN (SELECT string_agg(DISTINCT t.expansion, ' ') FROM thesaurus t
            WHERE words @@ plainto_tsquery('polish', t.term));
END
$$;
COMMENT ON FUNCTION thesaurus_expansion(text) IS
    'Statutory expansions of the colloquial terms found in a question (thesaurus), or NULL.';

-- The words a question is searched with: base forms of its words and of its expansions.
CREATE OR REPLACE FUNCTION search_terms(q text) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT tsvector_to_array(to_tsvector('polish', concat_ws(' ', checked_query_text(q), thesaurus_expansion(q))))
$$;
COMMENT ON FUNCTION search_terms(text) IS
    'Base forms of a question''s words, expanded with the colloquial-to-statutory thesaurus.';

-- OR of the search terms (websearch_to_tsquery ANDs every word: natural questions match nothing).
-- NULL when the question has no searchable word.
CREATE OR REPLACE FUNCTION search_tsquery(q text) RETURNS tsquery
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT string_agg(quote_literal(term), ' | ')::tsquery FROM unnest(search_terms(q)) AS term
$$;
COMMENT ON FUNCTION search_tsquery(text) IS 'OR-query of search_terms(q), for @@ against chunks.tsv.';
