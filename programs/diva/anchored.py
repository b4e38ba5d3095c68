"""DIVA with anchored answers: each pseudo-interpretation answered on its own, which also verifies the retrieval.

Ours, not in the seeds. DIVA's answer step is RAC: one extraction call that lists the readings the passages
support. On the embedded models that call finds fewer readings than the questions have (1.6-1.9 a question on
ASQA, whose questions have about 3) and often repeats the ambiguous question as the reading, so the readings
DIVA's first step wrote are lost on the way. Here they are kept: each pseudo-interpretation is asked of the
diversified passages alone (``AnswerReading``: a short answer and the passage that states it, or unknown), and
the answered ones are the readings the long answer consolidates.

The same calls grade the retrieval, in place of DIVA's separate verification calls (eq. 7): Useful when every
reading is answered, PartialUseful when some are, Useless (closed-book answer) when none is. The calls are
independent (``--parallel-calls``) and share the passages as their prompt prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dspy

from disambig.data.text import normalize
from disambig.lm.parallel import ordered_map
from disambig.lm.usage import measured
from disambig.programs.context import format_passages, passage_at, round_robin, unique
from disambig.programs.diva.diversify import grade
from disambig.programs.interpret import PseudoInterpreter
from disambig.programs.knobs import Knob
from disambig.programs.rerank import Reranker
from disambig.programs.result import Interpretation, make_prediction
from disambig.programs.seed_demos import UNKNOWN, predict
from disambig.signatures import AnswerReading, ClosedBookAnswer, ConsolidateAnswer, Disambiguation


class DIVAAnchored(dspy.Module):
    """Pseudo-interpretations, diversified passages, one answer call per reading, the long answer over them.

    Args:
        retriever: any retriever with ``search(query, k)``.
        embedder: sentence encoder for the diversification (default: the retriever's own).
        k: passages kept after pruning (the paper's 5).
        first_stage: candidates retrieved for the question before diversification.
        max_readings: pseudo-interpretations kept (each costs one answer call).
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10), "max_readings": Knob(2, 6)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5) -> None:
        super().__init__()
        self.retriever = retriever
        self.reranker = Reranker(retriever, embedder, first_stage)
        self.k = k
        self.interpret = PseudoInterpreter(max_readings)
        self.answer = predict(AnswerReading)
        self.consolidate = predict(ConsolidateAnswer)
        self.closed_book = predict(ClosedBookAnswer)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings = self.interpret.on_verifier(question)
            passages = spread(self.reranker, question, readings.questions, self.k)
            trace.retrieval_calls += 1 + sum(normalize(r) != normalize(question) for r in readings.questions)
            found, long_answer = self.answered(question, readings.questions, passages)
            quality = grade([1.0 if f is not None else 0.0 for f in found])
            kept = [f for f in found if f is not None]
            if not kept:
                long_answer = self.closed_book(question=question).long_answer
            trace.notes.update(readings.notes())
            trace.notes.update(grade=quality, answered=[f is not None for f in found])
        return make_prediction(kept, long_answer, trace, passages if kept else [], [])

    def answered(self, question: str, readings: tuple[str, ...],
                 passages: list[Any]) -> tuple[list[Interpretation | None], str]:
        """Each reading's answer from the passages (None where they do not state one) and, when any is answered,
        the long answer over the answered ones."""
        context = format_passages(passages)
        found = ordered_map(lambda reading: self.ask(context, reading, passages), readings)
        kept = [f for f in found if f is not None]
        if not kept:
            return found, ""
        pairs = [Disambiguation(question=f.question, answer=f.answer, passage=_number(f, passages)) for f in kept]
        written = self.consolidate(passages=context, question=question, disambiguations=pairs).long_answer
        return found, completed(written, kept)

    def ask(self, context: str, reading: str, passages: list[Any]) -> Interpretation | None:
        """One reading's answer citing the passage that states it, or None (unknown, empty or no such passage)."""
        result = self.answer(passages=context, question=reading)
        answer = (result.answer or "").strip()
        cited = passage_at(passages, result.passage)
        if not normalize(answer) or normalize(answer) == UNKNOWN or cited is None:
            return None
        return Interpretation(reading, answer, (cited.id,))


def spread(reranker: Reranker, question: str, readings: Sequence[str], k: int) -> list[Any]:
    """The ``k`` passages, taken rank by rank from several rankings (every ranking's best passage before any second
    best): the question's own (VanillaRAG's: first-stage candidates reranked by cosine) and each reading's, as the
    retriever ranks the whole corpus for it, so that each reading has its own passage.

    DIVA's eq. 4-5 instead rerank the question's candidates by cosine to each reading and keep those most relevant
    to all readings on average, which favours passages about the topic in general over the one that answers a
    single reading.
    """
    others = [r for r in readings if normalize(r) != normalize(question)]
    lists = [reranker.search(question, k), *reranker.retriever.batch_search(others, k)] if others else [
        reranker.search(question, k)]
    return unique(round_robin(lists), limit=k)


def completed(long_answer: str, readings: Sequence[Interpretation]) -> str:
    """``long_answer`` with one sentence added for each answered reading whose answer it leaves out
    (``Reading question? Answer.``), so that the long answer names every reading the passages answered."""
    text = normalize(long_answer)
    missing = [r for r in readings if normalize(r.answer) not in text]
    added = " ".join(f"{r.question.strip()} {r.answer.strip().rstrip('.')}." for r in missing)
    return f"{long_answer.strip()} {added}".strip()


def _number(found: Interpretation, passages: list[Any]) -> int:
    ids = [p.id for p in passages]
    return ids.index(found.passage_ids[0]) + 1


__all__ = ["DIVAAnchored"]
