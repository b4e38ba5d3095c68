"""ADF (seed 000): a gate on the geometry of the first retrieval, then K-means sub-questions with HyDE and RRF.

``program`` is the ``dspy.Module``; ``gate`` the ambiguity gate that learns its thresholds (eq. 3); ``geometry`` the
numeric steps (coherence, adaptive k, K-means, the relevance filter, the merge; eq. 1-6).
"""

from __future__ import annotations

from disambig.programs.adf.gate import AmbiguityGate, gate_metrics, is_ambiguous
from disambig.programs.adf.geometry import Coherence, coherence
from disambig.programs.adf.program import ADF

__all__ = ["ADF", "AmbiguityGate", "Coherence", "coherence", "gate_metrics", "is_ambiguous"]
