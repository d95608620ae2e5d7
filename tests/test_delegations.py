"""Delegations (revision 0013): the units of a statute that authorise an organ to issue an act, read by their
form (pipeline.sources.delegations), stored as a derived layer, in the SQL view `delegations` and on `show`."""
from __future__ import annotations

import psycopg
import pytest

from pipeline import Service
from pipeline.sources.delegations import read
from pipeline.sources.parse.model import Article

PATIENT = "DU/2024/581"


def _article(text: str, number: str = "5") -> Article:
    return Article(number, f"Art. {number}. {text}")


def test_an_obliging_delegation_with_its_organ_matter_and_guidelines():
    (d,) = read(_article("1. Pacjent ma prawo do informacji.\n2. Minister właściwy do spraw zdrowia, w porozumieniu z "
                         "ministrem właściwym do spraw finansów publicznych, po zasięgnięciu opinii Naczelnej Rady "
                         "Lekarskiej, określi, w drodze rozporządzenia, wzór karty informacyjnej, uwzględniając "
                         "potrzebę zapewnienia czytelności danych."))
    assert (d.unit, d.form, d.obligatory, d.normative) == ("ust. 2", "rozporządzenie", True, True)
    assert d.organ == "Minister właściwy do spraw zdrowia"
    assert d.in_agreement_with == "ministrem właściwym do spraw finansów publicznych"
    assert d.after_consulting == "Naczelnej Rady Lekarskiej"
    assert d.matter == "wzór karty informacyjnej"
    assert d.guidance == "uwzględniając potrzebę zapewnienia czytelności danych."


def test_a_permitting_delegation_and_a_list_of_matters():
    (d,) = read(_article("Rada Ministrów może określić, w drodze rozporządzenia:\n1) tryb postępowania;\n"
                         "2) wysokość opłat."))
    assert (d.unit, d.organ, d.form, d.obligatory) == ("", "Rada Ministrów", "rozporządzenie", False)
    assert "tryb postępowania" in d.matter and "wysokość opłat" in d.matter


@pytest.mark.parametrize("text", [
    # a participle names an act already issued: it delegates nothing
    "Wynagrodzenie ustala się w wysokości określonej w przepisach wydanych w drodze rozporządzenia.",
    # a collegial body's opinion given by resolution is no act of law
    "Opinie, o których mowa w ust. 1, Rada wydaje w drodze uchwały.",
    # a decision in a single case
    "Prezes Urzędu określa, w drodze decyzji, wysokość kary.",
])
def test_what_is_no_delegation(text: str):
    assert read(_article(text)) == []


def test_a_body_left_its_rules_of_procedure_adopts_them_by_resolution():
    (d,) = read(_article("1. Komisja działa przy ministrze.\n2. Tryb pracy Komisji określa regulamin uchwalany przez "
                         "Komisję."))
    assert (d.unit, d.form, d.organ) == ("ust. 2", "uchwała", "Komisję")


def test_stored_delegations_are_in_the_sql_view_and_on_show(stand_in_corpus_url):
    """The patient rights act, stored from the real mirror: art. 30 ust. 1 delegates to the health minister."""
    with psycopg.connect(stand_in_corpus_url, autocommit=True) as c:
        rows = c.execute("SELECT unit, form, obligatory, organ FROM delegations WHERE eli = %s AND article = '30' "
                         "ORDER BY ordinal", (PATIENT,)).fetchall()
    assert rows and rows[0][:3] == ("ust. 1", "rozporządzenie", True)
    assert rows[0][3].startswith("Minister właściwy do spraw zdrowia")
    with Service(stand_in_corpus_url, pool_size=1, warm=False) as law:
        shown = law.show(PATIENT, "30")
        assert [d["unit"] for d in shown["delegations"]] == [r[0] for r in rows]
        assert law.show(PATIENT, "1")["delegations"] == []


def test_the_verb_may_follow_the_form():
    (d,) = read(_article("Minister Sprawiedliwości, w drodze rozporządzenia, określi sposób prowadzenia rejestru."))
    assert (d.organ, d.form, d.obligatory, d.matter) == ("Minister Sprawiedliwości", "rozporządzenie", True,
                                                         "sposób prowadzenia rejestru")


def test_a_passive_with_its_agent_delegates_to_the_agent():
    (d,) = read(_article("Organizację biura określa statut nadany, w drodze zarządzenia, przez Prezesa Rady Ministrów."))
    assert (d.organ, d.form) == ("Prezesa Rady Ministrów", "zarządzenie")
