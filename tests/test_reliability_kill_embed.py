"""Reliability: kill -9 at many points of an ingest that embeds through the Ollama stand-in, then a
rerun and `pipeline embed`.
"""
from __future__ import annotations

import pytest
from support.paths import require_mirror
from ollama_stand_in import OllamaStandIn
from reliability_helpers import HTML_ACT, HTML_ACT_2, kill_run, write_notes


@pytest.fixture(scope="module", autouse=True)
def _write_notes():
    yield
    write_notes()


# --- 3. kill -9 at many points, then a rerun (with embedding) ---------------------------------------

EMBED_KILL_ACTS = (HTML_ACT_2, HTML_ACT)  # 35 articles, then 4: the embedding is the phase looked at here
# Kill points as in test_reliability_kill.py, one for each state a kill can leave behind, here with the
# embedding's: nothing written, inside each act's transaction, in the first batch of vectors (none
# committed), and with some batches committed. (Points that landed in the same states, in the first
# act's parse, at '[2/2]' and 0.1 s into the embedding, were dropped to keep the suite within its five
# minutes.)
EMBED_KILL_POINTS = [
    ("after", 0.3), ("sql", "COPY chunks"), ("sql", "COPY chunks", "[2/2]"), ("sql", "COPY embeddings"),
    ("line", "embedding (bge-m3)", 0.4), ("line", "embedding (bge-m3)", 0.9),
]


@pytest.mark.slow  # 6 ingest runs killed, rerun and drained
def test_kill_9_during_ingest_with_embedding_then_rerun_and_embed_complete(scratch_url: str) -> None:
    require_mirror()
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        env = {"DATABASE_URL": scratch_url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url,
               "EMBED_MODEL": "bge-m3", "EMBED_BATCH_SIZE": "8"}

        def slow_down(on: bool) -> None:
            # A batch of the killed run takes a moment, so kills also land inside the drain; the
            # reference run and the reruns are checked for what they store, and need no delay.
            ollama.delay = 0.1 if on else 0.0

        kill_run(scratch_url, EMBED_KILL_ACTS, env, EMBED_KILL_POINTS, "embedding via Ollama stand-in", "bge-m3",
                 slow_down)
