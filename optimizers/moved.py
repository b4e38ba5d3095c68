"""Where ``optimizers/serving_*.py`` went when serving became a layer of its own (issue 39): old name -> new name.

An MLflow model logged before the move carries the ``serving_model.py`` of its day as its code, and MLflow runs that
frozen copy, not today's ``serving/model.py``, whoever loads the model (``disambig serve``, ``disambig batch``, a
Spark executor, ``mlflow.pyfunc.load_model``); it imports ``disambig.optimizers.serving_input`` and, when it loads,
``serving_cache``. ``MovedModules`` answers an import of an old name with the module at its new one (the very same
module, so its caches and settings are shared) and of no other name. ``disambig.optimizers`` puts it on
``sys.meta_path`` when it is imported, which any import of an old name does first; nothing of ``disambig.serving``
is imported until an old name is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

MOVED: dict[str, str] = {
    f"disambig.optimizers.serving_{name}": f"disambig.serving.{name}"
    for name in ("admission", "app", "cache", "connections", "drain", "errors", "input", "lm", "model", "ping",
                 "protocol", "write")
}
"""Each module that moved, by its name before the move."""


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a name of ``MOVED`` and loads it as the module at its new name."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # a placeholder, replaced in sys.modules by exec_module

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns whatever sys.modules holds under the name once this returns.
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


def install() -> None:
    """Put a ``MovedModules`` at the end of ``sys.meta_path``, once however often this runs (a real module at an
    old name, were one ever put back, would still be found first)."""
    if not any(type(finder).__qualname__ == MovedModules.__qualname__ and type(finder).__module__ == __name__
               for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
