"""Conflicting passages: one reading of the question, different answers from different passages.

A *claim* is what one passage (or several, cited together) says: a reading's question, its answer and the passage
ids (``Interpretation`` is one). ``find_conflicts`` groups the claims by reading and reports a ``Conflict`` where a
reading's answers do not all agree. The rules, kept simple on purpose:

* **Same reading** = the same question after SQuAD normalisation (``data.text.normalize``: case, punctuation and
  articles ignored). Paraphrases are different readings here; a program that knows better (VerDICt's clusters)
  passes the reading it chose as each claim's question.
* **Same answer** (``same_answer``): the answers' *canonical tokens* (``answer_tokens``) are equal, or one set
  holds the other. Canonical tokens are normalised words, with numbers read as numbers (``412``, ``412.0``,
  ``1,412``, ``four hundred twelve``, ``1.5 million``, ``20th`` -> ``20``) and dates as dates (month names and
  abbreviations -> ``month:N``, ISO ``1969-07-20`` split into year, month and day). So ``412`` agrees with
  ``412 goals`` and ``four hundred twelve``, ``1969`` with ``July 1969`` (a year inside a fuller date), ``Ronaldo``
  with ``Cristiano Ronaldo``; ``412`` and ``413``, ``June 1969`` and ``July 1969``, ``Cristiano Ronaldo`` and
  ``Ronaldo Nazario`` disagree.
* **Stances**: answers that agree are joined (connected components of "same answer", so the result does not depend
  on the order of the claims). An answer that agrees with two answers that disagree with each other joins them
  (a bare ``Ronaldo`` beside ``Cristiano Ronaldo`` and ``Ronaldo Nazario``): ambiguity errs towards no conflict.
  A stance is worded as its first claim and cites every passage of its claims, in order.
* A reading with two stances or more is a conflict.

``conflict_note`` writes the one sentence per conflict that a prediction's long answer gains; ``without_note``
takes it out again (what the metrics score).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from disambig.data.fields import field
from disambig.data.text import normalize

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
MONTHS = {name: n for n, name in enumerate(_MONTHS, 1)} | {name[:3]: n for n, name in enumerate(_MONTHS, 1)} | {
    "sept": 9}
"""Month names and their three-letter abbreviations (and "sept")."""

SMALL = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())} | {word: 10 * n for n, word in enumerate(
        "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}

_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0](?=\d{3}(?!\d))")
_TOKEN = re.compile(r"month:\d+|\d+(?:\.\d+)?|[^\W\d_]+")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)\b")
_ARTICLES = frozenset({"a", "an", "the"})


@dataclass(frozen=True)
class Stance:
    """One answer to a reading, as its first claim words it, and every passage that gives it."""

    answer: str
    passage_ids: tuple[str, ...]


@dataclass(frozen=True)
class Conflict:
    """A reading (its question as first worded) that the passages answer in two or more ways."""

    question: str
    answers: tuple[Stance, ...]

    def as_dict(self) -> dict[str, Any]:
        """``{question, answers: [{answer, passage_ids}]}``, the form a prediction carries."""
        return {"question": self.question,
                "answers": [{"answer": s.answer, "passage_ids": list(s.passage_ids)} for s in self.answers]}


def find_conflicts(claims: Iterable[Any]) -> list[Conflict]:
    """The readings whose claims give answers that do not agree, in the order the readings first appear.

    Args:
        claims: objects (or mappings) with ``question``, ``answer`` and ``passage_ids``; one with an empty
            normalised question or answer is skipped. Not modified.

    Returns:
        One ``Conflict`` per reading with two or more stances; empty when every reading's answers agree.
    """
    readings: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
    for claim in claims:
        question, answer = str(field(claim, "question") or ""), str(field(claim, "answer") or "")
        if normalize(question) and normalize(answer):
            ids = tuple(str(i) for i in field(claim, "passage_ids") or ())
            readings.setdefault(normalize(question), []).append((question.strip(), answer.strip(), ids))
    found = []
    for said in readings.values():
        stances = _stances([(answer, ids) for _, answer, ids in said])
        if len(stances) > 1:
            found.append(Conflict(said[0][0], tuple(stances)))
    return found


def same_answer(a: str, b: str) -> bool:
    """Whether two answers agree: equal canonical tokens, or one's a subset of the other's (module docstring)."""
    ta, tb = answer_tokens(a), answer_tokens(b)
    return bool(ta and tb) and (ta <= tb or tb <= ta)


def answer_tokens(answer: str) -> frozenset[str]:
    """The answer's canonical tokens: lower-cased words without articles, numbers as numbers, months as
    ``month:N`` ("July 20th, 1969" -> {"month:7", "20", "1969"}; "four hundred twelve goals" -> {"412", "goals"})."""
    text = unicodedata.normalize("NFKD", str(answer or "").lower())
    text = "".join(c for c in text if not unicodedata.combining(c)).replace("'", "").replace("\u2019", "")
    text = _ISO_DATE.sub(lambda m: f" {m[1]} month:{int(m[2])} {int(m[3])} ", text)
    words = [w for w in _TOKEN.findall(_ORDINAL.sub(r"\1", _THOUSANDS.sub("", text))) if w not in _ARTICLES]
    return frozenset(_months(_numbers(words)))


def conflict_note(conflicts: Sequence[Conflict], passages: Sequence[Any] = ()) -> str:
    """One sentence per conflict, naming each answer and who gives it (passage titles, else ids):
    ``Sources disagree on "Q?": A (Title 1, Title 2) vs B (Title 3).``; "" when there is none."""
    titles = {str(field(p, "id")): str(field(p, "title") or "").strip() for p in passages}
    sentences = []
    for conflict in conflicts:
        said = [f"{s.answer.rstrip('.')} ({_sources(s.passage_ids, titles)})" if s.passage_ids else
                s.answer.rstrip(".") for s in conflict.answers]
        sentences.append(f'Sources disagree on "{conflict.question}": {" vs ".join(said)}.')
    return " ".join(sentences)


def with_note(long_answer: str, note: str) -> str:
    """The long answer followed by the note (one space between); an empty long answer or note is left as it is."""
    if not note or not long_answer.strip():
        return long_answer
    return f"{long_answer.rstrip()} {note}"


def without_note(long_answer: str, note: str) -> str:
    """The long answer with ``note`` (as ``with_note`` added it) taken out: the text the metrics score."""
    if not note or note not in long_answer:
        return long_answer
    head, _, tail = long_answer.rpartition(note)
    return f"{head.rstrip()} {tail.lstrip()}".strip() if tail.strip() else head.rstrip()


def _stances(said: list[tuple[str, tuple[str, ...]]]) -> list[Stance]:
    """Connected components of ``same_answer`` over the answers, in order of first appearance."""
    parent = list(range(len(said)))  # union-find; a component's root is its first claim

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(said)):
        for j in range(i):
            if same_answer(said[i][0], said[j][0]):
                a, b = root(i), root(j)
                parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for i in range(len(said)):
        members.setdefault(root(i), []).append(i)
    return [Stance(said[m[0]][0], tuple(dict.fromkeys(p for i in m for p in said[i][1])))
            for m in members.values()]


def _numbers(words: list[str]) -> list[str]:
    """Words with each number as one token: digits ("412", "412.0" -> "412"), number words ("four hundred and
    twelve" -> "412", "forty two" -> "42") and a scale after either ("1.5 million" -> "1500000"). Two numbers side
    by side ("20 1969", "one two") stay two."""
    out: list[str] = []
    total, current, active = 0.0, 0.0, False

    def flush() -> None:
        nonlocal total, current, active
        if active:
            out.append(_number_text(total + current))
        total, current, active = 0.0, 0.0, False

    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if _DIGITS.fullmatch(word):
            flush()
            current, active = float(word), True
        elif word in SMALL:
            if active and not _joins(current, SMALL[word]):
                flush()
            current, active = current + SMALL[word], True
        elif word in SCALES:
            if SCALES[word] == 100:
                current = max(current, 1.0) * 100
            else:
                total, current = total + max(current, 1.0) * SCALES[word], 0.0
            active = True
        elif word == "and" and active and following in SMALL:
            continue
        else:
            flush()
            out.append(word)
    flush()
    return out


def _joins(current: float, value: int) -> bool:
    """Whether number word ``value`` continues a number standing at ``current`` ("twenty" + "one", "hundred" +
    "twelve") rather than starting another ("one" "two")."""
    rest = current % 100
    return rest == 0 or (rest >= 20 and rest % 10 == 0 and value < 10)


def _months(words: list[str]) -> list[str]:
    """Month names and abbreviations as ``month:N`` (the same on both sides of a comparison, so a name such as
    "May" is compared as it is written)."""
    return [f"month:{MONTHS[w]}" if w in MONTHS else w for w in words]


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else format(value, "f").rstrip("0").rstrip(".")


def _sources(passage_ids: tuple[str, ...], titles: Mapping[str, str]) -> str:
    return ", ".join(dict.fromkeys(titles.get(i) or i for i in passage_ids))
