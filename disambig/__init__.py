"""disambig: DSPy programs for ambiguous and find-all questions over retrieval.

Importing the package is cheap: no model, JVM or network is touched until a function needs it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
