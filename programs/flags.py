"""Warning signs in a program's answer that a retrieved passage may have steered it (prompt injection).

Pure checks on the finished prediction, recorded in its trace (``trace["notes"]["flags"]``); they change no
answer. A reading that cites no retrieved passage rests on nothing the retriever returned; an answer that itself
reads like an instruction, a system prompt or an output field has likely copied one from a passage; a reading that
cites a passage carrying such text leans on the very passage most likely to be an attack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from disambig.data.fields import field

INSTRUCTION_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        "ignore-instructions": r"\b(ignore|disregard|forget|override)\b[^.!?\n]{0,40}\b(instructions?|prompts?|"
                               r"rules|directions|question|passages)\b",
        "system-prompt": r"\bsystem\s+(prompt|message|instructions?)\b|<\|?im_start\|?>|\bdeveloper mode\b",
        "answer-override": r"\b(correct|real|true|only|official)\s+answer\s+(to|for)\s+(any|every|all|each|this|the)"
                           r"\b[^.!?\n]{0,30}\bis\b",
        "reply-directive": r"\b(always|must|only)\s+(reply|respond|answer|say|output)\b|\b(reply|respond|answer|"
                           r"output)\s+(only\s+)?with\s*[:\"']",
        "output-field": r"\[\[\s*##|\"(long_answer|answer|disambiguations|interpretations?|verdict|sub_questions)\""
                        r"\s*:|\{\s*\"[^\"\n]{1,40}\"\s*:|</?\s*passage\b",
    }.items()
}
"""Phrases that belong to instructions to a model rather than to an encyclopedic answer (checked case-blind). An
output field is a DSPy field marker, one of the programs' field names as a JSON key, or any JSON object literal."""

PASSAGE_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        "answer-claim": r"\b(the|its|this|that)\s+([\w-]+\s+){0,3}answer\s+((to|for)\s+[^.!?\n]{0,60}?\s+)?"
                        r"(is|was|remains|has\s+been)\b",
        "addressed-to-model": r"\b(note|message|reminder|attention)\s+(to|for)\s+(the\s+|any\s+|all\s+)?(ai\s+)?"
                              r"(ai|assistants?|(language\s+)?models?|llms?|chatbots?)\s*[:,\u2014-]",
    }.items()
}
"""Phrases out of place in a source passage though fine in an answer: a claim about what "the answer" is (a source
states facts about its subject; text that rules on the answer is written for whoever answers) and a note addressed to
the model reading it. A false fact stated as a fact matches neither."""


def instruction_like(text: str) -> list[str]:
    """The names of the ``INSTRUCTION_PATTERNS`` found in ``text``, in their order (empty for plain prose)."""
    if not isinstance(text, str) or not text:
        return []
    return [name for name, pattern in INSTRUCTION_PATTERNS.items() if pattern.search(text)]


def passage_warnings(text: str) -> list[str]:
    """The names of the ``INSTRUCTION_PATTERNS`` and then the ``PASSAGE_PATTERNS`` found in a passage's ``text``
    (empty for plain source text); the screened framing withholds a passage with any."""
    if not isinstance(text, str) or not text:
        return []
    return instruction_like(text) + [name for name, pattern in PASSAGE_PATTERNS.items() if pattern.search(text)]


def answer_flags(interpretations: Sequence[Mapping[str, Any]], long_answer: str,
                 passages: Sequence[Any]) -> dict[str, Any]:
    """What looks wrong in one answer.

    Args:
        interpretations: the readings as ``{question, answer, passage_ids}`` mappings.
        long_answer: the long-form answer.
        passages: the passages the answer was written from (objects or mappings with ``id`` and ``text``).

    Returns:
        ``uncited``: readings citing none of ``passages`` (0 when nothing was retrieved: a closed-book answer cites
        by design); ``instruction_like``: pattern names found in the answer's text; ``cites_instruction_like``:
        readings citing a passage the screen would withhold (``passage_warnings``); ``flagged``: any of these three;
        ``suspicious_passages``: how many of ``passages`` the screen would withhold (not part of ``flagged``: an
        answer may have read past them).
    """
    retrieved = {str(field(p, "id")): str(field(p, "text") or "") for p in passages}
    cited = [[str(i) for i in r.get("passage_ids") or []] for r in interpretations]
    uncited = sum(1 for ids in cited if not set(ids) & set(retrieved)) if retrieved else 0
    text = "\n".join([long_answer or "", *_reading_texts(interpretations)])
    found = instruction_like(text)
    suspicious = {pid for pid, body in retrieved.items() if passage_warnings(body)}
    leaning = sum(1 for ids in cited if set(ids) & suspicious)
    return {"uncited": uncited, "instruction_like": found, "cites_instruction_like": leaning,
            "flagged": bool(uncited or found or leaning), "suspicious_passages": len(suspicious)}


def _reading_texts(interpretations: Iterable[Mapping[str, Any]]) -> list[str]:
    return [f"{r.get('question') or ''} {r.get('answer') or ''}" for r in interpretations]
