-- Delegations (revision 0013; docs/sql.md): every unit of the current texts that authorises an organ to issue
-- an act, read from the text (pipeline.sources.delegations). Idempotent: applied with the rest of sql/.
CREATE OR REPLACE VIEW delegations AS
    SELECT v.eli, v.base_eli, d.article, d.unit, d.organ, d.form, d.obligatory, d.normative, d.matter, d.guidance,
           d.in_agreement_with, d.after_consulting, d.in_amended_act, d.text, d.ordinal
    FROM version_delegations d
    JOIN current_versions v USING (version_id);
COMMENT ON VIEW delegations IS
    'Every unit of the current texts that authorises an organ to issue an act (rozporządzenie, zarządzenie, '
    'uchwała; obwieszczenie, komunikat: not normative): organ, form, obligatory (określi) or not (może '
    'określić), matter, guidance, the organs that take part; in_amended_act: set in an amending instruction''s wording.';
