"""Where the tests' data is: the repository, the ELI mirror and the eval questions in ../shared."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("PIPELINE_SHARED") or REPO.parent / "shared")
ELI_MIRROR = SHARED / "eli"
EVAL_DIR = SHARED / "eval"
CORPUS_ACTS = ("DU/2025/277", "DU/2024/581")  # the search corpora: Kodeks pracy, the patient rights act


def require_mirror() -> Path:
    """The ELI mirror folder; a test without it is skipped (a failure when PIPELINE_SHARED is set)."""
    if not (ELI_MIRROR / "acts").is_dir():
        if os.environ.get("PIPELINE_SHARED"):
            pytest.fail(f"PIPELINE_SHARED is set but {ELI_MIRROR} has no acts/")
        pytest.skip(f"ELI mirror not found at {ELI_MIRROR}")
    return ELI_MIRROR


def mirror_text(act: str) -> tuple[str, bytes]:
    """(format, bytes) of an act's text in the mirror: its HTML when it has one, else its PDF."""
    folder = require_mirror() / "acts" / act
    for fmt in ("html", "pdf"):
        path = folder / f"text.{fmt}"
        if path.is_file() and path.stat().st_size:
            return fmt, path.read_bytes()
    raise FileNotFoundError(f"{act} has no text in {ELI_MIRROR}")


def mirror_meta(act: str) -> dict:
    """An act's record (meta.json) in the mirror, as the API answers it."""
    import json

    return json.loads((require_mirror() / "acts" / act / "meta.json").read_bytes())
