"""What the model is told: the system prompt, the fragments and the question in one message, the query
rewrite prompt; and the one sentence of "not in the documents" (NOT_FOUND), which a refusal without a
model answers as well."""
from __future__ import annotations

import datetime as dt

from pipeline.answering.citations import cite
from pipeline.answering.fragments import Answer, Fragment

NOT_FOUND = "Nie znalazłem odpowiedzi w dostępnych dokumentach."

SYSTEM_PROMPT = f"""Jesteś asystentem prawnym. Odpowiadasz na pytania o polskie prawo \
wyłącznie na podstawie fragmentów przepisów podanych w wiadomości użytkownika.

Zasady:
1. Korzystaj tylko z podanych fragmentów. Nie używaj wiedzy spoza nich i niczego nie dopowiadaj.
2. Każde twierdzenie opatrz przypisem w nawiasie kwadratowym, w dokładnie takiej postaci, \
jak w nagłówku fragmentu: [DU/2025/277, art. 154]; gdy twierdzenie pochodzi z jednostki widocznej we fragmencie, \
dopisz ją: [DU/2025/277, art. 154 § 1 pkt 2]. Cytuj tylko akty, artykuły i jednostki z podanych fragmentów.
3. Jeżeli fragmenty nie zawierają odpowiedzi, odpowiedz dokładnie tym jednym zdaniem i niczym więcej: {NOT_FOUND}
4. Odpowiadaj po polsku, zwięźle i konkretnie: najpierw odpowiedź, potem ewentualne warunki lub wyjątki.
5. Fragmenty oznaczone jako definicja lub przepis powiązany objaśniają pozostałe: czytaj je razem z nimi \
i cytuj tak samo.
6. Jednostka oznaczona jako jeszcze nieobowiązująca, uchylona albo w brzmieniu obowiązującym od innego dnia nie jest prawem w dniu, którego dotyczy pytanie: nie przedstawiaj jej jako obowiązującej, a jeżeli o niej piszesz, podaj datę z oznaczenia."""

REWRITE_PROMPT = """Przeformułuj potoczne pytanie na zapytanie wyszukiwawcze w języku \
polskich ustaw: użyj terminów ustawowych (np. "wymiar urlopu wypoczynkowego", \
"okres wypowiedzenia umowy o pracę", "pracownik", "pracodawca"). \
Odpowiedz jedną linią: samym zapytaniem, bez komentarza i bez cudzysłowów."""


def build_messages(question: str, fragments: list[Fragment], as_of: dt.date | None = None) -> list[dict]:
    """System prompt + one user message holding the numbered fragments and the question (and the
    date whose law it asks about, with --as-of)."""
    blocks = []
    for i, f in enumerate(fragments, 1):
        header = f"Fragment {i}: {cite(f.act, f.article)}"
        if f.role == "definition":
            header = (f"Fragment {i} (definicja „{f.term}” z {f.unit or 'artykułu'}, używana w art. {f.used_by}): "
                      f"{cite(f.act, f.article)}")
        elif f.role == "reference":
            header = f"Fragment {i} (przepis powiązany: odsyła do niego art. {f.used_by}): {cite(f.act, f.article)}"
        if f.act_title:
            header += f" {f.act_title}"
        if f.part > 1:
            header += f" (część {f.part})"
        if not f.official:  # the model must not present it as the official text
            made_by = ", ".join(dict.fromkeys(f"{c['act']} {c['unit']}" for c in f.rebuilt_from or []))
            header += (f" [brzmienie odtworzone ze zmian wprowadzonych przez {made_by or 'późniejsze akty'}, "
                       "nie tekst urzędowy: cytując, zaznacz to]")
        text = f.text.strip()
        if f.time_notes:  # the units that are not the law on the day asked: the model must not state them as law
            text += "\n[Stan w dniu, którego dotyczy pytanie: " + "; ".join(f.time_notes) + "]"
        blocks.append(f"{header}\n{text}")
    user = "Fragmenty przepisów:\n\n" + "\n\n".join(blocks)
    notes = list(dict.fromkeys(f.currency for f in fragments if f.currency))
    if notes:
        # The model must not present a text as current law when the metadata says it was amended since.
        user += ("\n\nAktualność aktów (metadane ELI):\n" + "\n".join(f"- {n}" for n in notes)
                 + "\nJeżeli cytowany akt zmieniono później lub nie obowiązuje, zaznacz to w odpowiedzi.")
    if as_of is not None:
        user += (f"\n\nPytanie dotyczy stanu prawnego na dzień {as_of.isoformat()}: fragmenty pochodzą z tekstów "
                 "obowiązujących w tym dniu.")
    user += f"\n\nPytanie: {question.strip()}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def refusal(fragments: list[Fragment]) -> Answer:
    """The answer when retrieval found nothing similar enough; no model is asked."""
    return Answer(text=NOT_FOUND, fragments=fragments, model=None, refused=True)


def is_refusal(text: str, citations: list[tuple[str, str]]) -> bool:
    """A model's answer that says NOT_FOUND: models sometimes drop the final dot or add a few words; an
    uncited text containing the sentence is still a refusal."""
    core = NOT_FOUND.rstrip(".").casefold()
    return core in text.casefold() and not citations
