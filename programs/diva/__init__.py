"""DIVA (seed 002): diversify retrieval over pseudo-interpretations, verify it, adapt the answer to its grade.

``program`` holds ``DIVA`` and its ablation without adaptive generation (``DIVANoAdapt``); ``diversify`` the
numeric steps (union of top-K, pruning by mean relevance, the retrieval grade).
"""

from __future__ import annotations

from disambig.programs.diva.program import DIVA, DIVANoAdapt

__all__ = ["DIVA", "DIVANoAdapt"]
