"""Serving many readers at once (issue 41): a connection is held for the SQL only, never while a question
is embedded or a model writes; searches and answers have limits of their own, and the one over a limit is
told at once to try again (Busy; the page: 503 with Retry-After), not queued; a question is cut to what
the embedding model reads. Real PostgreSQL, the stand-in corpus, a chat stand-in speaking the real
protocol on loopback."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from chat_stand_in import ChatStandIn
from embedding_stand_in import DIMENSIONS, MIN_SIMILARITY, MODEL, StandInEmbedder
from starlette.testclient import TestClient

from pipeline import Service
from pipeline.answering.answer import ChatConfig
from pipeline.core.errors import Busy
from pipeline.embedders import CHARS_PER_TOKEN_ESTIMATE, MODELS, ModelSpec, fit_query
from pipeline.interfaces.web import build_app

KP = "DU/2025/277"
QUESTION = "Ile dni urlopu na żądanie mogę wziąć w ciągu roku?"  # close enough for the stand-in: answered
REPLY = "Cztery dni w roku [DU/2025/277, art. 167^2]."
SLOW = 2.0  # seconds a slowed model takes: far above what a page takes on this corpus (~0.05 s)


class SlowEmbedder(StandInEmbedder):
    """The stand-in model, each question taking SLOW seconds (a model on a busy CPU); ``started`` is set
    when one begins."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()

    def embed_query(self, text: str) -> np.ndarray:
        self.started.set()
        time.sleep(SLOW)
        return super().embed_query(text)


class Recording(StandInEmbedder):
    """The stand-in model, recording what it was given to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


def _in_thread(fn, *args, **kwargs) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["result"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def _why(thread: threading.Thread, out: dict) -> str:
    thread.join(30)
    return f"no model was asked: {out.get('error') or out['result'].note}"


def _timed(fn, *args, **kwargs) -> float:
    start = time.monotonic()
    fn(*args, **kwargs)
    return time.monotonic() - start


def test_a_search_holds_no_connection_while_its_question_is_embedded(stand_in_corpus_url):
    model = SlowEmbedder()
    with Service(stand_in_corpus_url, embedder=model, pool_size=1, warm=False) as law:
        law.show(KP, "154")  # connected, schema checked
        thread, out = _in_thread(law.search, QUESTION, k=3)
        assert model.started.wait(10)
        took = _timed(law.show, KP, "154")  # the pool's only connection: free while the search embeds
        thread.join(30)
    assert "error" not in out and out["result"].hits
    assert took < SLOW / 2, f"an article waited {took:.2f}s for a search's embedding"


@pytest.fixture
def answerable(monkeypatch):
    monkeypatch.setenv("ANSWER_MIN_SIMILARITY", MIN_SIMILARITY)  # the stand-in model's similarities are low


def test_an_answer_holds_no_connection_while_the_model_writes(stand_in_corpus_url, answerable):
    asked = threading.Event()
    with ChatStandIn(REPLY, delay=SLOW) as chat, \
            Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=1, warm=False,
                    answer_config=ChatConfig(base_url=chat.base_url, api_key="k", model="m")) as law:
        law.show(KP, "154")
        thread, out = _in_thread(law.ask, QUESTION, stream=False, on_fragments=lambda _: asked.set())
        assert asked.wait(20), _why(thread, out)
        took = _timed(law.show, KP, "154")
        thread.join(30)
    assert "error" not in out, out.get("error")
    assert "[DU/2025/277, art. 167^2]" in out["result"].answer.text
    assert took < SLOW / 2, f"an article waited {took:.2f}s for a model's answer"


def test_one_search_over_the_limit_is_refused_at_once_not_queued(stand_in_corpus_url):
    model = SlowEmbedder()
    with Service(stand_in_corpus_url, embedder=model, warm=False, max_searches=1) as law:
        thread, out = _in_thread(law.search, QUESTION, k=3)
        assert model.started.wait(10)
        start = time.monotonic()
        with pytest.raises(Busy) as refused:
            law.search("urlop na żądanie", k=3)
        took = time.monotonic() - start
        law.show(KP, "154")  # an article page is no search: it is served meanwhile
        thread.join(30)
        assert law.search("urlop na żądanie", k=3).hits  # the slot is free again
    assert took < SLOW / 2 and refused.value.retry_after >= 1
    assert "try again in" in str(refused.value)
    assert "error" not in out


def test_one_answer_over_the_limit_is_a_503_with_retry_after_on_the_page(stand_in_corpus_url, answerable):
    asked = threading.Event()
    with ChatStandIn(REPLY, delay=SLOW) as chat, \
            Service(stand_in_corpus_url, embedder=StandInEmbedder(), warm=False, max_answers=1,
                    answer_config=ChatConfig(base_url=chat.base_url, api_key="k", model="m")) as law:
        client = TestClient(build_app(law, warm=False), base_url="http://127.0.0.1:8000")
        thread, out = _in_thread(law.ask, QUESTION, stream=False, on_fragments=lambda _: asked.set())
        assert asked.wait(20), _why(thread, out)
        page = client.get("/answer", params={"q": QUESTION})
        streamed = client.get("/answer/stream", params={"q": QUESTION})
        article = client.get(f"/acts/{KP}/art/154")
        thread.join(30)
        after = client.get("/answer", params={"q": QUESTION})
    assert page.status_code == 503 and page.headers["Retry-After"].isdigit()
    assert "Spróbuj za" in page.text
    assert "event: failure" in streamed.text and "Spróbuj za" in streamed.text
    assert article.status_code == 200
    assert after.status_code == 200 and "art. 167" in after.text


def test_a_question_longer_than_the_model_reads_is_cut_before_it_is_embedded_and_said(stand_in_corpus_url,
                                                                                        monkeypatch):
    # The stand-in model given a reading limit as e5's (512 tokens); it cannot count tokens, so the estimate
    # (3 characters a token) cuts the question.
    monkeypatch.setitem(MODELS, MODEL, ModelSpec(DIMENSIONS, max_tokens=512))
    model = Recording()
    long_question = (QUESTION + " ") * 80  # ~4 000 characters: far past 512 tokens
    with Service(stand_in_corpus_url, embedder=model, warm=False) as law:
        found = law.search(long_question, k=3)
        short = law.search(QUESTION, k=3)
    embedded = model.queries[0]
    assert len(embedded) <= 512 * CHARS_PER_TOKEN_ESTIMATE and long_question.startswith(embedded.split(" (")[0])
    assert any("characters were embedded" in w for w in found.warnings)
    assert not any("characters were embedded" in w for w in short.warnings)
    assert found.hits  # the full-text arm read it all


def test_the_local_model_counts_its_tokens_and_cuts_at_a_word():
    from pipeline.embedders.local import LocalEmbedder

    model = LocalEmbedder()
    question = "Czy pracodawca może wypowiedzieć umowę o pracę pracownicy w ciąży? " * 60
    cut = fit_query(model, question)
    assert model.token_count(cut) <= 512 < model.token_count(cut + " pracownicy")
    assert question.startswith(cut) and question[len(cut)] == " "
    assert fit_query(model, QUESTION) == QUESTION


# --- issue 49: admission by cost, no embedding for nothing, no connection held for CPU work -----------------

LONG = ("Czy pracodawca może odmówić urlopu na żądanie, gdy pracownik zgłosił wniosek rano? " * 60)[:4800]


class Counting(StandInEmbedder):
    """The stand-in model, counting the questions it embedded; ``started`` is released when one begins, and each
    takes ``delay`` seconds (a model on a busy CPU)."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay, self.calls = delay, 0
        self.started = threading.Semaphore(0)

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        self.started.release()
        time.sleep(self.delay)
        return super().embed_query(text)


def test_a_question_is_not_embedded_where_no_vector_is_stored(_corpus_text):
    """The corpus stored without vectors: a search finds nothing to compare a question's vector with, so the
    question is never embedded (a 5 000-character one cost seconds of CPU for nothing); the page's search runs
    the text arm and says so, the others are told to run pipeline embed, before any CPU is spent."""
    from pipeline.core.errors import NoVectors

    model = Counting()
    with Service(_corpus_text, embedder=model, pool_size=1, warm=False) as law:
        found = law.search(LONG, text_if_no_vectors=True)
        assert found.mode == "text" and found.hits
        assert found.warnings[0].endswith("searched the text alone")
        with pytest.raises(NoVectors, match="run pipeline embed"):
            law.search(LONG)
        with pytest.raises(NoVectors, match="run pipeline embed"):
            law.ask(LONG, offline=True)
        assert model.calls == 0, f"{model.calls} questions embedded with no vector stored to compare them with"
        assert law.searches.spent == 0  # every slot given back


def test_admission_weighs_a_question_by_its_cost(stand_in_corpus_url):
    """Two long questions fill most of the budget: a short question still passes, a third long one is refused
    at once (Busy, with Retry-After), while the count of searches (8) is far from reached."""
    model = Counting(delay=SLOW)
    with Service(stand_in_corpus_url, embedder=model, warm=False, max_searches=8, search_budget=5000) as law:
        law.show(KP, "154")
        running = [_in_thread(law.search, LONG, k=3) for _ in range(2)]
        assert model.started.acquire(timeout=10) and model.started.acquire(timeout=10)
        start = time.monotonic()
        with pytest.raises(Busy) as refused:
            law.search(LONG, k=3)
        took = time.monotonic() - start
        assert law.search("urlop na żądanie", k=3).hits  # a short one: admitted beside the two long ones
        for thread, out in running:
            thread.join(30)
            assert "error" not in out, out.get("error")
        assert law.search(LONG, k=3).hits  # the budget is free again
    assert took < SLOW / 2 and refused.value.retry_after >= 1
    assert "a long question weighs more" in str(refused.value)


def test_a_check_finds_its_citations_with_no_connection_held(stand_in_corpus_url):
    """Finding a text's citations is CPU alone (~1 s for 100 000 characters of "art. 1 "): a pool of one
    connection serves an article page meanwhile."""
    text = "art. 1 " * 14000
    with Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=1, warm=False) as law:
        law.show(KP, "154")
        thread, out = _in_thread(law.check, text)
        time.sleep(0.1)
        took = _timed(law.show, KP, "154")
        checking = thread.is_alive()
        thread.join(60)
    assert "error" not in out, out.get("error")
    assert checking and took < 0.5, f"an article waited {took:.2f}s for a check's citation finder"


def test_a_check_stops_when_its_caller_has_left(stand_in_corpus_url):
    from pipeline.core.errors import Cancelled

    left = threading.Event()
    left.set()
    with Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=1, warm=False) as law:
        with pytest.raises(Cancelled):
            law.check("art. 154 k.p. i art. 155 k.p.", stop=left)
        with pytest.raises(Cancelled):
            law.search("urlop na żądanie", stop=left)
        assert law.check("art. 154 k.p.").citations  # a caller who stays is served


def test_a_search_stops_when_the_page_is_closed(stand_in_corpus_url):
    """The visitor closes the page as soon as the search is asked: the page sees the disconnect, and the search
    stops before its question is embedded (the question is nobody's any more)."""
    import asyncio

    model = Counting(delay=SLOW)
    with Service(stand_in_corpus_url, embedder=model, warm=False) as law:
        app = build_app(law, warm=False)
        sent: list[dict] = []
        messages = [{"type": "http.request", "body": b"", "more_body": False}, {"type": "http.disconnect"}]

        async def receive() -> dict:
            return messages.pop(0) if messages else await asyncio.Event().wait()  # type: ignore[func-returns-value]

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
                 "path": "/search", "raw_path": b"/search", "query_string": "q=urlop+na+%C5%BC%C4%85danie".encode(),
                 "root_path": "", "headers": [(b"host", b"127.0.0.1:8000")], "client": ("127.0.0.1", 5000),
                 "server": ("127.0.0.1", 8000)}
        asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 499, sent[0]
    assert model.calls == 0, "the question was embedded for a visitor who had left"


def test_a_check_stops_when_the_mcp_client_cancels_it(stand_in_corpus_url):
    """An MCP client gives up on a long check (its call is cancelled: notifications/cancelled): the check stops at
    its next citation, and the pool's only connection serves an article at once instead of after the check."""
    import anyio
    from mcp import Client

    from pipeline.interfaces.mcp_server import build_server

    text = "art. 154 k.p. " * 7000  # 1 000 citations checked, each a few queries: seconds on one connection
    with Service(stand_in_corpus_url, embedder=StandInEmbedder(), pool_size=1, warm=False) as law:
        law.show(KP, "154")
        took: dict[str, float] = {}

        async def main() -> None:
            async with Client(build_server(law)) as client:
                start = time.monotonic()
                with anyio.move_on_after(1.0):
                    await client.call_tool("check_citations", {"text": text})
                took["check"] = time.monotonic() - start
                await anyio.sleep(0.1)  # the cancellation reaches the server
                took["article"] = await anyio.to_thread.run_sync(_timed, law.show, KP, "154")

        anyio.run(main)
    assert took["check"] < 2, f"the call was not given up: {took}"
    assert took["article"] < 0.5, f"an article waited {took['article']:.2f}s for a check nobody awaited"
