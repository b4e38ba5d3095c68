"""The baselines' single expansion steps AMD is compared with: a pseudo-document (Q2D), a reasoned answer (Q2C)
and expansion keywords under one of several phrasings of the instruction (GenQREnsemble, GenQRFusion).

Seed: AMD (003), section 4 (baselines Q2D, Q2C, GenQREnsemble, GenQRFusion). The prompts follow the baselines'
papers (query2doc, Wang et al. 2023; chain-of-thought expansion, Jagerman et al. 2023; GenQREnsemble and
GenQRFusion, Dhole and Agichtein 2024), in our own words.
"""

from __future__ import annotations

from typing import Annotated

import dspy
from pydantic import Field


class PseudoDocument(dspy.Signature):
    """Write a short passage that answers the search query, in the style of an encyclopedia or web document.
    Name the specific people, places, terms, dates and numbers it is about."""

    # query2doc (Q2D): one pseudo-document per query, appended to the query.
    query: str = dspy.InputField()
    passage: Annotated[str, Field(max_length=900)] = dspy.OutputField(desc="one paragraph")


class ReasonedAnswer(dspy.Signature):
    """Answer the search query. First reason step by step about what it asks and which facts answer it, then
    give the answer."""

    # Chain-of-thought expansion (Q2C): the rationale and the answer are both appended to the query.
    query: str = dspy.InputField()
    rationale: Annotated[str, Field(max_length=600)] = dspy.OutputField(desc="the reasoning, a few sentences")
    answer: Annotated[str, Field(max_length=200)] = dspy.OutputField()


class ExpansionKeywords(dspy.Signature):
    """Suggest keywords and short phrases to add to the search query so that a search engine finds more of the
    documents relevant to it."""

    # GenQREnsemble / GenQRFusion: one keyword list per phrasing of this instruction (see EXPANSION_INSTRUCTIONS).
    query: str = dspy.InputField()
    keywords: Annotated[list[Annotated[str, Field(max_length=60)]], Field(max_length=10)] = dspy.OutputField(
        desc="up to 10 terms or phrases")


EXPANSION_INSTRUCTIONS = (
    " ".join(ExpansionKeywords.__doc__.split()),
    "List terms that would make the search query retrieve better results.",
    "Propose useful extra words and phrases that broaden the search query without changing its meaning.",
    "Give related terms, synonyms and key entities that a good document answering the query would contain.",
    "Help the search engine: write expansion terms that make the query more effective.",
    "Recommend relevant phrases to enrich the query so that more relevant documents match it.",
    "Write the vocabulary an expert would use when searching for the answer to this query.",
    "Name the concepts, entities and phrases most closely tied to the query, to expand it for search.",
    "Improve recall for this query by suggesting terms that relevant documents are likely to use.",
    "Add helpful keywords that make the query more precise and more complete for document search.",
)
"""Ten phrasings of the keyword instruction: GenQREnsemble's zero-shot ensemble asks once under each (its paper
uses ten paraphrases of one instruction); these are the project's own wordings."""
