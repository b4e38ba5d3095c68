"""VerDICt (seed 001): one relaxed retrieval, one feedback call per passage, HDBSCAN medoids as the readings.

``program`` is the ``dspy.Module``; ``consolidate`` the clustering of the readings and their medoids. Its RAC and
"DtV - verification" baselines are in ``disambig.programs.baselines``.
"""

from __future__ import annotations

from disambig.programs.verdict.program import VerDICt

__all__ = ["VerDICt"]
