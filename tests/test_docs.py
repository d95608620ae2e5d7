"""The documentation: README.md is a short front door, docs/ holds the rest, and no link leads nowhere.

- README.md stays at most 15 000 bytes; what does not fit moves to docs/ (docs/README.md lists it).
- Every relative link in README.md and docs/*.md reaches a file, and a #fragment a heading there.
- README's two set-up commands stay word for word; the second is the one .ci/run runs.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import REPO

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


# The environment variables the package reads: names of these families, in the package's own text.
_SETTING = re.compile(r"(?:EMBED|ANSWER|OPENROUTER|PIPELINE|CHUNK|OLLAMA|ELI|DATABASE)_[A-Z0-9_]+")
_NOT_SETTINGS = {"OPENROUTER_URL"}  # a constant of pipeline.answering.chat, read from no environment


def _package_strings() -> dict[str, set[str]]:
    import ast

    found: dict[str, set[str]] = {}
    for path in (REPO / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.setdefault(node.value, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_setting_the_package_reads_is_documented() -> None:
    documented = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    read = {s for s in _package_strings() if _SETTING.fullmatch(s)} - _NOT_SETTINGS
    assert read and sorted(s for s in read if s not in documented) == []


# "pipeline.storage.store", "pipeline/sources/parse/cache.py": a module the package's own docstrings and
# comments name. Those that moved must be renamed where they are named (settings and a logger's name
# aside: "pipeline.postings_per_lexeme" is a PostgreSQL setting, "pipeline.web" a logger).
_MODULE_PATH = re.compile(r"\bpipeline/[a-z_/]+\.py\b")
_DOTTED = re.compile(r"\bpipeline(?:\.[a-z_]+)+")
_NOT_MODULES = {"pipeline.postings_per_lexeme", "pipeline.polish_dict_file", "pipeline.parallel_arms", "pipeline.web",
                "pipeline.stdin"}


def _names_a_module(name: str) -> bool:
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_package_names_only_modules_that_exist() -> None:
    stale = set()
    for path in (REPO / "pipeline").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        stale |= {(str(path.relative_to(REPO)), p) for p in _MODULE_PATH.findall(text)
                  if not (REPO / p).exists() and not (REPO / "pipeline" / p).exists()}
        stale |= {(str(path.relative_to(REPO)), d) for d in _DOTTED.findall(text)
                  if d not in _NOT_MODULES and not _names_a_module(d)}
    assert sorted(stale) == []
