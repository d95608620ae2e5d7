"""The legal context of articles, on the mirror's real texts: references of each kind, definitions of
each formula, what `show` and the SQL views say of them, the answer's context, and `pipeline diff`."""
from __future__ import annotations

import datetime as dt

import json

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import parsed_act
from support.paths import ELI_MIRROR, require_mirror
from embedding_stand_in import StandInEmbedder

from pipeline import Service
from pipeline.core.errors import ArticleNotFound
from pipeline.core.limits import CONTEXT_CHARS
from pipeline.sources import definitions, references
from pipeline.storage import context, db, derived, history, schema

CONTEXT = next(layer for layer in derived.LAYERS if layer.name == "context")

KP, KP_BASE = "DU/2025/277", "DU/1974/141"  # Kodeks pracy, its 2025 consolidated text (PDF)
PATIENT = "DU/2024/581"  # patient rights act (HTML)


def refs(act: str, base: str, article: str) -> list[tuple]:
    return [(r.kind, r.target_act, r.target_article, r.target_unit)
            for r in references.extract(parsed_act(act).articles, base) if r.article == article]


def test_internal_references_with_units_and_a_glued_superscript():
    # PDF text: "na podstawie art. 155^1i 155^2" (the superscript glued to "i"); "art. 154 § 1 i 2".
    assert refs(KP, KP_BASE, "155^3") == [
        ("internal", KP_BASE, "155^1", ""), ("internal", KP_BASE, "155^2", ""),
        ("internal", KP_BASE, "154", "§ 1"), ("internal", KP_BASE, "154", "§ 2")]


def test_ranges_and_lists_are_expanded():
    # "art. 67^19–67^24 oraz art. 67^31 § 3" (PDF) and "art. 9-11" (HTML)
    found = refs(KP, KP_BASE, "67^33")
    assert [a for k, _, a, u in found if k == "internal" and not u][:6] == [f"67^{n}" for n in range(19, 25)]
    assert ("internal", KP_BASE, "67^31", "§ 3") in found
    in_range = [r.target_article for r in references.extract(parsed_act(PATIENT).articles, PATIENT)
                if r.article == "12" and r.text == "art. 9-11"]
    assert in_range == ["9", "10", "11"]


def test_relative_references_are_units_of_the_same_article_not_its_labels():
    # "o którym mowa w § 1", "w przypadku, o którym mowa w § 1 pkt 1, …, a w przypadku, o którym mowa w § 1 pkt 2 – 3 miesiące"
    found = refs(KP, KP_BASE, "36")
    assert [u for k, _, _, u in found if k == "relative"] == ["§ 1", "§ 1 pkt 1", "§ 1 pkt 2"]  # not "pkt 3": a dash
    assert all(a == "36" for k, _, a, _ in found if k == "relative")


def test_external_references_by_title_by_journal_and_by_a_codes_name():
    # "art. 448 Kodeksu cywilnego"; "art. 31 ust. 4 ustawy z dnia 5 grudnia 1996 r. o zawodach lekarza i
    # lekarza dentysty (Dz. U. z 2023 r. poz. 1516)": the text it cites
    assert ("external", "DU/1964/93", "448", "") in refs(PATIENT, PATIENT, "4")
    by_title = [r for r in references.extract(parsed_act(PATIENT).articles, PATIENT)
                if r.article == "9" and r.kind == "external"][0]
    assert (by_title.target_act, by_title.target_article, by_title.target_unit) == ("DU/2023/1516", "31", "ust. 4")
    assert (by_title.target_name, by_title.target_year) == ("o zawodach lekarza i lekarza dentysty", 1996)
    # A later mention of the same act without a journal reference resolves to the same text.
    later = [r for r in references.extract(parsed_act(PATIENT).articles, PATIENT)
             if r.article == "10" and r.kind == "external"]
    assert later and later[0].target_act == "DU/2023/1516"
    # "(Dz. U. z 2021 r. poz. 945)" with no act named before it (the advocates act, HTML)
    assert ("external", "DU/2021/945", None, "") in refs("DU/2024/1564", "DU/2024/1564", "3")
    # The act naming itself is not an external reference: "przepisy Kodeksu pracy" in the Labour Code.
    assert all(not (k == "external" and t == KP_BASE) for k, t, _, _ in refs(KP, KP_BASE, "9"))


def test_definitions_in_a_list_a_whenever_clause_and_a_defining_sentence():
    patient = {(d.article, d.unit, d.term, d.formula) for d in definitions.extract(parsed_act(PATIENT).articles)}
    assert ("3", "ust. 1 pkt 4", "pacjent", "list") in patient
    assert ("3", "ust. 2", "lekarzu", "whenever") in patient
    assert not any(d[1] == "ust. 1 pkt 7" for d in patient)  # "7) (uchylony)"
    kp = {(d.article, d.term, d.formula) for d in definitions.extract(parsed_act(KP).articles)}
    assert ("2", "pracownikiem", "sentence") in kp and ("3", "pracodawcą", "sentence") in kp


@pytest.fixture(scope="module")
def law(stand_in_corpus_url):
    with Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=2) as service:
        yield service


def test_show_gives_references_referenced_by_and_definitions(law, stand_in_corpus_url):
    article = law.show(KP, "155^3")
    assert [(r["act"], r["article"], r["unit"], r["stored"]) for r in article["references"]] == [
        (KP_BASE, "155^1", "", KP), (KP_BASE, "155^2", "", KP), (KP_BASE, "154", "§ 1", KP), (KP_BASE, "154", "§ 2", KP)]
    assert {"act": KP, "article": "155^3"} in law.show(KP, "154")["referenced_by"]
    # The patient-rights act's definitions that its art. 9 uses, found in any case ending ("pacjenta").
    terms = [d["term"] for d in law.show(PATIENT, "9")["definitions"]]
    assert "pacjent" in terms and all(d["act"] == PATIENT for d in law.show(PATIENT, "9")["definitions"])
    # The same through the CLI, --json and as text.
    shown = run_cli("show", KP, "155^3", env={"DATABASE_URL": stand_in_corpus_url})
    assert shown.returncode == 0, shown.stderr
    assert "Refers to:\n  art. 155^1" in shown.stdout and "Definitions used:" in shown.stdout
    data = json.loads(run_cli("show", KP, "154", "--json", env={"DATABASE_URL": stand_in_corpus_url}).stdout)
    assert {"act": KP, "article": "155^3"} in data["referenced_by"]
    assert {"term", "act", "article", "text"} <= set(data["definitions"][0])
    assert {"act", "article", "unit", "text"} <= set(data["references"][0])


def test_the_sql_views(stand_in_corpus_url):
    with psycopg.connect(stand_in_corpus_url, autocommit=True) as c:
        row = c.execute("SELECT target_act, target_article, target_eli FROM article_references "
                        "WHERE eli = %s AND article = '155^3' ORDER BY ordinal LIMIT 1", (KP,)).fetchone()
        assert row == (KP_BASE, "155^1", KP)
        assert c.execute("SELECT count(*) FROM definitions WHERE eli = %s AND term = 'pacjent'",
                         (PATIENT,)).fetchone()[0] == 1


def test_texts_read_by_other_rules_are_read_again(two_texts):
    """A version stored before revision 0009, or read by older rules, is read on the next command."""
    with psycopg.connect(two_texts, autocommit=True) as c:
        counts = c.execute("SELECT count(*) FROM version_references").fetchone()[0]
        assert counts > 0
        c.execute("UPDATE context_extractions SET extractor = 'older rules'")
        c.execute("DELETE FROM version_references")
        assert len(derived.stale(c, CONTEXT)) == 2
    schema.ensure_current(two_texts)
    with psycopg.connect(two_texts, autocommit=True) as c:
        assert derived.stale(c, CONTEXT) == []
        assert c.execute("SELECT count(*) FROM version_references").fetchone()[0] == counts


def test_an_answer_reads_the_definitions_and_provisions_beside_the_articles(law, monkeypatch):
    monkeypatch.setenv("ANSWER_MIN_SIMILARITY", "0")  # the stand-in model's similarities are low
    asked = law.ask("Kto jest pacjentem i jakie ma prawo do informacji?", acts=[PATIENT], offline=True)
    roles = {f.role for f in asked.answer.fragments}
    assert "retrieved" in roles and "definition" in roles
    extra = [f for f in asked.answer.fragments if f.role != "retrieved"]
    assert sum(len(f.text) for f in extra) <= CONTEXT_CHARS
    # The question uses a defined term: the offline answer quotes its definition, with its citation.
    assert "Definicja (art. 3 ust. 1 pkt 4)" in asked.answer.text and f"[{PATIENT}, art. 3 ust. 1 pkt 4]" in asked.answer.text
    assert ("DU/2024/581", "3") in asked.answer.citations and not asked.to_dict()["foreign_citations"]


@pytest.fixture(scope="module")
def two_texts(server_url):
    """The e-services act (DU/2002/1204, as enacted in 2002, HTML) and its 2024 consolidated text
    (DU/2024/1513) stored as its second version: the mirror's records do not link the two."""
    require_mirror()
    from support.database import create_database

    from support.corpus import ingestion

    url = create_database(server_url, "history")
    with db.connect(url) as c, ingestion(c, url) as run:
        first = run.act("DU/2002/1204", source_dir=ELI_MIRROR)
        second = run.file(ELI_MIRROR / "acts/DU/2024/1513/text.html", act="DU/2002/1204")
    assert (first.status, second.status, second.version) == ("new", "new", 2), (first.error, second.error)
    return url


def test_diff_of_an_article_between_two_texts(two_texts):
    before_change = dt.date(2024, 10, 20)  # the 2024 text's date; its second wording of art. 2 comes on 2024-11-10
    with Service(two_texts, pool_size=1, warm=False) as law:
        changed = law.diff("DU/2002/1204", "2", from_date=dt.date(2003, 6, 1), to_date=before_change)
        assert (changed["from"]["version_no"], changed["to"]["version_no"]) == (1, 2)
        assert (changed["from"]["wording"], changed["to"]["wording"]) == (0, 1)
        assert not changed["unchanged"] and {"delete", "insert"} & {op["op"] for op in changed["ops"]}
        old = "".join(op["text"] for op in changed["ops"] if op["op"] != "insert")
        new = "".join(op["text"] for op in changed["ops"] if op["op"] != "delete")
        assert old == law.show("DU/2002/1204", "2", version_no=1)["text"]
        assert new == law.show("DU/2002/1204", "2", as_of=before_change)["text"]
        # Without dates: the newest wording against the one before it, here the two the 2024 text prints;
        # an article it prints once, against the text before.
        assert (law.diff("DU/2002/1204", "3")["from"]["version_no"], law.diff("DU/2002/1204", "3")["to"]["version_no"]) \
            == (1, 2)
        wordings = law.diff("DU/2002/1204", "2")
        assert (wordings["from"]["version_no"], wordings["to"]["version_no"]) == (2, 2)
        assert (wordings["from"]["wording"], wordings["to"]["wording"]) == (1, 2)
        assert wordings["from"]["in_force_until"] == wordings["to"]["in_force_from"] == dt.date(2024, 11, 10)
        assert "".join(op["text"] for op in wordings["ops"] if op["op"] != "insert") == new
    text = changed["ops"][0]["text"]
    assert history.word_diff(text, text) == [{"op": "equal", "text": text}]  # equal wordings: "unchanged"
    out = run_cli("diff", "DU/2002/1204", "2", env={"DATABASE_URL": two_texts})
    assert out.returncode == 0 and "[-" in out.stdout and "{+" in out.stdout, out.stderr
    only_one = run_cli("diff", KP, "154", env={"DATABASE_URL": two_texts})
    assert only_one.returncode == 1 and only_one.stderr.count("\n") == 1
    assert "not in the database" in only_one.stderr


def test_diff_with_one_stored_text_says_so(law):
    with pytest.raises(ArticleNotFound, match="earliest stored text and prints one wording"):
        law.diff(KP, "154")
    # One text that prints two wordings of an article (Kodeks pracy art. 184): they are compared.
    both = law.diff(KP, "184")
    assert (both["from"]["wording"], both["to"]["wording"]) == (1, 2) and not both["unchanged"]
    assert both["to"]["in_force_from"] == dt.date(2025, 3, 19)
