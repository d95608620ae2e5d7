-- Public read interface for the currency of acts (docs/sql.md). Idempotent.
-- Applied right after views.sql (pipeline.storage.schema.INTERFACE_FILES); its views read the columns
-- added by revision 0004, which holds the snapshot it shipped with.

CREATE OR REPLACE VIEW act_currency AS
    SELECT a.eli, a.base_eli, a.title, a.act_type, a.status, a.in_force,
           v.version_no, v.valid_from AS text_as_of,
           a.legal_status_date, a.expiration_date, a.change_date, a.checked_at,
           a.amended_after,
           jsonb_array_length(a.amended_after) AS amendments_after,
           EXISTS (SELECT 1 FROM versions_as_of(NULL) c WHERE c.eli = a.eli) AS is_current
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
COMMENT ON COLUMN act_currency.is_current IS 'Whether this act holds its base act''s current text (versions_as_of(NULL)).';
COMMENT ON COLUMN act_currency.checked_at IS 'When ingest or sync last read its ELI record (NULL: never, e.g. a local file).';

CREATE OR REPLACE VIEW current_acts AS
    SELECT * FROM act_currency WHERE is_current;
COMMENT ON VIEW current_acts IS 'Per base act, the act holding its current text, with its currency.';
