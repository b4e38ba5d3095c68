"""A question read alone: does it have more than one answer? (measured for the router's detector, not used by it)"""

from __future__ import annotations

from typing import Literal

import dspy


class QuestionHasReadings(dspy.Signature):
    """Read the question on its own, without looking anything up. Could people asking it mean different things
    that have different answers (another person, event, year, edition, place or sense of a word)? Reply Yes if
    it can be read in more than one way, No if it has one answer."""

    # Ours (not in the seeds): the LM's view of a question, read as P(Yes); bench/quality/readings_probe.py scores it.
    question: str = dspy.InputField()
    verdict: Literal["Yes", "No"] = dspy.OutputField()
