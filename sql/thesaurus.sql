-- Colloquial-to-statutory thesaurus for the full-text arm (README: "Querying with SQL").
-- Rows with source = 'file' mirror pipeline/data/thesaurus.tsv (re-synced by `pipeline db upgrade`);
-- add your own with source = 'user' and they are kept.
CREATE TABLE IF NOT EXISTS thesaurus (
    term      text NOT NULL,           -- everyday word or phrase, matched on base forms
    expansion text NOT NULL,           -- statutory wording added to the query
    source    text NOT NULL DEFAULT 'user' CHECK (source IN ('file', 'user')),
    PRIMARY KEY (term, expansion)
);

-- The full-text query for a question: OR of the base forms of its words, plus the expansions of
-- every thesaurus term whose base forms all occur in it ("mama" -> "osoba bliska").
CREATE OR REPLACE FUNCTION search_tsquery(q text) RETURNS tsquery
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT polish_or_query(concat_ws(' ', q, (
        SELECT string_agg(t.expansion, ' ')
        FROM thesaurus t
        WHERE to_tsvector('polish', q) @@ plainto_tsquery('polish', t.term)
    )))
$$;
COMMENT ON FUNCTION search_tsquery(text) IS
    'Polish OR-query of a question''s base forms, expanded with the colloquial-to-statutory thesaurus.';
