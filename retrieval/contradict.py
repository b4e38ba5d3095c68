"""Contradicting passages: copies of a question's answer-bearing passages that state a wrong answer instead.

Knowledge poisoning with no instruction in it (PoisonedRAG's setting): the planted passage is an ordinary claim in
the style of the corpus, so no screen can tell it from the others. The procedure is fixed, so a run can be repeated:

1. **Target.** Search the clean corpus for the question (the ``hits`` given, e.g. hybrid top 20). The target is the
   first gold reading, in the dataset's order, with an answer that occurs (case-insensitive, as whole words) in one
   of the hits; that answer is the true answer.
2. **Wrong answer of the same kind** (``wrong_answer``): an answer holding a number gets its last number moved by
   an offset of 1 to 9 (a year moves back when forward would pass 2025; number words up to twenty stay words);
   any other answer is replaced by another question's gold answer from ``pool`` with the same shape (capitalised
   like a name, or not), to a reading with the same question word (who, where, which, ...; any reading when none
   has it), that shares no word of four letters or more with the question's gold answers.
   The choice of offset and of the pool's answer is a hash of the question id: the same question gets the same
   wrong answer on every machine.
3. **Passages.** The ``count`` highest-ranked hits holding one of the target reading's answers, each with every
   occurrence of those answers replaced by the wrong answer (title kept; ids ``poison:contradict:QID:N``). When
   fewer hits hold it, the first copy is repeated with its sentences rotated by one more each time (a one-sentence
   copy gets a short lead-in from ``LEADS`` instead), so every planted passage reads differently and says the same.

``planted_corpus`` writes the clean corpus plus every question's planted passages as one JSONL file, to be indexed
beside the clean one (its own index, keyed by its content). Used by ``bench/reliability/poison.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disambig.data.fields import field
from disambig.retrieval.poison import POISON_PREFIX

WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen twenty").split()
_NUMBER = re.compile(r"\d+|\b(?:" + "|".join(WORDS) + r")\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
LAST_YEAR = 2025
QUESTION_WORDS = frozenset({"who", "whom", "whose", "where", "when", "which", "what", "how", "why"})
LEADS = ("In summary:", "For the record:", "As noted:")
"""Lead-ins that make a one-sentence copy read differently (sentences cannot be rotated)."""


@dataclass(frozen=True)
class Contradiction:
    """What one question's planted passages say: the target reading, its true and wrong answers, the passages."""

    question_id: str
    reading: str
    true_answer: str
    wrong_answer: str
    source_ids: tuple[str, ...]
    passages: tuple[dict[str, str], ...]

    def as_dict(self) -> dict[str, Any]:
        """The plan without the passages' text (what may be kept beside the runs)."""
        return {"id": self.question_id, "reading": self.reading, "true_answer": self.true_answer,
                "wrong_answer": self.wrong_answer, "source_ids": list(self.source_ids),
                "planted_ids": [p["id"] for p in self.passages]}


def contradiction(example: Any, hits: Sequence[Any], pool: Sequence[tuple[str, str]],
                  count: int = 1) -> Contradiction | None:
    """The planted passages for ``example`` (steps 1-3 above), or None when no hit holds a gold answer.

    Args:
        example: a dataset example with ``id`` and ``interpretations`` (``[{question, answers}]``).
        hits: the clean corpus's passages for the question, best first (``id``, ``title``, ``text``).
        pool: other questions' gold ``(reading, answer)`` pairs, to draw a wrong name or phrase from.
        count: planted passages (1 or more).
    """
    if count < 1:
        raise ValueError(f"count={count} must be at least 1")
    readings = [r for r in field(example, "interpretations") or [] if r.get("answers")]
    gold = [a for r in readings for a in r["answers"]]
    for reading in readings:
        answers = sorted({a.strip() for a in reading["answers"] if a.strip()}, key=len, reverse=True)
        holding = [h for h in hits if any(_occurs(a, field(h, "text")) for a in answers)]
        if not holding:
            continue
        true = next(a for a in answers if _occurs(a, field(holding[0], "text")))
        qid = str(field(example, "id"))
        wrong = wrong_answer(true, qid, pool, gold, reading["question"])
        sources = holding[:count]
        texts = [_swap(field(h, "text"), answers, wrong) for h in sources]
        texts += [_rotated(texts[0], n) for n in range(1, count - len(texts) + 1)]
        sources += [holding[0]] * (count - len(sources))  # the rotated copies are the first's
        planted = tuple({"id": f"{POISON_PREFIX}contradict:{qid}:{n}", "title": field(h, "title"), "text": t}
                        for n, (h, t) in enumerate(zip(sources, texts, strict=True)))
        ids = tuple(dict.fromkeys(field(h, "id") for h in sources))
        return Contradiction(qid, reading["question"], true, wrong, ids, planted)
    return None


def wrong_answer(answer: str, question_id: str, pool: Sequence[tuple[str, str]], gold: Sequence[str] = (),
                 reading: str = "") -> str:
    """An answer of the same kind as ``answer`` (to ``reading``) that none of ``gold`` is (step 2 above).

    ``pool`` holds other questions' ``(reading, answer)`` pairs; a name or phrase is drawn from those whose reading
    opens with the same question word as ``reading`` (who, where, which, what, ...) when there are any."""
    seed = int(hashlib.sha1(question_id.encode()).hexdigest(), 16)
    numbers = list(_NUMBER.finditer(answer))
    if numbers:  # the first offset whose answer is no gold answer as written
        last, taken = numbers[-1], {g.strip().lower() for g in gold}
        moved = [answer[:last.start()] + _moved(last.group(), 1 + (seed + step) % 9) + answer[last.end():]
                 for step in range(9)]
        return next((m for m in moved if m.strip().lower() not in taken), moved[0])
    taken = {w for g in gold for w in _words(g)}
    fitting = sorted({(q, a.strip()) for q, a in pool if a.strip() and not _NUMBER.search(a)
                      and _shape(a) == _shape(answer) and not (_words(a) & taken)})
    choices = sorted({a for q, a in fitting if _kind(q) == _kind(reading)}) or sorted({a for _, a in fitting})
    if not choices:
        raise ValueError(f"no answer in the pool of {len(pool)} has the shape of {answer!r}; give a larger pool")
    return choices[seed % len(choices)]


def answer_pool(examples: Iterable[Any]) -> dict[str, list[tuple[str, str]]]:
    """Every example's gold ``(reading, answer)`` pairs by question id (``wrong_answer`` draws from the other
    questions')."""
    return {str(field(e, "id")): [(r.get("question") or "", a) for r in field(e, "interpretations") or []
                                 for a in r.get("answers") or []] for e in examples}


def others(pools: dict[str, list[tuple[str, str]]], question_id: str) -> list[tuple[str, str]]:
    """The gold ``(reading, answer)`` pairs of every question but ``question_id``."""
    return [a for qid, answers in pools.items() if qid != question_id for a in answers]


def planted_corpus(corpus: Path, plans: Sequence[Contradiction], out: Path) -> Path:
    """``corpus`` (JSONL of ``{id, title, text}``) followed by every plan's passages, written to ``out``; the file is
    rewritten only when its content would change, so its index stays valid."""
    lines = corpus.read_text(encoding="utf-8").rstrip("\n").split("\n")
    lines += [json.dumps(p, ensure_ascii=False) for plan in plans for p in plan.passages]
    text = "\n".join(lines) + "\n"
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return out


def _moved(number: str, offset: int) -> str:
    if not number.isdigit():
        value = WORDS.index(number.lower())
        moved = value + offset if value + offset < len(WORDS) else max(value - offset, 0)
        if moved == value:
            moved = value + 1
        word = WORDS[moved]
        return word.capitalize() if number[0].isupper() else word
    value = int(number)
    is_year = len(number) == 4 and 1000 <= value <= LAST_YEAR
    moved = value - offset if is_year and value + offset > LAST_YEAR else value + offset
    return str(moved).zfill(len(number)) if number.startswith("0") else str(moved)


def _occurs(answer: str, text: str) -> bool:
    return bool(answer) and re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text or "", re.IGNORECASE) is not None


def _swap(text: str, answers: Sequence[str], wrong: str) -> str:
    """Every occurrence of any of ``answers`` replaced, in one pass (the longest match first, so "June 15, 1936" is
    replaced whole, and the wrong answer is never matched again)."""
    pattern = "|".join(re.escape(a) for a in sorted(answers, key=len, reverse=True))
    return re.sub(rf"(?<!\w)(?:{pattern})(?!\w)", lambda _: wrong, text, flags=re.IGNORECASE)


def _rotated(text: str, by: int) -> str:
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    if len(sentences) < 2:
        return f"{LEADS[(by - 1) % len(LEADS)]} {text.strip()}"
    by %= len(sentences)
    return " ".join(sentences[by:] + sentences[:by])


def _kind(reading: str) -> str:
    """The reading's question word: ``how many``, ``who``, ``where``, ... (``other`` when it opens with none)."""
    words = re.findall(r"[a-z]+", reading.lower())
    if words[:2] == ["how", "many"]:
        return "how many"
    return next((w for w in words[:3] if w in QUESTION_WORDS), "other")


def _shape(answer: str) -> str:
    return "name" if answer.strip()[:1].isupper() else "phrase"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W\d_]+", text.lower()) if len(w) >= 4}
