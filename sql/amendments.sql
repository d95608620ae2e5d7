-- Amending instructions (revision 0011; docs/sql.md, docs/amendments.md): the changes each stored act makes
-- to other acts, with the stored act each resolves to and when each takes effect, worked out when read
-- against what is stored then. Idempotent: applied with the rest of sql/ (after legal_time.sql).

CREATE OR REPLACE VIEW amendment_changes AS
    SELECT v.eli AS source_act, m.source_article, m.amending_unit, m.ordinal,
           m.target_as_written, m.target_act,
           -- The stored base act it changes: by the ELI id the words give (the act, or a stored text of it),
           -- else by the act's date and title as printed (an older consolidated text's position): the name as
           -- the act's whole name, after its date ("z dnia 12 lipca 2024 r. – Prawo …") or "ustawy" (an
           -- announcement's title), up to the title's end or a footnote: "Przepisy wprowadzające ustawę –
           -- Prawo komunikacji elektronicznej" is not "Prawo komunikacji elektronicznej" (issue 47).
           coalesce((SELECT a.base_eli FROM acts a WHERE (a.eli = m.target_act OR a.base_eli = m.target_act)
                       AND EXISTS (SELECT 1 FROM act_versions w WHERE w.eli = a.eli) ORDER BY a.eli = a.base_eli DESC
                     LIMIT 1),
                    (SELECT c.base_eli FROM act_currency c
                     WHERE m.target_name IS NOT NULL AND m.target_date IS NOT NULL AND c.act_date = m.target_date
                       AND strpos(lower(c.title), lower(m.target_name)) > 0
                       AND lower(c.title) ~ ('(\d\s*r\.|ustawy)\s*[–-]?\s*'
                                             || regexp_replace(lower(m.target_name), '([]^$*+?(){}|.\\[-])', '\\\1', 'g')
                                             || '(\s+\d+\)|\s*$)')
                       AND EXISTS (SELECT 1 FROM act_versions w WHERE w.eli = c.eli)
                     ORDER BY c.base_eli LIMIT 1)) AS target_base_act,
           m.target_article, m.target_unit, m.operation, m.after_unit, m.wording, m.old_words, m.new_words,
           m.new_label, m.kept,
           -- When it takes effect: the amending unit's own date where the final provisions give one ("art. 2
           -- pkt 3 wchodzi w życie …"), else its article's; NULL: not determined (in_force_undetermined says why).
           CASE WHEN u.unit IS NOT NULL THEN u.from_date ELSE t.in_force_from END AS in_force_from,
           CASE WHEN u.unit IS NOT NULL THEN CASE WHEN u.determined THEN NULL ELSE u.text END
                ELSE t.undetermined END AS in_force_undetermined,
           m.instruction,
           -- where the amending act says it, as cited: 'art. 161 pkt 6' (last: CREATE OR REPLACE VIEW appends)
           'art. ' || m.source_article || CASE WHEN m.amending_unit <> '' THEN ' ' || m.amending_unit ELSE '' END
               AS source_unit
    FROM amendments m
    JOIN act_versions v USING (version_id)
    LEFT JOIN articles ar ON ar.version_id = m.version_id AND ar.article = m.source_article AND ar.wording IN (0, 1)
    LEFT JOIN article_times t ON t.article_id = ar.article_id
    LEFT JOIN LATERAL (
        SELECT e.unit, e.from_date, e.determined, e.text FROM article_events e
        WHERE e.article_id = ar.article_id AND e.kind = 'enters' AND e.unit <> ''
          AND (m.amending_unit = e.unit OR m.amending_unit LIKE e.unit || ' %')
        ORDER BY length(e.unit) DESC LIMIT 1) u ON true
    -- The amending act's newest text only: an act stored twice gives its instructions once.
    WHERE v.version_no = (SELECT max(w.version_no) FROM act_versions w WHERE w.eli = v.eli);
COMMENT ON VIEW amendment_changes IS
    'The changes each stored amending act makes, instruction by instruction: the target as printed and the stored base act it resolves to (NULL: not stored), the unit, the operation, the wording, and when it takes effect.';
COMMENT ON COLUMN amendment_changes.source_unit IS 'Where the amending act says it, as cited: ''art. 161 pkt 6''.';
COMMENT ON COLUMN amendment_changes.target_base_act IS 'The stored base act the change is to (NULL: the target is not stored).';
COMMENT ON COLUMN amendment_changes.operation IS
    'set_wording | add | repeal | renumber | replace_words | delete_words | insert_words | add_sentence | other (kept with its words).';
COMMENT ON COLUMN amendment_changes.target_article IS 'NULL: the whole act (a repeal: "Traci moc ustawa …").';
COMMENT ON COLUMN amendment_changes.kept IS 'A repeal''s exceptions, the units that stay in force, as printed.';
COMMENT ON COLUMN amendment_changes.in_force_from IS
    'When the change takes effect: the amending unit''s date, else its article''s (provision time); NULL: not determined.';
