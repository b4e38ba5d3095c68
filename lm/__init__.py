"""Language models: one function turns a spec string into a configured ``dspy.LM``, and one makes it the run's LM
with the project's adapter (the compact prompts every command and measurement uses)."""

from __future__ import annotations

from disambig.lm.runtime import configure_dspy
from disambig.lm.spec import LMSpec, make_lm, parse_spec

__all__ = ["LMSpec", "configure_dspy", "make_lm", "parse_spec"]
