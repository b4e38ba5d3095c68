"""Every LLM step of the suite as a ``dspy.Signature``, grouped by method."""

from __future__ import annotations

from disambig.signatures.answer import ClosedBookAnswer

__all__ = ["ClosedBookAnswer"]
