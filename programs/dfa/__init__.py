"""DFA (seed 004): disambiguate a count question, filter its chunk scope with tools, batch, judge and de-duplicate.

``program`` is the ``dspy.Module`` (stages D, F and A); ``filter`` the tools and snapshots of stage F; ``batching``
and ``dedup`` the numeric parts of stage A. Its count baselines are in ``disambig.programs.baselines``.
"""

from __future__ import annotations

from disambig.programs.dfa.program import DFA

__all__ = ["DFA"]
