"""Judge steps used by the LLM-judge metrics (never by the programs): match, verify, dedup, similarity, coverage."""

from __future__ import annotations

import dspy


class MatchInterpretation(dspy.Signature):
    """An ambiguous question has several disambiguated sub-questions. Decide whether the list of candidate
    sub-questions contains one that asks the same thing as the given sub-question, even if worded differently."""

    # Seed: VerDICt (001), Appendix C, Figure 7 (prompt I_M): questions only, no answers; one sub-question
    # against a list as in Eq. 17/18 (the figure's list-against-list form asked once per item).
    question: str = dspy.InputField(desc="the ambiguous question")
    interpretation: str = dspy.InputField(desc="one disambiguated sub-question")
    candidates: list[str] = dspy.InputField(desc="other disambiguated sub-questions")
    matched: bool = dspy.OutputField(desc="true if a candidate asks the same thing")


class VerifySupport(dspy.Signature):
    """Decide whether the passage supports the answer to the question: it must give enough evidence to reach
    that answer for that question on its own, without outside knowledge. When the answer is empty, decide
    whether the passage answers the question at all."""

    # Seed: VerDICt (001), Appendix C, Figure 8 (prompt I_V), V(q, p) of Eq. 10 and 20.
    question: str = dspy.InputField(desc="a disambiguated question")
    answer: str = dspy.InputField(desc="may be empty for a sub-question without an answer")
    passage: str = dspy.InputField()
    supported: bool = dspy.OutputField(desc="true if the passage supports the answer")


class DeduplicateInterpretations(dspy.Signature):
    """The sub-questions below each disambiguate the same ambiguous question. Drop those that are nearly
    identical to an earlier one and list the distinct sub-questions that remain."""

    # Seed: VerDICt (001), Appendix C, Figure 9 (prompt I_D), used to count unique interpretations.
    question: str = dspy.InputField(desc="the ambiguous question")
    interpretations: list[str] = dspy.InputField(desc="disambiguated sub-questions, possibly repeated")
    unique: list[str] = dspy.OutputField(desc="the distinct sub-questions, one per item")


class AnswerSimilarity(dspy.Signature):
    """Rate how close in meaning the generated answer is to the reference answer for the question, from 0
    (unrelated or contradicting) to 1 (says the same thing); ignore wording, length and style."""

    # Seed: ADF (000), section 5.2.2, Similarity Score: sim_LLM(prediction, a) in [0, 1].
    question: str = dspy.InputField()
    prediction: str = dspy.InputField(desc="the generated answer")
    reference: str = dspy.InputField(desc="one valid reference answer")
    similarity: float = dspy.OutputField(desc="0 to 1; 1 means semantically equivalent")


class InterpretationCovered(dspy.Signature):
    """One reading of an ambiguous question is given with its accepted answers. Decide whether the response
    answers this reading with one of those answers, in meaning if not in the same words."""

    # Seed: ADF (000), section 5.2.2, Disambiguation Score: is interpretation I_j covered by the prediction.
    interpretation: str = dspy.InputField(desc="a disambiguated question")
    answers: list[str] = dspy.InputField(desc="accepted answers to it (aliases)")
    response: str = dspy.InputField(desc="the generated answer to the ambiguous question")
    covered: bool = dspy.OutputField(desc="true if the response gives one of the answers for this reading")
