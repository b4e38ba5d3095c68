"""Answer-writing steps shared by the methods and their baselines."""

from __future__ import annotations

import dspy


class ClosedBookAnswer(dspy.Signature):
    """The question may be ambiguous and have several answers, one for each reading of it. Without any
    passages, write a long-form answer from your own knowledge that names each reading you know of and
    gives its answer."""

    # Seed: DIVA (002), Appendix D, Table 12 (prompt I_1, closed-book generation).
    question: str = dspy.InputField()
    long_answer: str = dspy.OutputField(desc="a few sentences covering each reading of the question and its answer")
