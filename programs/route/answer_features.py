"""What a cascade reads after its first program answered: named numbers about that answer and its trace.

Every feature is a small function of an ``Answered`` (the question, the first program's long answer, readings,
passages and trace), registered by name in ``ANSWER_FEATURES``. ``Answered`` is built from a live prediction
(``from_prediction``) or from a stored ``disambig eval`` row (``from_row``), so a cascade fitted on stored runs reads
the same numbers when it answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from disambig.data.text import normalize, tokens
from disambig.programs.abstain import UNKNOWN

YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*\b")
NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of|the|de|and)?\s*[A-Z][\w'’-]*)*")
SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")
NOT_NAMES = frozenset("the a an it he she they this that these in on at as by for from his her their its there "
                      "however also both while after before when during".split())
HEDGES = frozenset("may might could possibly perhaps likely unclear depends depending various several different "
                   "ambiguous either some refer refers referring approximately about around".split())
STOP = frozenset("is was were are be been of in on at to for and or by with from as that this which who what when "
                 "it its he she they his her their there also has had have not but".split())
CUT_KEY = "cut_by_length"  # the trace's count of replies the engine cut at the token cap


@dataclass(frozen=True)
class Answered:
    """The first program's answer to ``question``: long answer, readings (``{question, answer}`` dicts), the
    passages it read (``{title, text}`` dicts) and its trace (``lm_calls``, ``output_tokens``, ``cut_by_length``)."""

    question: str
    long_answer: str
    interpretations: tuple[Mapping[str, Any], ...] = ()
    passages: tuple[Mapping[str, Any], ...] = ()
    trace: Mapping[str, Any] | None = None

    @classmethod
    def from_prediction(cls, question: str, prediction: Any) -> Answered:
        """A live answer: a program's ``dspy.Prediction`` (or any mapping with its fields)."""
        get = prediction.get if hasattr(prediction, "get") else lambda key, default=None: getattr(
            prediction, key, default)
        return cls(question, str(get("long_answer", "") or ""), tuple(get("interpretations", None) or ()),
                   tuple(get("passages", None) or ()), dict(get("trace", None) or {}))

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Answered:
        """A stored answer: one row of a ``disambig eval`` folder's ``results.jsonl``."""
        return cls.from_prediction(str(row.get("question", "")), {**(row.get("prediction") or {}),
                                                                   "trace": row.get("trace") or {}})


def words(text: str) -> list[str]:
    """The text's normalised word tokens."""
    return tokens(text)


def content(text: str) -> set[str]:
    """The text's words without function words."""
    return {w for w in words(text) if w not in STOP}


def answer_tokens(a: Answered) -> float:
    """Words in the long answer."""
    return float(len(words(a.long_answer)))


def output_tokens(a: Answered) -> float:
    """Tokens the LM wrote over all the first program's calls, from the trace."""
    return float((a.trace or {}).get("output_tokens", 0))


def answer_cut(a: Answered) -> float:
    """1 when a reply hit the token cap: the trace's ``cut_by_length`` count where the engine records it (today's
    engine also ends such a reply at its last whole sentence, so the text no longer shows it); for a trace without
    the count (runs stored before the engine kept it), when the long answer does not end a sentence."""
    trace = a.trace or {}
    if CUT_KEY in trace:
        return float(int(trace[CUT_KEY] or 0) > 0)
    return float(not SENTENCE_END.search(a.long_answer))


def years(a: Answered) -> float:
    """Distinct years the long answer mentions."""
    return float(len(set(YEAR.findall(a.long_answer))))


def numbers(a: Answered) -> float:
    """Distinct numbers (years included) the long answer mentions."""
    return float(len(set(NUMBER.findall(a.long_answer))))


def names(a: Answered) -> float:
    """Distinct capitalised spans (a proxy for named entities) in the long answer."""
    spans = {m.group(0).lower() for m in NAME.finditer(a.long_answer)}
    return float(len({s for s in spans if s not in NOT_NAMES}))


def passage_overlap(a: Answered) -> float:
    """Share of the long answer's content words found in the passages the first program read."""
    said = content(a.long_answer)
    if not said:
        return 0.0
    seen = set().union(*(content(f"{p.get('title', '')} {p.get('text', '')}") for p in a.passages))
    return len(said & seen) / len(said)


def question_overlap(a: Answered) -> float:
    """Share of the question's content words the long answer repeats."""
    asked = content(a.question)
    return len(asked & content(a.long_answer)) / len(asked) if asked else 0.0


def n_readings(a: Answered) -> float:
    """Readings (interpretations) the first program found."""
    return float(len(a.interpretations))


def distinct_answers(a: Answered) -> float:
    """Distinct short answers among the readings."""
    return float(len({normalize(str(r.get("answer", ""))) for r in a.interpretations}))


def distinct_questions(a: Answered) -> float:
    """Distinct reading questions that differ from the asked question (did the first program disambiguate?)."""
    asked = normalize(a.question)
    return float(len({normalize(str(r.get("question", ""))) for r in a.interpretations} - {asked}))


def answers_in_long(a: Answered) -> float:
    """Share of the readings' short answers that the long answer contains."""
    if not a.interpretations:
        return 0.0
    text = normalize(a.long_answer)
    return sum(normalize(str(r.get("answer", ""))) in text for r in a.interpretations) / len(a.interpretations)


def repetition(a: Answered) -> float:
    """Share of the long answer's word trigrams that repeat an earlier one."""
    said = words(a.long_answer)
    grams = list(zip(said, said[1:], said[2:], strict=False))
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


def hedges(a: Answered) -> float:
    """Hedging words in the long answer (may, might, several, depends, ...)."""
    return float(sum(w in HEDGES for w in words(a.long_answer)))


def says_unknown(a: Answered) -> float:
    """1 when the long answer says the passages do not tell."""
    return float(bool(UNKNOWN.search(a.long_answer)))


ANSWER_FEATURES: dict[str, Callable[[Answered], float]] = {f.__name__: f for f in (
    answer_tokens, output_tokens, answer_cut, years, numbers, names, passage_overlap, question_overlap, n_readings,
    distinct_answers, distinct_questions, answers_in_long, repetition, hedges, says_unknown)}
"""The answer-side features, by name, in vector order."""


def answer_named(a: Answered) -> dict[str, float]:
    """Every answer-side feature of ``a`` by name (what a trace records)."""
    return {name: round(float(fn(a)), 6) for name, fn in ANSWER_FEATURES.items()}
