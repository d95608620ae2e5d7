"""The package's stages depend one way, and no module imports itself back (function-level imports and
TYPE_CHECKING ones included): read from the source, so a new import that breaks the rule fails here."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pipeline"

# The stages in order: a module may import its own stage and the ones before it, never a later one.
STAGES = ("core", "sources", "storage", "embedders", "indexing", "retrieval", "answering", "service", "interfaces")
# The package's own top: `pipeline` (the Python API's entry) and `python -m pipeline`.
TOP = {"pipeline", "pipeline.__main__"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # "from pipeline.storage import db" imports the module pipeline.storage.db
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def stage(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_every_module_is_in_a_stage():
    assert {n for n in MODULES if n not in TOP and stage(n) is None} == set()
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name not in ("data", "__pycache__")} == set(STAGES)


def test_imports_point_to_earlier_stages_only():
    wrong = []
    for name, targets in GRAPH.items():
        if name in TOP:
            continue
        for target in targets:
            if target == "pipeline" or STAGES.index(stage(target)) > STAGES.index(stage(name)):
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def test_no_import_cycles():
    """Tarjan's strongly connected components over every import, function-level ones included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert cycles == []


# What a face (the CLI, the MCP server, the web page) may import: the service and what it gives, and
# core's shared rules; nothing below the service (it parses input and renders output, nothing more).
FACE_MAY_IMPORT = ("core", "service", "interfaces")


def faces_reaching_past_the_service(graph: dict[str, set[str]]) -> set[str]:
    return {f"{n} -> {t}" for n, targets in graph.items() if stage(n) == "interfaces"
            for t in targets if t == "pipeline" or stage(t) not in FACE_MAY_IMPORT}


def test_the_faces_import_only_the_service_and_core():
    """The CLI, the MCP server and the web page reach everything below through pipeline.Service and its
    records; they open no connection and re-state no rule of a lower stage."""
    assert [n for n in GRAPH if stage(n) == "interfaces"]
    assert faces_reaching_past_the_service(GRAPH) == set()
    assert {f"{n} -> {t}" for n in GRAPH if stage(n) == "interfaces" for t in GRAPH[n]
            if t == "pipeline.service.pool"} == set()


def test_the_face_rule_sees_a_face_reaching_past_the_service():
    """The check can fail: a face importing storage or answering is reported."""
    graph = {"pipeline.interfaces.probe": {"pipeline.storage.schema", "pipeline.answering.answer",
                                           "pipeline.service", "pipeline.core.errors"}}
    assert faces_reaching_past_the_service(graph) == {"pipeline.interfaces.probe -> pipeline.storage.schema",
                                                      "pipeline.interfaces.probe -> pipeline.answering.answer"}


def test_the_rules_checker_sees_a_broken_rule(tmp_path):
    """The reader of imports finds a function-level import of a later stage (the check can fail)."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from pipeline.interfaces import cli\n    from ..service import pool\n")
    MODULES["pipeline.core.probe"] = module
    try:
        assert _imports("pipeline.core.probe", module) == {"pipeline.interfaces.cli", "pipeline.service.pool"}
    finally:
        del MODULES["pipeline.core.probe"]


def test_the_benchmarks_import_modules_that_exist():
    """bench/ (bench/archive too: kept to trace a figure to its code) imports only modules the package has:
    a module moved or split (indexing/embedders.py -> embedders/) leaves no script behind that cannot start."""
    bench = PACKAGE.parent / "bench"
    missing = []
    for path in sorted(bench.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            missing += [f"{path.relative_to(bench.parent)}: {n}" for n in names
                        if n.startswith("pipeline") and n not in MODULES]
    assert missing == []
