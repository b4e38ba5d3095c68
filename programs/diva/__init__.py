"""DIVA (seed 002): diversify retrieval over pseudo-interpretations, verify it, adapt the answer to its grade.

``program`` holds ``DIVA`` and its ablation without adaptive generation (``DIVANoAdapt``); ``diversify`` the
numeric steps (union of top-K, pruning by mean relevance, the retrieval grade); ``anchored`` our variant that
answers each pseudo-interpretation on its own (``DIVAAnchored``); ``grounded`` ours that writes the
pseudo-interpretations from the passages retrieved for the question (``DIVAGrounded``, and
``DIVAAnchoredGrounded`` with anchored answers).
"""

from __future__ import annotations

from disambig.programs.diva.anchored import DIVAAnchored
from disambig.programs.diva.grounded import DIVAAnchoredGrounded, DIVAGrounded
from disambig.programs.diva.program import DIVA, DIVANoAdapt

__all__ = ["DIVA", "DIVAAnchored", "DIVAAnchoredGrounded", "DIVAGrounded", "DIVANoAdapt"]
