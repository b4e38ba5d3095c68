"""D-F1 proxy without a reader: the share of gold interpretations a prediction covers, by token overlap.

ASQA's Disambig-F1 asks a QA reader each disambiguated question over the long answer (``asqa.disambig_f1``,
``--reader``). Without a reader this proxy stands in, made question-aware and strict:

- **Strict span.** An answer alias of n tokens is found when some window of n tokens holds *more than half*
  of them: both tokens of a two-token alias, 2 of 3, 3 of 4... So "its season" does not find "eighth
  season", and neither "1876" finds "August 1876" nor "Sinclair" "Christine Sinclair" (the old rule, token
  F1 >= 0.5, credited all three).
- **Question-aware.** Let D_j be the distinguishing words of gold interpretation j: its question's content
  words (prefix-stemmed to 5 letters, function words dropped) that the ambiguous question lacks. When D_j is
  not empty, an alias found in the long answer counts only if the sentence holding it, or a neighbouring
  sentence, contains a word of D_j; a predicted interpretation's answer counts only if its own question
  contains one. When D_j is empty (AmbigNQ single answers, or a reading worded like the question) the
  span rule alone decides.

D-F1 = covered / #gold interpretations (a recall, as in the ADF paper). d-precision = share of predicted
interpretations (with an answer) that cover some gold interpretation under the same rules. On the
annotators' own long answers (first annotation as the prediction, 780 ASQA dev questions) the proxy covers
0.79 of the interpretations, against 0.97 for the strict span rule alone and 0.98 for STR-EM.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from disambig.data.text import tokens
from disambig.metrics.qa import f1_pair
from disambig.metrics.sentences import rule_based_sentences

STEM = 5
FUNCTION_WORDS = frozenset(
    "a an the of in on at to for by with from and or but not no is was were are be been being who what when where "
    "which how many much did does do done whose whom as its it this that these those has have had there their "
    "they he she his her him them first last one ones".split()
)


@dataclass(frozen=True)
class Coverage:
    """``recall`` is the D-F1 proxy; ``precision`` is the share of predicted interpretations that cover one."""

    covered: int
    total: int
    matched_predictions: int
    predictions: int

    @property
    def recall(self) -> float:
        return self.covered / self.total if self.total else 0.0

    @property
    def precision(self) -> float:
        return self.matched_predictions / self.predictions if self.predictions else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def best_span_f1(text: str, answer: str) -> float:
    """Max token F1 between ``answer`` and any window of ``text`` as long as the answer."""
    words, gold = tokens(text), tokens(answer)
    if not words or not gold:
        return 0.0
    width = len(gold)
    windows = (" ".join(words[i : i + width]) for i in range(max(1, len(words) - width + 1)))
    return max(f1_pair(window, answer) for window in windows)


def span_found(text: str, answer: str) -> bool:
    """The strict span rule: some window as long as the alias holds more than half of its tokens."""
    words, gold = tokens(text), tokens(answer)
    if not words or not gold:
        return False
    need, width = Counter(gold), len(gold)
    return any(
        2 * sum((Counter(words[i : i + width]) & need).values()) > width
        for i in range(max(1, len(words) - width + 1))
    )


def stems(text: str) -> set[str]:
    return {word[:STEM] for word in tokens(text) if word not in FUNCTION_WORDS}


def distinguishing(interpretation_question: str, question: str) -> set[str]:
    """D_j: the stemmed content words of the interpretation's question that the ambiguous question lacks."""
    return stems(interpretation_question) - stems(question)


def in_long_answer(long_answer: str, answers: list[str], words: set[str]) -> bool:
    """An alias is in a sentence whose neighbourhood (sentence +- 1) mentions a distinguishing word, if any."""
    sentences = rule_based_sentences(long_answer)
    for i, sentence in enumerate(sentences):
        if not any(span_found(sentence, a) for a in answers):
            continue
        if not words or words & stems(" ".join(sentences[max(0, i - 1) : i + 2])):
            return True
    return False


def by_prediction(predicted: dict, answers: list[str], words: set[str]) -> bool:
    """A predicted interpretation covers the gold one: its answer has the alias, its question a D_j word."""
    answer = str(predicted.get("answer") or "")
    if not any(span_found(answer, a) for a in answers):
        return False
    return not words or bool(words & stems(str(predicted.get("question") or "")))


def answer_covered(answer: str, predicted_answers: list[str], long_answer: str) -> bool:
    """One alias found by the strict span rule in a predicted answer or the long answer (no question check)."""
    return any(span_found(p, answer) for p in predicted_answers) or span_found(long_answer, answer)


def coverage(interpretations: list[dict], predicted: list[dict], long_answer: str = "", question: str = "") -> Coverage:
    """Count covered gold interpretations and predicted interpretations that cover some gold one."""
    answered = [p for p in predicted if tokens(str(p.get("answer") or ""))]
    covered, matched = 0, [False] * len(answered)
    for gold in interpretations:
        answers = [a for a in gold.get("answers") or [] if tokens(a)]
        words = distinguishing(str(gold.get("question") or question), question)
        hits = [by_prediction(p, answers, words) for p in answered]
        matched = [m or h for m, h in zip(matched, hits, strict=True)]
        covered += bool(answers) and (any(hits) or in_long_answer(long_answer, answers, words))
    return Coverage(covered, len(interpretations), sum(matched), len(answered))
