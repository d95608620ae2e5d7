"""The legal context of stored articles: what an article refers to, what refers to it, the definitions
it uses (revision 0009; read from the text by pipeline.sources.prepare.legal_context).

Written with each new version (store.store_version) and, for versions read by an older extractor or
stored before the revision, again from the stored articles (storage.derived).
"""
from __future__ import annotations

import psycopg

from pipeline.sources.prepare import LegalContext
from pipeline.storage.db import read_only

# The base act a reference's target resolves to, against what is stored (the view article_references
# says the same in SQL): the base act of the cited text when it is stored, else a stored text of an act
# of that name and year, else the act as the text names it. %s-free: used inside larger statements.
_TARGET = """coalesce(
    (SELECT a.base_eli FROM acts a WHERE a.eli = r.target_act),
    (SELECT a.base_eli FROM acts a
     WHERE r.target_name IS NOT NULL AND r.target_year IS NOT NULL
       AND substring(a.base_eli FROM '/(\\d{4})/')::integer = r.target_year
       AND strpos(lower(a.title), lower(r.target_name)) > 0
     ORDER BY a.base_eli LIMIT 1),
    r.target_act)"""


def write(conn: psycopg.Connection, version_id: int, found: LegalContext) -> tuple[int, int]:
    """Store the references and definitions of a version's text (inside the caller's transaction);
    (references, definitions) written."""
    conn.execute("DELETE FROM version_references WHERE version_id = %s", (version_id,))
    conn.execute("DELETE FROM version_definitions WHERE version_id = %s", (version_id,))
    refs, defs = found.references, found.definitions
    with conn.cursor().copy(
        "COPY version_references (version_id, article, ordinal, kind, target_act, target_article, target_unit, "
        "words, target_title, target_name, target_year) FROM STDIN"
    ) as copy:
        for i, r in enumerate(refs, start=1):
            copy.write_row((version_id, r.article, i, r.kind, r.target_act, r.target_article, r.target_unit, r.text,
                            r.target_title, r.target_name, r.target_year))
    with conn.cursor().copy(
        "COPY version_definitions (version_id, ordinal, article, unit, term, definition, formula) FROM STDIN"
    ) as copy:
        for i, d in enumerate(defs, start=1):
            copy.write_row((version_id, i, d.article, d.unit, d.term, d.text, d.formula))
    conn.execute("INSERT INTO context_extractions (version_id, extractor) VALUES (%s, %s) "
                 "ON CONFLICT (version_id) DO UPDATE SET extractor = excluded.extractor, extracted_at = now()",
                 (version_id, found.extractor))
    return len(refs), len(defs)


@read_only
def references_of(conn: psycopg.Connection, version_id: int, article: str) -> list[dict]:
    """What ``article`` of the version refers to, in the text's order: {act, article, unit, text, kind,
    stored}; ``act`` is the cited base act (None: not known), ``stored`` the stored current text holding
    the cited article (None: not stored)."""
    rows = conn.execute(
        f"""
        SELECT b.act, r.target_article, r.target_unit, r.words, r.kind,
               (SELECT c.eli FROM versions_as_of(NULL) c JOIN articles ar USING (version_id)
                WHERE c.base_eli = b.act AND ar.article = r.target_article LIMIT 1)
        FROM version_references r CROSS JOIN LATERAL (SELECT {_TARGET} AS act) b
        WHERE r.version_id = %s AND r.article = %s
        ORDER BY r.ordinal
        """, (version_id, article)).fetchall()
    # Two wordings of an article (revision 0010) cite alike: each reference once, in the text's order.
    return [{"act": act, "article": target, "unit": unit, "text": words, "kind": kind, "stored": stored}
            for act, target, unit, words, kind, stored in dict.fromkeys(rows)]


@read_only
def referenced_by(conn: psycopg.Connection, base_act: str, article: str) -> list[dict]:
    """The articles of the stored current texts that cite ``article`` of ``base_act`` (relative
    references aside): {act, article}, each article once, in id order."""
    rows = conn.execute(
        f"""
        SELECT DISTINCT v.eli, r.article, a.ordinal
        FROM versions_as_of(NULL) v
        JOIN version_references r USING (version_id)
        JOIN articles a ON a.version_id = v.version_id AND a.article = r.article
        CROSS JOIN LATERAL (SELECT {_TARGET} AS act) b
        WHERE r.kind <> 'relative' AND r.target_article = %(article)s AND b.act = %(base)s
          AND NOT (v.base_eli = %(base)s AND r.article = %(article)s)
        ORDER BY v.eli, a.ordinal
        """, {"base": base_act, "article": article}).fetchall()
    return [{"act": eli, "article": number} for eli, number, _ in rows]


@read_only
def definitions_used(conn: psycopg.Connection, version_id: int, article: str) -> list[dict]:
    """The act's definitions (of this version's text) whose term the article uses, in any case ending
    (the Polish dictionary of the text search): {term, act, article, unit, text}; the article's own
    definitions aside."""
    rows = conn.execute(
        """
        SELECT d.term, v.eli, d.article, d.unit, d.definition
        FROM version_definitions d
        JOIN act_versions v USING (version_id)
        CROSS JOIN (SELECT to_tsvector('polish', text) AS words FROM articles
                    WHERE version_id = %(v)s AND article = %(a)s ORDER BY ordinal LIMIT 1) a
        WHERE d.version_id = %(v)s AND d.article <> %(a)s
          AND numnode(phraseto_tsquery('polish', d.term)) > 0
          AND a.words @@ phraseto_tsquery('polish', d.term)
        ORDER BY d.ordinal
        """, {"v": version_id, "a": article}).fetchall()
    return [{"term": term, "act": eli, "article": number, "unit": unit, "text": text}
            for term, eli, number, unit, text in rows]
