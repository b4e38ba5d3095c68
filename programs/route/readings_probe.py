"""The LM's own view of whether a question has several readings, as a probability: one short call per question.

The detector's retrieval features see how the corpus answers a question, not the question; on AmbigNQ questions
whose evidence the wiki slice does not hold they score barely above chance (docs/RESULTS.md). This asks the model
(``QuestionHasReadings``: the question alone, no passages, a one-word reply) and reads P(Yes) from the reply's
log-probabilities where the LM reports them, else the label (``yes_answer``, as DIVA's verifier does). The demos
are ours: one question with readings, one without; they sit before the question, so the embedded model's prompt
cache reuses them.
Measured on AmbigNQ (``bench/quality/readings_probe.py``, docs/RESULTS.md), it adds no signal the router could rely
on, so the router does not call it.
"""

from __future__ import annotations

import dspy

from disambig.lm.yes_probability import YesAnswer, logprob_config, yes_answer
from disambig.programs.seed_demos import QUESTION
from disambig.signatures.route import QuestionHasReadings

DEMOS = [
    {"question": QUESTION, "verdict": "Yes"},  # men's or women's World Cup
    {"question": "What is the chemical symbol for gold?", "verdict": "No"},
]


class ReadingsProbe(dspy.Module):
    """``probe(question=...)`` -> ``YesAnswer`` for the configured LM."""

    def __init__(self) -> None:
        super().__init__()
        self.ask = dspy.Predict(QuestionHasReadings)
        self.ask.demos = [dspy.Example(**demo) for demo in DEMOS]

    def forward(self, question: str) -> YesAnswer:
        return yes_answer(self.ask(question=question, config=logprob_config(dspy.settings.lm)))
