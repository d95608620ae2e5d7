-- Public read interface for the currency of acts (README: "Querying with SQL"). Idempotent.
-- Applied right after views.sql (pipeline.schema.INTERFACE_FILES); its views read the columns
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

CREATE OR REPLACE VIEW current_acts AS
    SELECT * FROM act_currency WHERE is_current;
COMMENT ON VIEW current_acts IS 'Per base act, the act holding its current text, with its currency.';
