"""RAC as VerDICt configures it (seed 001, eq. 13 and Appendix D): the readings of the top-20 in one call.

The same relaxed query and the same top-20 passages as VerDICt, then one long-context call that lists every
reading the passages support with its answer (RAC's extraction step, seed 002 Table 10). The paper's RAC prompt
also writes the long answer in that call; here the long answer is the same optional step as VerDICt's, its cost
kept apart in ``trace.notes["long_answer_cost"]``. Cost: one retrieval and 1 + 1 LM calls (relax + extract).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import dspy

from disambig.lm.usage import measured
from disambig.programs.conflicts import find_conflicts
from disambig.programs.knobs import Knob
from disambig.programs.rac import RAC, distinct
from disambig.programs.result import make_prediction
from disambig.programs.verdict.program import (
    RELAX_DEMOS,
    LongAnswer,
    check_choice,
    cost,
    listed,
    relaxed_query,
    with_demos,
)
from disambig.signatures import RelaxQuery


class RACTop20(dspy.Module):
    """Relax, retrieve the top-k once, extract readings and answers from all k passages in one call.

    Args:
        retriever: any retriever with ``search(query, k)`` and ``size``.
        k: passages in the one extraction call (the paper's 20; clamped to the corpus size).
        relax: search with the relaxed query (the paper) or the question itself.
        cite: ``"passage"`` keeps the passage each reading cites; ``"none"`` drops it, as the paper's RAC gives
            none (grounded metrics then judge the reading against all k passages).
        long_answer: ``"consolidate"`` (RAC's consolidation call over the k passages), ``"list"`` or ``"none"``.
    """

    KNOBS = {"k": Knob(5, 40, step=5)}

    def __init__(self, retriever: Any, k: int = 20, relax: bool = True,
                 cite: Literal["passage", "none"] = "passage", long_answer: LongAnswer = "consolidate") -> None:
        super().__init__()
        check_choice("cite", cite, ("passage", "none"))
        check_choice("long_answer", long_answer, ("consolidate", "list", "none"))
        self.retriever = retriever
        self.k, self.relax, self.cite, self.long_answer = k, relax, cite, long_answer
        self.relaxer = with_demos(RelaxQuery, RELAX_DEMOS)
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            query = relaxed_query(self.relaxer, question) if self.relax else question
            passages = self.retriever.search(query, min(self.k, self.retriever.size))
            trace.retrieval_calls += 1
            claims = self.rac.claims(question, passages)
            found, conflicts = distinct(claims), find_conflicts(claims)
            with measured() as extra:
                long_answer = self.write(question, passages, found)
            if self.cite == "none":
                found = [replace(i, passage_ids=()) for i in found]
            trace.notes.update(relaxed_query=query, long_answer_cost=cost(extra))
        trace.notes["method_lm_calls"] = trace.lm_calls - extra.lm_calls
        return make_prediction(found, long_answer, trace, passages, conflicts)

    def write(self, question: str, passages: list[Any], found: list[Any]) -> str:
        if self.long_answer == "none" or not found:
            return ""
        return listed(found) if self.long_answer == "list" else self.rac.write(question, passages, found)
