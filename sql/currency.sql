-- Public read interface for the currency of acts (docs/sql.md). Idempotent.
-- Applied right after views.sql (pipeline.storage.schema.INTERFACE_FILES); its views read the columns
-- added by revision 0004, which holds the snapshot it shipped with.

-- When an amending act's change takes effect (revision 0010), from what is stored, best first: the
-- amending act's own text (the earliest day an article of it is in force, by its final provisions), its
-- record's entry into force, the base act's record ("Akty zmieniające" dates each amendment by when it
-- takes effect), or the amendment's own date where that is what it gives. NULL: none says.
CREATE OR REPLACE FUNCTION amendment_in_force(amendment jsonb, base_act text, own_act text)
RETURNS TABLE (in_force_from date, source text)
LANGUAGE sql STABLE AS $$
    SELECT d, s FROM (
        SELECT 1 AS rank, t.states_from AS d, 'amending_text' AS s
        FROM act_versions v JOIN version_times t USING (version_id)
        WHERE v.eli = amendment ->> 'eli' AND t.states_from IS NOT NULL
        UNION ALL
        SELECT 2, m.entry_into_force, 'amending_record' FROM acts m
        WHERE m.eli = amendment ->> 'eli' AND m.entry_into_force IS NOT NULL
        UNION ALL
        SELECT 3, (r ->> 'date')::date, 'base_record' FROM acts b
        CROSS JOIN jsonb_array_elements(coalesce(b.meta -> 'references' -> 'Akty zmieniające', '[]')) r
        WHERE b.eli = base_act AND base_act <> own_act AND r ->> 'id' = amendment ->> 'eli'
          AND (r ->> 'date') ~ '^\d{4}-\d{2}-\d{2}$'
        UNION ALL
        SELECT 4, (amendment ->> 'date')::date, 'record'
        WHERE amendment ->> 'date_of' = 'entry_into_force' AND amendment ->> 'date' IS NOT NULL
    ) found ORDER BY rank, d LIMIT 1
$$;

CREATE OR REPLACE VIEW act_currency AS
    SELECT a.eli, a.base_eli, a.title, a.act_type, a.status, a.in_force,
           v.version_no, v.valid_from AS text_as_of,
           a.legal_status_date, a.expiration_date, a.change_date, a.checked_at,
           a.amended_after,
           jsonb_array_length(a.amended_after) AS amendments_after,
           EXISTS (SELECT 1 FROM versions_as_of(NULL) c WHERE c.eli = a.eli) AS is_current,
           -- Revision 0010: amended_after with when each change takes effect, where that is stored.
           -- (An empty list stays one: "no amendment after the text", not NULL, "the record says nothing".)
           (SELECT coalesce(jsonb_agg(e || jsonb_build_object('in_force_from', f.in_force_from,
                                                              'in_force_source', f.source) ORDER BY n), '[]')
            FROM jsonb_array_elements(a.amended_after) WITH ORDINALITY x(e, n)
            LEFT JOIN LATERAL amendment_in_force(e, a.base_eli, a.eli) f ON true
            WHERE a.amended_after IS NOT NULL
            HAVING a.amended_after IS NOT NULL) AS amendments_in_force,
           -- The act's own date ("ustawy z dnia 26 czerwca 1974 r."): as its latest text's title names it, or
           -- a base act's record (a consolidated text's record gives the announcement's date, not the act's).
           coalesce((SELECT t.act_date FROM act_versions w JOIN version_times t USING (version_id)
                     WHERE w.eli = a.eli ORDER BY w.version_no DESC LIMIT 1),
                    CASE WHEN a.eli = a.base_eli THEN a.announcement_date END) AS act_date
    FROM acts a
    LEFT JOIN LATERAL (
        SELECT version_no, valid_from FROM act_versions
        WHERE eli = a.eli ORDER BY version_no DESC LIMIT 1
    ) v ON true;
COMMENT ON VIEW act_currency IS
    'Every stored act with its currency: text as of, amendments after it, in force, last checked.';
COMMENT ON COLUMN act_currency.in_force IS 'As the ELI API says: IN_FORCE, NOT_IN_FORCE or UNKNOWN.';
COMMENT ON COLUMN act_currency.text_as_of IS 'The valid_from of the act''s latest stored version.';
COMMENT ON COLUMN act_currency.amended_after IS
    'Amending acts the API lists after the stored text: jsonb [{eli, date, date_of}] (NULL: the record says nothing).';
COMMENT ON COLUMN act_currency.amendments_after IS 'How many amended_after lists.';
COMMENT ON COLUMN act_currency.act_date IS 'The act''s own date ("z dnia …"), where its text or record names it.';
COMMENT ON COLUMN act_currency.amendments_in_force IS
    'amended_after, each with in_force_from (when its change takes effect; NULL: not known) and in_force_source (amending_text, amending_record, base_record, record).';
COMMENT ON COLUMN act_currency.is_current IS 'Whether this act holds its base act''s current text (versions_as_of(NULL)).';
COMMENT ON COLUMN act_currency.checked_at IS 'When ingest or sync last read its ELI record (NULL: never, e.g. a local file).';

CREATE OR REPLACE VIEW current_acts AS
    SELECT * FROM act_currency WHERE is_current;
COMMENT ON VIEW current_acts IS 'Per base act, the act holding its current text, with its currency.';
