"""DIVA with anchored answers: each pseudo-interpretation answered on its own, which also verifies the retrieval.

Ours, not in the seeds. DIVA's answer step is RAC: one extraction call that lists the readings the passages
support. On the embedded models that call finds fewer readings than the questions have (1.6-1.9 a question on
ASQA, whose questions have about 3) and often repeats the ambiguous question as the reading, so the readings
DIVA's first step wrote are lost on the way. Here they are kept: each pseudo-interpretation is asked of the
diversified passages alone (``AnswerReading``: a short answer and the passage that states it, or unknown), and
the answered ones are the readings the long answer consolidates, which names each of them (a sentence is added for
an answer the consolidation leaves out).

The same calls grade the retrieval, in place of DIVA's separate verification calls (eq. 7): Useful when every
reading is answered, PartialUseful when some are, Useless (closed-book answer) when none is. The calls are
independent (``--parallel-calls``) and share the passages as their prompt prefix. A reply that does not parse
counts as unanswered (``answer_failures`` in the trace), so one bad reply does not end the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import dspy
from dspy.utils.exceptions import AdapterParseError

from disambig.data.text import normalize
from disambig.lm.parallel import ordered_map
from disambig.lm.usage import measured
from disambig.programs.abstain import says_unknown
from disambig.programs.context import format_passages, passage_at, passage_number, round_robin, unique
from disambig.programs.diva.diversify import grade
from disambig.programs.interpret import PseudoInterpreter, Readings
from disambig.programs.knobs import Knob
from disambig.programs.rerank import Reranker
from disambig.programs.result import Interpretation, make_prediction
from disambig.programs.seed_demos import predict
from disambig.signatures import AnchoredAnswer, ClosedBookAnswer, ConsolidateAnswer, Disambiguation


class DIVAAnchored(dspy.Module):
    """Pseudo-interpretations, passages spread over them, one answer call per reading, the long answer over them.

    Args:
        retriever: any retriever with ``search(query, k)``, ``batch_search(queries, k)`` and ``size``.
        embedder: sentence encoder of the reranker that orders the question's own candidates (default: the
            retriever's own).
        k: passages given to the answer calls.
        first_stage: candidates retrieved for the question and reranked by cosine to it (VanillaRAG's ranking).
        max_readings: pseudo-interpretations kept (each costs one answer call and one retrieval).
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10), "max_readings": Knob(2, 6)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50,
                 max_readings: int = 5) -> None:
        super().__init__()
        self.retriever = retriever
        self.reranker = Reranker(retriever, embedder, first_stage)
        self.k = k
        self.interpret = PseudoInterpreter(max_readings)
        self.answer = predict(AnchoredAnswer)
        self.consolidate = predict(ConsolidateAnswer)
        self.closed_book = predict(ClosedBookAnswer)

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            readings, own = self.readings(question)
            passages, searches = spread(self.reranker, question, readings.questions, self.k, own)
            trace.retrieval_calls += searches + (own is not None)
            context = format_passages(passages)
            asked = ordered_map(lambda reading: self.ask(context, reading, passages), readings.questions) \
                if passages else [Asked(None, False) for _ in readings.questions]
            kept = [a.found for a in asked if a.found is not None]
            if kept:
                pairs = [Disambiguation(question=f.question, answer=f.answer,
                                        passage=passage_number(passages, f.passage_ids[0])) for f in kept]
                written = self.consolidate(passages=context, question=question, disambiguations=pairs).long_answer
                long_answer = completed(written, kept)
            else:
                long_answer = self.closed_book(question=question).long_answer
            trace.notes.update(readings.notes())
            trace.notes.update(grade=grade([float(a.found is not None) for a in asked]),
                               answered=[a.found is not None for a in asked],
                               answer_failures=sum(a.failed for a in asked))
        return make_prediction(kept, long_answer, trace, passages, [])

    def readings(self, question: str) -> tuple[Readings, list[Any] | None]:
        """The pseudo-interpretations (on the verifier LM when the run has one), and the question's own ranking when
        writing them took one (None: they read the question alone)."""
        return self.interpret.on_verifier(question), None

    def ask(self, context: str, reading: str, passages: list[Any]) -> Asked:
        """One reading's answer citing the passage that states it; none when the reply says unknown (in any
        words), cites no passage, or does not parse."""
        try:
            result = self.answer(passages=context, question=reading)
        except AdapterParseError:
            return Asked(None, True)
        answer = (result.answer or "").strip()
        cited = passage_at(passages, result.passage)
        if says_unknown(answer) or cited is None:
            return Asked(None, False)
        return Asked(Interpretation(reading, answer, (cited.id,)), False)


class Asked(NamedTuple):
    """One answer call's outcome: the answered reading (None when unanswered) and whether the reply failed to parse."""

    found: Interpretation | None
    failed: bool


def spread(reranker: Reranker, question: str, readings: Sequence[str], k: int,
           own: list[Any] | None = None) -> tuple[list[Any], int]:
    """The ``k`` passages and the searches made for them: passages taken rank by rank from several rankings (every
    ranking's best passage before any second best), each reading's as the retriever ranks the whole corpus for it,
    and the question's own (VanillaRAG's: first-stage candidates reranked by cosine) unless there are ``k`` readings
    or more, so that every reading has its own passage.

    DIVA's eq. 4-5 instead rerank the question's candidates by cosine to each reading and keep those most relevant
    to all readings on average, which favours passages about the topic in general over the one that answers a
    single reading. ``own``: the question's ranking when the caller made it already (not searched or counted again).
    """
    others = [r for r in readings if normalize(r) != normalize(question)]
    searched = own is None and len(others) < k
    mine = [reranker.search(question, k) if searched else own] if len(others) < k else []
    lists = mine + (reranker.retriever.batch_search(others, k) if others else [])
    return unique(round_robin(lists), limit=k), int(searched) + len(others)


def completed(long_answer: str, readings: Sequence[Interpretation]) -> str:
    """``long_answer`` with one sentence added for each answered reading whose answer it leaves out (as whole
    words, a possessive or plural "s" allowed: "43" is not in "430 parks", "Shania Twain" is in "Shania Twain's"),
    ``Reading question? Answer.``, so that the long answer names every reading the passages answered."""
    text = f" {normalize(long_answer)} "
    missing = [r for r in readings if not any(f" {normalize(r.answer)}{end} " in text for end in ("", "s"))]
    added = " ".join(f"{r.question.strip()} {r.answer.strip().rstrip('.')}." for r in missing)
    return f"{long_answer.strip()} {added}".strip()


__all__ = ["DIVAAnchored"]
