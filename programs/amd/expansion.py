"""The baselines' query expansions as ``dspy.Module``s: Q2D (query2doc), Q2C (chain-of-thought) and GenQR
(GenQREnsemble, GenQRFusion), and the prediction every expansion program returns.

Every expansion program maps ``query`` to ``dspy.Prediction(sub_questions, texts, fusion_queries, notes)``:
``texts`` are the generated texts a sparse expansion appends and a dense expansion embeds, ``fusion_queries``
the queries whose rankings a fusion retriever fuses, ``notes`` what happened (failures, discarded answers). The
retrievers that search with them are in ``disambig.programs.amd.expanded_retrieval``.

Seed: AMD (003), section 4 (baselines). A step whose reply cannot be parsed counts as giving nothing (noted), so
the search falls back to the query itself rather than failing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import dspy
from dspy.utils.exceptions import AdapterParseError

from disambig.lm.parallel import ordered_map
from disambig.signatures.expansion import EXPANSION_INSTRUCTIONS, ExpansionKeywords, PseudoDocument, ReasonedAnswer

Item = TypeVar("Item")
Result = TypeVar("Result")

POSTER_TEMPERATURE = 0.5
"""AMD's poster samples Qwen2.5-7B-Instruct at temperature 0.5 (section 4); the baselines run at the same."""


def decoding(temperature: float | None, max_tokens: int | None) -> dict[str, Any]:
    """``dspy.Predict`` config for the given temperature and token cap (None leaves the LM's own)."""
    if temperature is not None and not 0 <= temperature <= 2:
        raise ValueError(f"temperature={temperature} must lie between 0 and 2 (the poster uses 0.5)")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens={max_tokens} must be positive")
    config = {"temperature": temperature, "max_tokens": max_tokens}
    return {name: value for name, value in config.items() if value is not None}


def expansion(sub_questions: list[str] | None = None, texts: list[str] | None = None,
              fusion_queries: list[str] | None = None, **notes: Any) -> dspy.Prediction:
    """The prediction every expansion program returns; blank texts and queries are dropped."""
    return dspy.Prediction(sub_questions=kept(sub_questions), texts=kept(texts), fusion_queries=kept(fusion_queries),
                           notes=notes)


def kept(texts: list[str | None] | None) -> list[str]:
    """The non-blank strings of ``texts``, stripped, in order."""
    return [t.strip() for t in texts or [] if isinstance(t, str) and t.strip()]


def joined(*parts: str | None) -> str:
    """The non-blank parts joined by spaces."""
    return " ".join(kept(list(parts)))


def attempt(step: Callable[..., dspy.Prediction], failures: list[str], name: str, **inputs: Any) -> Any:
    """``step(**inputs)``, or None (and ``name`` appended to ``failures``) when its reply cannot be parsed."""
    try:
        return step(**inputs)
    except AdapterParseError:
        failures.append(name)
        return None


def each(work: Callable[[Item, list[str]], Result], items: Iterable[Item], failures: list[str]) -> list[Result]:
    """``[work(item, failures) for item in items]``, the independent steps run at once on a remote LM
    (``disambig.lm.parallel``); each step notes its failures apart and they join ``failures`` in item order."""
    def run(item: Item) -> tuple[Result, list[str]]:
        own: list[str] = []
        return work(item, own), own

    done = ordered_map(run, items)
    for _, own in done:
        failures.extend(own)
    return [result for result, _ in done]


def one_text(step: Callable[..., dspy.Prediction], name: str, query: str,
             text_of: Callable[[dspy.Prediction], str | None]) -> dspy.Prediction:
    """The expansion by one generated text: ``text_of(step(query=query))``, searched alone and after the query
    (no text, and ``name`` noted as failed, when the reply cannot be parsed)."""
    failures: list[str] = []
    reply = attempt(step, failures, name, query=query)
    text = (text_of(reply) or "") if reply else ""
    return expansion(texts=[text], fusion_queries=[joined(query, text)], failures=failures)


class QueryToDocument(dspy.Module):
    """Q2D (query2doc): one pseudo-document written for the query is the expansion.

    Args:
        temperature: sampling temperature (the poster's 0.5); None keeps the LM's own.
        max_tokens: reply cap per call; None keeps the LM's own.
    """

    def __init__(self, temperature: float | None = POSTER_TEMPERATURE, max_tokens: int | None = None) -> None:
        super().__init__()
        self.temperature, self.max_tokens = temperature, max_tokens
        self.write = dspy.Predict(PseudoDocument, **decoding(temperature, max_tokens))

    def forward(self, query: str) -> dspy.Prediction:
        return one_text(self.write, "passage", query, lambda written: written.passage)


class QueryToChainOfThought(dspy.Module):
    """Q2C: the LM reasons about the query, then answers; rationale and answer together are the expansion.

    Args:
        temperature: sampling temperature (the poster's 0.5); None keeps the LM's own.
        max_tokens: reply cap per call; None keeps the LM's own.
    """

    def __init__(self, temperature: float | None = POSTER_TEMPERATURE, max_tokens: int | None = None) -> None:
        super().__init__()
        self.temperature, self.max_tokens = temperature, max_tokens
        self.reason = dspy.Predict(ReasonedAnswer, **decoding(temperature, max_tokens))

    def forward(self, query: str) -> dspy.Prediction:
        return one_text(self.reason, "rationale", query, lambda reasoned: joined(reasoned.rationale, reasoned.answer))


class GenQR(dspy.Module):
    """GenQREnsemble / GenQRFusion: expansion keywords asked for once under each of several phrasings of the
    instruction (an ensemble of zero-shot prompts).

    The ensemble retriever appends every keyword list to the query; the fusion retriever ranks ``query + keywords``
    per phrasing and fuses the rankings. Each phrasing is its own predictor, so a compile tunes each prompt.

    Args:
        instructions: how many of the ten phrasings in ``EXPANSION_INSTRUCTIONS`` to ask (the GenQR papers use
            ten; fewer costs fewer LM calls).
        temperature: sampling temperature (the poster's 0.5); None keeps the LM's own.
        max_tokens: reply cap per call; None keeps the LM's own.
    """

    def __init__(self, instructions: int = len(EXPANSION_INSTRUCTIONS), temperature: float | None = POSTER_TEMPERATURE,
                 max_tokens: int | None = None) -> None:
        super().__init__()
        if not 1 <= instructions <= len(EXPANSION_INSTRUCTIONS):
            raise ValueError(f"instructions={instructions} must lie between 1 and {len(EXPANSION_INSTRUCTIONS)} "
                             "(the phrasings in EXPANSION_INSTRUCTIONS)")
        self.instructions, self.temperature, self.max_tokens = instructions, temperature, max_tokens
        config = decoding(temperature, max_tokens)
        self.keywords = [dspy.Predict(ExpansionKeywords.with_instructions(text), **config)
                         for text in EXPANSION_INSTRUCTIONS[:instructions]]

    def forward(self, query: str) -> dspy.Prediction:
        failures: list[str] = []

        def keywords(i: int, noted: list[str]) -> str:
            reply = attempt(self.keywords[i], noted, f"keywords[{i}]", query=query)
            return ", ".join(kept(reply.keywords)) if reply else ""

        texts = kept(each(keywords, range(len(self.keywords)), failures))  # the phrasings are independent
        return expansion(texts=texts, fusion_queries=[joined(query, t) for t in texts], failures=failures)
