"""RAC (retrieval-augmented clarification): extract readings and answers from passages, then consolidate.

Seed: DIVA (002), eq. 1 and 2 (prompts I_e and I_g, Tables 10 and 11), after Kim et al. (2023). Shared by
VanillaRAG, IterativeRAG, DtV-no-verify and DIVA.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dspy

from disambig.data.text import normalize
from disambig.programs.context import format_passages, passage_at
from disambig.programs.result import Interpretation
from disambig.programs.seed_demos import predict
from disambig.signatures import ConsolidateAnswer, Disambiguation, ExtractInterpretations


class RAC(dspy.Module):
    """Two LM calls: ``extract`` lists (reading, answer, passage) triples; ``consolidate`` writes the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.extract = predict(ExtractInterpretations)
        self.consolidate = predict(ConsolidateAnswer)

    def forward(self, question: str, passages: Sequence[Any]) -> tuple[list[Interpretation], str]:
        found = self.interpretations(question, passages)
        return found, self.write(question, passages, found)

    def interpretations(self, question: str, passages: Sequence[Any]) -> list[Interpretation]:
        """Eq. 1: the readings the passages support, each with its answer and cited passage id."""
        result = self.extract(passages=format_passages(passages), question=question)
        return to_interpretations(result.disambiguations or [], passages)

    def write(self, question: str, passages: Sequence[Any], found: list[Interpretation]) -> str:
        """Eq. 2: the long-form answer that consolidates the readings."""
        pairs = [Disambiguation(question=i.question, answer=i.answer, passage=_number(i, passages)) for i in found]
        result = self.consolidate(passages=format_passages(passages), question=question, disambiguations=pairs)
        return result.long_answer


def to_interpretations(items: Sequence[Disambiguation], passages: Sequence[Any]) -> list[Interpretation]:
    """Drop empty and repeated readings (by normalised question and answer); map passage numbers to ids."""
    out, seen = [], set()
    for item in items:
        key = (normalize(item.question), normalize(item.answer))
        if not key[0] or not key[1] or key in seen:
            continue
        seen.add(key)
        cited = passage_at(passages, item.passage)
        out.append(Interpretation(item.question.strip(), item.answer.strip(), (cited.id,) if cited else ()))
    return out


def _number(interpretation: Interpretation, passages: Sequence[Any]) -> int:
    ids = [p.id for p in passages]
    cited = interpretation.passage_ids[0] if interpretation.passage_ids else None
    return ids.index(cited) + 1 if cited in ids else 0
