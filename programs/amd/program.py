"""AMD: agent-mediated dialogic query expansion (Socratic questions, dialogic answers, reflective feedback).

Seed: AMD (003, a one-page poster), sections 2-3. The expansion feeds sparse, dense and RRF retrieval
(``disambig.programs.amd.expanded_retrieval``). The three answers are independent of each other, and so are the three
reflections: each set runs at once on a remote LM (``--parallel-calls``, ``disambig.lm.parallel``).
"""

from __future__ import annotations

import dspy

from disambig.programs.amd.expansion import POSTER_TEMPERATURE, attempt, decoding, each, expansion, joined, kept
from disambig.signatures.amd import DialogicAnswer, ReflectiveFeedback, SocraticQuestions

SUB_QUESTION_KINDS = ("clarification", "assumption_probing", "implication_probing")
"""The poster's three query types, one sub-question each (section 2's table)."""


class AMD(dspy.Module):
    """Interrogate, answer, refine: three sub-questions, one answer each, then keep-or-discard with a refinement.

    ``forward(query)`` returns the expansion prediction (see ``disambig.programs.amd.expansion``): the sub-questions,
    the refined answers that survive reflection (the poster's set S) as ``texts``, and one fusion query per
    sub-question, ``query + sub-question + its refined answer`` (the answer left out when discarded). The poster
    does not say what each per-sub-question ranking searches with; the original query is kept in each so that a
    sub-question that drifts cannot carry its ranking off topic. Notes hold ``kinds``, the raw ``answers``, the
    ``kept`` flags and any ``failures`` (steps whose reply could not be parsed: a failed sub-question step gives no
    sub-questions, a failed answer or reflection discards that answer).

    Args:
        temperature: sampling temperature of the three agents (the poster's 0.5); None keeps the LM's own.
        max_tokens: reply cap per call; None keeps the LM's own (the poster's context is 512 tokens).
        reflect: run the reflective feedback agent; without it every non-empty answer is kept as written (an
            ablation).
    """

    def __init__(self, temperature: float | None = POSTER_TEMPERATURE, max_tokens: int | None = None,
                 reflect: bool = True) -> None:
        super().__init__()
        self.temperature, self.max_tokens, self.reflect = temperature, max_tokens, reflect
        config = decoding(temperature, max_tokens)
        self.socratic = dspy.Predict(SocraticQuestions, **config)
        self.dialogic = dspy.Predict(DialogicAnswer, **config)
        self.feedback = dspy.Predict(ReflectiveFeedback, **config)

    def forward(self, query: str) -> dspy.Prediction:
        failures: list[str] = []
        asked = attempt(self.socratic, failures, "socratic", query=query)              # interrogate
        questions = {kind: (getattr(asked, kind) or "").strip() if asked else "" for kind in SUB_QUESTION_KINDS}
        questions = {kind: q for kind, q in questions.items() if q}
        kinds = list(questions)
        answers = dict(zip(kinds, each(lambda kind, noted: self.answer(query, questions[kind], noted), kinds,
                                       failures), strict=True))                                       # answer
        refined = dict(zip(kinds, each(lambda kind, noted: self.refine(query, questions[kind], answers[kind], noted),
                                       kinds, failures), strict=True))                                # refine
        return expansion(
            sub_questions=list(questions.values()),
            texts=list(refined.values()),
            fusion_queries=[joined(query, q, refined[kind]) for kind, q in questions.items()],
            kinds=list(questions), answers=list(answers.values()),
            kept=[refined[kind] is not None for kind in questions], failures=failures,
        )

    def answer(self, query: str, sub_question: str, failures: list[str]) -> str:
        """The dialogic agent's answer to one sub-question ("" when its reply cannot be parsed)."""
        reply = attempt(self.dialogic, failures, "dialogic", query=query, sub_question=sub_question)
        return (reply.answer or "").strip() if reply else ""

    def refine(self, query: str, sub_question: str, answer: str, failures: list[str]) -> str | None:
        """The refined answer, or None when reflection discards it (an empty answer is discarded unread)."""
        if not answer:
            return None
        if not self.reflect:
            return answer
        reply = attempt(self.feedback, failures, "feedback", query=query, sub_question=sub_question, answer=answer)
        if reply is None or not reply.keep:
            return None
        return (kept([reply.refined_answer]) or [answer])[0]
