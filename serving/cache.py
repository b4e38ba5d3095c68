"""What a serving process builds once and every load of the pyfunc model reuses: the LM of a spec, the program of
a compiled state.

MLflow loads a models-from-code pyfunc by executing its code file as a fresh module, and a Spark UDF loads the model
once per task; a cache kept in that file would be rebuilt every time. This importable module outlives those loads,
so an executor's Python worker loads the embedded model (or opens the indexes) once, not per task or row.

``DISAMBIG_LM_FACTORY`` (``package.module:function`` or ``/path/file.py:function``) names a function of the settings
that returns the ``dspy.LM`` to use instead of the spec: a hook for LMs that a spec cannot name, such as the
scripted LMs of the tests and benchmarks, built inside each worker from configuration.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.settings import Settings

LM_FACTORY_ENV = "DISAMBIG_LM_FACTORY"

_LOCK = threading.Lock()
_LMS: dict[tuple[Any, ...], Any] = {}
_PROGRAMS: dict[tuple[Any, ...], Any] = {}
_FACTORIES: dict[str, Callable[[Settings], Any]] = {}


def shared_lm(settings: Settings) -> Any:
    """The process's LM for ``settings`` (its spec, threads, context, decoding, cache), built on first use."""
    factory = os.environ.get(LM_FACTORY_ENV, "")
    key = (factory, *astuple(settings))
    with _LOCK:
        if key not in _LMS:
            _LMS[key] = lm_factory(factory)(settings) if factory else _build_lm(settings)
        return _LMS[key]


def shared_program(state_path: Path, settings: Settings) -> Any:
    """The process's program loaded from ``state_path`` (with its retriever), reloaded only when the file changes."""
    from disambig.optimizers.loading import load

    stat = state_path.stat()
    key = (str(state_path.resolve()), stat.st_mtime_ns, stat.st_size, *astuple(settings))
    with _LOCK:
        if key not in _PROGRAMS:
            _PROGRAMS[key] = load(state_path, settings=settings)
        return _PROGRAMS[key]


def lm_factory(target: str) -> Callable[[Settings], Any]:
    """The function ``target`` (``module:function`` or ``/path/file.py:function``) names, imported once."""
    if target in _FACTORIES:
        return _FACTORIES[target]
    where, _, name = target.rpartition(":")
    if not where or not name:
        raise ConfigurationError(f"{LM_FACTORY_ENV}={target!r} must be 'package.module:function' or "
                                 "'/path/file.py:function'")
    module = _module_from_file(Path(where)) if where.endswith(".py") else importlib.import_module(where)
    function = getattr(module, name, None)
    if not callable(function):
        raise ConfigurationError(f"{LM_FACTORY_ENV}={target!r}: {where!r} has no function {name!r}")
    _FACTORIES[target] = function
    return function


def _module_from_file(path: Path) -> Any:
    if not path.is_file():
        raise ConfigurationError(f"{LM_FACTORY_ENV} names {str(path)!r}, which does not exist on this machine")
    spec = importlib.util.spec_from_file_location(f"disambig_lm_factory_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_lm(settings: Settings) -> Any:
    from disambig.lm.runtime import build_lm

    return build_lm(settings)
