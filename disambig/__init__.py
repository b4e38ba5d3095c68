"""disambig: DSPy programs for ambiguous and find-all questions over retrieval.

Importing the package is cheap: no model, JVM or network is touched until a function needs it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load"]


def load(source, retriever=None, settings=None):  # noqa: ANN001, ANN201 - documented in disambig.optimizers.loading.load
    """Load a compiled program from a state file or MLflow model URI (see ``disambig.optimizers.loading.load``)."""
    from disambig.optimizers.loading import load as _load

    return _load(source, retriever=retriever, settings=settings)
