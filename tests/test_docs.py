"""The documentation: README.md is a short front door, docs/ holds the rest, and no link leads nowhere.

- README.md stays at most 15 000 bytes; what does not fit moves to docs/ (docs/README.md lists it).
- Every relative link in README.md and docs/*.md reaches a file, and a #fragment a heading there.
- README's two set-up commands stay word for word; the second is the one .ci/run runs.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])

# The two commands a newcomer copies: changing either is a decision, not an edit of the prose.
MAIN_JOB = ("python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pipeline ingest --source "
            "../shared/eli --act DU/2025/277 && .venv/bin/pipeline ask \"Pracuję już 12 lat. Ile dni urlopu "
            "mi przysługuje?\"")
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest -q"

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced blocks, code spans made opaque (a `[x](y)` in code is not a link)."""
    return re.sub(r"`[^`\n]+`", "code", FENCE.sub("", text))


def _anchors(path: Path) -> set[str]:
    """The #fragments GitHub gives a file's headings: lower case, punctuation dropped, spaces to hyphens."""
    slugs: set[str] = set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6} +(.+?) *#*$", line):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
            n = 1
            while (slug if n == 1 else f"{slug}-{n - 1}") in slugs:
                n += 1
            slugs.add(slug if n == 1 else f"{slug}-{n - 1}")
    return slugs


def test_readme_is_a_front_door() -> None:
    size = (REPO / "README.md").stat().st_size
    assert size <= 15_000, f"README.md is {size} bytes: move the detail to docs/ (docs/README.md lists it)"


def test_docs_index_lists_every_doc() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    listed = set(LINK.findall(_prose(index)))
    assert {p.name for p in DOCS if p.parent.name == "docs" and p.name != "README.md"} <= listed


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_reach_a_file(doc: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: … : not this tree's
            continue
        name, _, fragment = target.partition("#")
        path = (doc.parent / name).resolve() if name else doc
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and path.suffix == ".md" and fragment not in _anchors(path):
            broken.append(f"{target} (no heading #{fragment} in {path.relative_to(REPO)})")
    assert broken == []


def test_readme_holds_the_set_up_commands_verbatim() -> None:
    blocks = FENCE.findall((REPO / "README.md").read_text(encoding="utf-8"))
    lines = {line for block in blocks for line in block.splitlines()}
    assert MAIN_JOB in lines and TEST_COMMAND in lines
    # CI runs the README's test command, adding only quieter pip output, a timing list and its arguments.
    ci = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.startswith("python3 -m venv")]
    assert len(ci) == 1
    run = ci[0].replace(" install -q ", " install ").replace(' "$@"', "")
    assert re.sub(r" --durations=\d+", "", run) == TEST_COMMAND
