"""Modules loaded on first use: numpy and httpx cost every `pipeline` command ~0.17 s of start-up,
and most commands (show, acts, db …) never touch them."""
from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any


class _LazyModule:
    """Stands for a module until an attribute of it is first read, then imports it (under a lock:
    importlib's own LazyLoader lets a second thread see the module half-run, and the MCP server and
    the web page embed in worker threads)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            with self._lock:
                if self._module is None:
                    self._module = importlib.import_module(self._name)
                module = self._module
        return getattr(module, attr)


def lazy_module(name: str) -> Any:
    """``name`` imported when an attribute of it is first read."""
    return _LazyModule(name)
