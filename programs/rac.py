"""RAC (retrieval-augmented clarification): extract readings and answers from passages, then consolidate.

Seed: DIVA (002), eq. 1 and 2 (prompts I_e and I_g, Tables 10 and 11), after Kim et al. (2023). Shared by
VanillaRAG, IterativeRAG, PerReadingRAG, RACTop20 and DIVA.

Between the two steps, the extracted (reading, answer, passage) triples are checked for conflicts: passages that
answer one reading differently (``programs/conflicts.py``). The conflicting answers stay readings; the conflicts
go to the prediction, whose long answer says the sources disagree (``make_prediction``; no extra LM call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import dspy

from disambig.data.text import normalize
from disambig.programs.conflicts import Conflict, find_conflicts
from disambig.programs.context import format_passages, passage_at, passage_number
from disambig.programs.result import Interpretation
from disambig.programs.seed_demos import predict
from disambig.signatures import ConsolidateAnswer, Disambiguation, ExtractInterpretations


class Answered(NamedTuple):
    """What RAC returns: the readings, the long answer, and the readings the passages answer differently."""

    interpretations: list[Interpretation]
    long_answer: str
    conflicts: list[Conflict]


class RAC(dspy.Module):
    """Two LM calls: ``extract`` lists (reading, answer, passage) triples; ``consolidate`` writes the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.extract = predict(ExtractInterpretations)
        self.consolidate = predict(ConsolidateAnswer)

    def forward(self, question: str, passages: Sequence[Any]) -> Answered:
        claims = self.claims(question, passages)
        found = distinct(claims)
        return Answered(found, self.write(question, passages, found), find_conflicts(claims))

    def interpretations(self, question: str, passages: Sequence[Any]) -> list[Interpretation]:
        """Eq. 1: the readings the passages support, each with its answer and cited passage id."""
        return distinct(self.claims(question, passages))

    def claims(self, question: str, passages: Sequence[Any]) -> list[Interpretation]:
        """Eq. 1's triples as extracted, repeats included: what ``find_conflicts`` reads (who says what)."""
        result = self.extract(passages=format_passages(passages), question=question)
        return to_claims(result.disambiguations or [], passages)

    def write(self, question: str, passages: Sequence[Any], found: list[Interpretation]) -> str:
        """Eq. 2: the long-form answer that consolidates the readings."""
        pairs = [Disambiguation(question=i.question, answer=i.answer, passage=_number(i, passages)) for i in found]
        result = self.consolidate(passages=format_passages(passages), question=question, disambiguations=pairs)
        return result.long_answer


def to_claims(items: Sequence[Disambiguation], passages: Sequence[Any]) -> list[Interpretation]:
    """Every triple with a question and an answer (repeats kept), its passage number mapped to the passage id."""
    out = []
    for item in items:
        if normalize(item.question) and normalize(item.answer):
            cited = passage_at(passages, item.passage)
            out.append(Interpretation(item.question.strip(), item.answer.strip(), (cited.id,) if cited else ()))
    return out


def distinct(claims: Sequence[Interpretation]) -> list[Interpretation]:
    """The first claim of each (normalised question, normalised answer): the readings, each citing one passage."""
    out, seen = [], set()
    for claim in claims:
        key = (normalize(claim.question), normalize(claim.answer))
        if key not in seen:
            seen.add(key)
            out.append(claim)
    return out


def _number(interpretation: Interpretation, passages: Sequence[Any]) -> int:
    return passage_number(passages, interpretation.passage_ids[0] if interpretation.passage_ids else None)
