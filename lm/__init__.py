"""Language models: one function turns a spec string into a configured ``dspy.LM``."""

from __future__ import annotations

from disambig.lm.spec import LMSpec, make_lm, parse_spec

__all__ = ["LMSpec", "make_lm", "parse_spec"]
