"""AMD's three agents: the Socratic questioner, the dialogic answerer and the reflective feedback agent.

Seed: AMD (003, a one-page poster), section 2 (Socratic questioning: three sub-questions, one per kind) and section 3
(the framework: interrogate, answer, refine). The poster prints no prompts; these are written from its prose.
"""

from __future__ import annotations

from typing import Annotated

import dspy
from pydantic import Field

# Bounds on each reply field: under grammar-constrained decoding they make a looping small model close the field, so
# the three sub-questions fit the embedded model's 256-token reply (the poster's whole context is 512 tokens).
SubQuestion = Annotated[str, Field(max_length=200)]
Answer = Annotated[str, Field(max_length=800)]


class SocraticQuestions(dspy.Signature):
    """Ask three Socratic questions about a search query, one of each kind, so that together they cover what the
    searcher may want. Clarification: a question that pins down what the query means or asks for. Assumption
    probing: a question that brings out something the query takes for granted. Implication probing: a question
    about the consequences, uses or related facts the query leads to. Each question must make sense on its own
    (name the subject rather than saying "it")."""

    # Seed: AMD (003), section 2 (the table of the three query types) and section 3 (the Socratic agent).
    query: str = dspy.InputField()
    clarification: SubQuestion = dspy.OutputField(desc="what exactly the query means or asks for")
    assumption_probing: SubQuestion = dspy.OutputField(desc="what the query takes for granted")
    implication_probing: SubQuestion = dspy.OutputField(desc="what follows from the query's subject")


class DialogicAnswer(dspy.Signature):
    """Answer the question, raised while thinking about a search query, in a short factual paragraph. Name the
    specific people, places, terms, dates and numbers involved: the answer is used to search for documents about
    the query, so be concrete rather than cautious."""

    # Seed: AMD (003), section 3 (the dialogic answering agent: one pseudo-answer per sub-question).
    query: str = dspy.InputField(desc="the original search query")
    sub_question: str = dspy.InputField()
    answer: Answer = dspy.OutputField(desc="two or three sentences")


class ReflectiveFeedback(dspy.Signature):
    """Review an answer written for a question about a search query. If it is relevant to what the query asks
    and factually plausible, keep it and rewrite it to be accurate, concise and on topic for the query, removing
    anything vague, wrong or off topic. If it is off topic, wrong or empty of facts, discard it (keep = false)."""

    # Seed: AMD (003), section 3 (the reflective feedback agent refines or discards the pseudo-answers; the
    # sparse, dense and RRF formulas read only the refined answers a'_j that survive, the set S).
    query: str = dspy.InputField(desc="the original search query")
    sub_question: str = dspy.InputField()
    answer: str = dspy.InputField()
    keep: bool = dspy.OutputField(desc="false to discard the answer")
    refined_answer: Answer = dspy.OutputField(desc="the improved answer; empty when discarded")
