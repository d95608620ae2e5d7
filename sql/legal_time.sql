-- Provision time (revision 0010; docs/sql.md): when each article of each stored text, and each of its
-- units, is the law, and why. Idempotent: applied with the rest of sql/ (before search.sql, which uses
-- articles_out_of_force(); pipeline.storage.schema.INTERFACE_FILES).

-- The Polish legal day of an instant, and today's: the date in Europe/Warsaw, whatever the server's or the
-- session's TimeZone (pipeline.core.clock is the same rule in Python). An act enters into force at the start
-- of a day in Poland: at 23:30 UTC in winter it is already the next day there. Every "NULL: today" of the
-- interface means legal_today(), never current_date. SQL-standard bodies: bound when created (no caller's
-- search_path reaches them) and inlined.
CREATE OR REPLACE FUNCTION legal_day(at timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (at AT TIME ZONE 'Europe/Warsaw')::date;
COMMENT ON FUNCTION legal_day(timestamptz) IS 'The Polish legal day of an instant: its date in Europe/Warsaw.';

CREATE OR REPLACE FUNCTION legal_today() RETURNS date
LANGUAGE sql STABLE PARALLEL SAFE
RETURN legal_day(now());
COMMENT ON FUNCTION legal_today() IS
    'Today as Polish law counts days (the date in Europe/Warsaw): what every date parameter left NULL means.';

-- Whether an article row whose times are (from_date, until_date) is in force on ``day``: true, false,
-- or NULL where the texts do not determine it (no from_date).
-- An SQL-standard body (RETURN): its operators are bound when it is created, so no caller's search_path
-- reaches it, and it is still inlined into the queries that call it per article row (a pinned
-- search_path would stop that: sql/security.sql).
CREATE OR REPLACE FUNCTION in_force_on(from_date date, until_date date, day date) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN until_date IS NOT NULL AND day >= until_date THEN false
            WHEN from_date IS NULL THEN NULL
            ELSE day >= from_date END;
COMMENT ON FUNCTION in_force_on(date, date, date) IS
    'true / false / NULL (undetermined): an article in force from from_date up to, not including, until_date, on day.';

-- The article rows of the given versions that are not in force on a day (not yet, or no longer): what
-- search_chunks() leaves out. Undetermined ones stay (a hit says so): a date is never guessed.
CREATE OR REPLACE FUNCTION articles_out_of_force(versions bigint[], day date) RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(t.article_id), '{}')
    FROM article_times t
    WHERE t.version_id = ANY (versions) AND NOT in_force_on(t.in_force_from, t.in_force_until, day)
$$;

-- The articles that are the law on a date: per base act its text as of that date (versions_as_of), and
-- of it the article rows in force that day (true) or whose date the texts leave undetermined (NULL).
CREATE OR REPLACE FUNCTION articles_as_of(as_of date DEFAULT NULL)
RETURNS TABLE (eli text, base_eli text, version_no integer, article text, wording smallint, ordinal integer,
               heading_path text[], text text, in_force boolean, in_force_from date, in_force_until date,
               in_force_undetermined text)
LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT v.eli, v.base_eli, v.version_no, ar.article, ar.wording, ar.ordinal, ar.heading_path, ar.text,
           in_force_on(t.in_force_from, t.in_force_until, coalesce(as_of, legal_today())),
           t.in_force_from, t.in_force_until, t.undetermined
    FROM versions_as_of(as_of) v
    JOIN articles ar USING (version_id)
    LEFT JOIN article_times t USING (article_id)
    WHERE NOT ar.repealed
      AND in_force_on(t.in_force_from, t.in_force_until, coalesce(as_of, legal_today())) IS DISTINCT FROM false
    ORDER BY v.eli, ar.ordinal
$$;
COMMENT ON FUNCTION articles_as_of(date) IS
    'The articles that are the law on a date (NULL: today): in force (in_force true) or undetermined (NULL), one wording each.';
REVOKE EXECUTE ON FUNCTION articles_as_of(date) FROM PUBLIC;

-- Every article's timeline, in every stored text.
CREATE OR REPLACE VIEW article_timelines AS
    SELECT v.eli, v.base_eli, v.version_no, ar.article, ar.wording, e.ordinal, e.kind, e.unit,
           e.from_date, e.until_date, e.determined, e.partial, e.source_act, e.source_unit, e.text,
           v.version_id
    FROM act_versions v
    JOIN articles ar USING (version_id)
    JOIN article_events e USING (article_id);
COMMENT ON VIEW article_timelines IS
    'The timeline of each article (each wording) of every stored text: when it and its units entered, their wordings, changes and repeals, by which act and unit.';
COMMENT ON COLUMN article_timelines.kind IS
    'enters, applies (final provisions), added, wording, amended, renumbered, repealed, loses_force (footnotes); docs/results.md.';
COMMENT ON COLUMN article_timelines.unit IS 'The unit: ''ust. 4'', ''§ 1 pkt 2'', ''ust. 2 zdanie drugie''; empty: the article.';
COMMENT ON COLUMN article_timelines.from_date IS 'From when (NULL: not given, or undetermined when determined is false).';
COMMENT ON COLUMN article_timelines.until_date IS 'Until when, not included (NULL: not given).';
COMMENT ON COLUMN article_timelines.source_act IS 'The act that made the change or set the date (ELI id, where its citation tells).';

-- The entry-into-force rules read from each text's final provisions.
CREATE OR REPLACE VIEW entry_rules AS
    SELECT v.eli, v.base_eli, v.version_no, coalesce(r.for_act, v.base_eli) AS act, r.for_act_title AS act_title,
           r.ordinal, r.source_article, r.article, r.unit, r.chapter, r.scope, r.verb, r.when_kind, r.when_text,
           r.when_date, r.clause
    FROM act_versions v
    JOIN provision_rules r USING (version_id);
COMMENT ON VIEW entry_rules IS
    'The "unit -> when" rules of each stored text''s final provisions, for its own act or another (act).';
COMMENT ON COLUMN entry_rules.when_kind IS
    'period (po upływie …), next_day, publication, date, next_month, next_year, other_act (the term another act sets), event, unknown.';
