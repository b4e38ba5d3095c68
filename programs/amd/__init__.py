"""AMD (seed 003): dialogic query expansion, and the retrievers that search with an expanded query.

``program`` is AMD's expansion (Socratic questions, dialogic answers, reflective feedback); ``expansion`` the
paper's baseline expansions (Q2D, Q2C, GenQR) and the prediction every expansion returns; ``expanded_retrieval``
the sparse, dense and RRF retrievers over them and ``ExpansionSearch``, the program registered as ``amd``.
"""

from __future__ import annotations

from disambig.programs.amd.expanded_retrieval import ExpansionSearch, build_expanded
from disambig.programs.amd.expansion import GenQR, QueryToChainOfThought, QueryToDocument
from disambig.programs.amd.program import AMD

__all__ = ["AMD", "ExpansionSearch", "GenQR", "QueryToChainOfThought", "QueryToDocument", "build_expanded"]
