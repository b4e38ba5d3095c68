"""The closed-book program with a scripted LM: one call, the common prediction shape."""

from __future__ import annotations

import dspy
from dspy.utils import DummyLM

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import PROGRAMS, build_program


def test_closed_book_returns_the_common_prediction():
    dspy.configure(
        lm=DummyLM([{"long_answer": "Men: Ronaldo. Women: Sinclair."}], adapter=CompactJSONAdapter()),
        adapter=CompactJSONAdapter(),
    )
    pred = build_program("closed-book")(question="Who has the highest goals in world football?")
    assert pred.long_answer == "Men: Ronaldo. Women: Sinclair."
    assert pred.interpretations == []
    assert pred.trace["lm_calls"] == 1 and pred.trace["retrieval_calls"] == 0
    assert pred.trace["seconds"] >= 0


def test_registry_lists_closed_book():
    assert "closed-book" in PROGRAMS
