-- The legal context of articles (revision 0009; docs/sql.md): what each article of each act's current
-- text refers to, and each act's definitions. Idempotent: applied with the rest of sql/ (after
-- search.sql, pipeline.storage.schema.INTERFACE_FILES).

-- A reference's target act resolved against what is stored, when read: the base act of the text it
-- cites when that text is stored; else a stored text of an act of that name and year (a consolidated
-- text of it, stored under its base act); else the act as the text names it (a base act, or the text
-- it cites). Inlined in the view, not a function, so a reader needs no rights on the tables.
CREATE OR REPLACE VIEW article_references AS
    SELECT v.eli, v.base_eli, r.article, r.ordinal, r.kind, b.act AS target_act, r.target_article,
           r.target_unit, r.words AS text, t.eli AS target_eli, r.target_title
    FROM current_versions v
    JOIN version_references r USING (version_id)
    CROSS JOIN LATERAL (
        SELECT coalesce(
            (SELECT a.base_eli FROM acts a WHERE a.eli = r.target_act),
            (SELECT a.base_eli FROM acts a
             WHERE r.target_name IS NOT NULL AND r.target_year IS NOT NULL
               AND substring(a.base_eli FROM '/(\d{4})/')::integer = r.target_year
               AND strpos(lower(a.title), lower(r.target_name)) > 0
             ORDER BY a.base_eli LIMIT 1),
            r.target_act) AS act) b
    LEFT JOIN LATERAL (
        SELECT c.eli FROM current_versions c JOIN articles ar USING (version_id)
        WHERE c.base_eli = b.act AND ar.article = r.target_article
        LIMIT 1) t ON true;
COMMENT ON VIEW article_references IS
    'What each article of each act''s current text refers to: one row per target (a range is expanded), in the text''s order (ordinal).';
COMMENT ON COLUMN article_references.kind IS
    'internal: an article of the same act; relative: a unit of the same article ("§ 2"); external: another act.';
COMMENT ON COLUMN article_references.target_act IS
    'The base act cited (NULL: not known, e.g. an EU regulation); for external references resolved against the stored acts.';
COMMENT ON COLUMN article_references.target_article IS 'The article cited (NULL: the whole act).';
COMMENT ON COLUMN article_references.target_unit IS 'The unit cited inside it: "§ 1 pkt 2", "ust. 3"; empty: the whole article.';
COMMENT ON COLUMN article_references.target_eli IS
    'The stored current text that holds the target article (NULL: the cited act or article is not stored).';

CREATE OR REPLACE VIEW definitions AS
    SELECT v.eli, v.base_eli, d.article, d.unit, d.term, d.definition AS text, d.formula, d.ordinal
    FROM current_versions v
    JOIN version_definitions d USING (version_id);
COMMENT ON VIEW definitions IS
    'The definitions of each act''s current text: the term as printed, where (article, unit) and how it is defined.';
COMMENT ON COLUMN definitions.formula IS
    'list ("Użyte w ustawie określenia oznaczają: … 4) pacjent – …"), whenever ("Ilekroć w ustawie jest mowa o …"), sentence ("Pracownikiem jest …").';
COMMENT ON COLUMN definitions.term IS
    'As printed ("pacjent", "lekarzu", "pracownikiem"): find it in other texts through the Polish dictionary, e.g. to_tsvector(''polish'', text) @@ phraseto_tsquery(''polish'', term).';
