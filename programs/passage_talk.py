"""Talk about the passages taken out of an answer, the facts it carries kept.

The answer-writing steps read retrieved passages, and the 1.5B model often writes about them instead of writing the
facts for the reader, who never sees them: 436 sentences of the 1,358 long answers stored for it under
``bench/results/qwen15*`` do ("The passage [4] states that ...", "According to the first passage, ...", "The other
passages do not provide any information about ..."). Instructions against it did not stop it (docs/RESULTS.md), so
what a user reads is rewritten here, sentence by sentence, case-blind:

1. a sentence that only says where the answer is, or what the passages lack ("The passage that provides the answer is
   [5].", "The other passages do not mention ...", "This is stated in the second passage.", "The second passage
   confirms this.") is dropped, unless it carries a fact in a that-clause ("..., which states that X"), which is
   kept as a sentence of its own;
2. a lead-in that names a passage as the source ("The passage states that", "The first passage also mentions that",
   "The passage [4] provides context by mentioning that", "According to the passage,", "Based on the information
   provided in the passages,", "In the third passage,") is cut, and the rest of the sentence starts with a capital;
3. a trailing source phrase (", according to the passage", "in the first passage", "as stated in passage [2]") is cut
   before the sentence's end.

A sentence that names a passage in any other way is left as it was: "The first passage describes the car as ..." would
be left with no sentence, and "The quoted passages provide information about Christine Sinclair, who has scored 187
international goals" carries the answer in what it says the passages are about (dropping such sentences lowered the
stored answers' D-F1). Readings' answers are cleaned the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|other|remaining|quoted|given|" \
           r"provided|retrieved|same|above|following|cited|relevant)"
# "the passage", "the first and second passages", "passage [3]", "the passages [1] and [2]", "the given text"
_NUMBERS = r"(?:\s*\[\d+\](?:\s*(?:,|and)\s*\[\d+\])*)?"
_COUNT = r"(?:two|three|four|five|several|\d+)"
_ORDINALS = rf"(?:{_ORDINAL}\s+(?:(?:and|,)\s*{_ORDINAL}\s+)*)"
PASSAGE = (rf"(?:(?:the|this|that|these|those|both|all)\s+)?{_ORDINALS}*(?:{_COUNT}\s+)?"
           rf"(?:passages?{_NUMBERS}|(?:given|provided|quoted)\s+text)")
# A passage named so that it cannot be a corridor or a bill's passage: with an ordinal, a number, or in the plural.
MARKED = (rf"(?:(?:the|this|that|these|those|both|all)\s+)?(?:{_ORDINALS}+(?:{_COUNT}\s+)?passages?{_NUMBERS}|"
          rf"(?:{_COUNT}\s+)?passages{_NUMBERS}|passages?\s*\[\d+\]|(?:given|provided|quoted)\s+text)")
# after "according to", "as stated in": also "the passage from X", "the first passage about X" (never "of": "the
# passage of the bill")
SOURCED = rf"{PASSAGE}(?:\s+(?:from|about|on)\s+[^.,;]*?)?"
_VERB = r"(?:states?|says|mentions?|notes?|indicates?|confirms?|reports?|explains?|shows?|reveals?|suggests?|" \
        r"specifies|specify|lists?|clarifies|clarify)"
_ADVERB = r"(?:also|further|explicitly|clearly|directly|specifically|additionally)"
_LACKS = r"(?:mention|provide|contain|state|say|include|discuss|give|specify|answer|describe|support|address)"
_FACT = re.compile(r"\b(?:(?:by\s+|when\s+)?(?:mentioning|stating|noting|saying|explaining|indicating|showing)"
                   r"(?:\s+that)?|(?:which|that)\s+(?:states?|says|mentions?|notes?)(?:\s+that|\s*:)|"
                   r"supports?\s+the\s+answer\s+that)\s+(.+)$",
                   re.IGNORECASE | re.DOTALL)

_LEAD_INS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"^{PASSAGE}(?:\s+{_ADVERB})*\s+{_VERB}(?:\s+that|\s*:)(?:\s+|$)",
    rf"^{PASSAGE}\s+(?:provides?|gives?|adds?)\s+[^.]*?\bby\s+(?:mentioning|stating|noting|explaining)\s+that\s+",
    rf"^(?:according\s+to|based\s+on|as\s+(?:stated|mentioned|described|shown|noted)\s+in|from|in)\s+{SOURCED}\s*,\s*",
    rf"^(?:based\s+on|according\s+to)\s+the\s+information\s+(?:provided|given)(?:\s+in\s+{PASSAGE})?\s*,\s*",
))
_IT_IS_STATED = re.compile(r"^it\s+is\s+(?:stated|mentioned|said|noted)\s+that\s+", re.IGNORECASE)
_SOURCE_ONLY = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"^{PASSAGE}\s+(?:that|which)\s+(?:\w+\s+){{0,2}}(?:provides?|gives?|answers?|contains?|supports?)\b.*\bis\b",
    rf"^{PASSAGE}\s+that\s+(?:\w+\s+)?(?:provides?|gives?|answers?)\s+the\s+answer\b",
    rf"^{PASSAGE}\s+(?:do|does|did)\s+not\s+(?:\w+\s+)?{_LACKS}",
    rf"^the\s+information\s+is\s+(?:provided|given|found|stated)\s+in\s+{PASSAGE}",
    rf"^{PASSAGE}(?:\s+{_ADVERB})*\s+(?:(?:confirms?|supports?|describes?)\s+(?:this|the\s+same)|"
    r"supports?\s+the\s+answer|provides?\s+an?\s+(?:\w+\s+){0,4}answer)\b",
    r"^this(?:\s+information)?\s+(?:is|can\s+be|was)\s+(?:\w+\s+){0,2}(?:seen|stated|mentioned|described|shown|"
    rf"evident|provided|found|confirmed|given|supported|determined|evidenced|indicated)\b.*\b(?:in|from|by)\s+{PASSAGE}",
    rf"^no\s+(?:other\s+)?passages?\s+(?:\w+\s+)?{_LACKS}",
))
_TRAILING = re.compile(rf"(?<=\S),?\s+(?:(?:according\s+to|as\s+(?:stated|mentioned|described|shown|noted)\s+in)\s+"
                       rf"{SOURCED}|in\s+{MARKED})(?=\s*[.!?]?\s*$)", re.IGNORECASE)
_QUOTES = "'\"\u2018\u2019\u201c\u201d"
_SPLIT = re.compile(r"(?<=[.!?])(\s+)")


@dataclass(frozen=True)
class Talkless:
    """A text with its talk about the passages taken out, and how many sentences were changed or dropped."""

    text: str
    changed: int


@dataclass(frozen=True)
class TalklessPrediction:
    """A prediction's readings and long answer with the passage talk taken out, and the sentences changed in all."""

    interpretations: list[dict[str, Any]]
    long_answer: str
    changed: int


def strip_passage_talk(text: str) -> Talkless:
    """Take the passage talk of the module docstring out of ``text``.

    Args:
        text: a long answer, or a reading's question or answer.

    Returns:
        The text with each changed sentence replaced where it stood and each dropped one removed with the space
        before it (line breaks and spacing elsewhere kept), and how many sentences changed; ``text`` itself, with 0,
        when nothing changed (a non-string such as None included).
    """
    if not isinstance(text, str) or not re.search(r"\bpassages?\b|\b(?:given|provided|quoted)\s+text\b", text,
                                                  re.IGNORECASE):
        return Talkless(text, 0)
    parts = _SPLIT.split(text)  # sentence, space, sentence, space, ...
    kept, changed = [], 0
    for index in range(0, len(parts), 2):
        sentence = parts[index]
        body = sentence.strip()
        cleaned = _clean_sentence(body) if body else body
        changed += cleaned != body
        if body and not cleaned:  # dropped, with the space before it (the one after it, when it came first)
            continue
        if kept:
            kept.append(parts[index - 1])
        kept.append(sentence.replace(body, cleaned, 1) if cleaned != body else sentence)
    return Talkless("".join(kept), changed) if changed else Talkless(text, 0)


def without_passage_talk(readings: Iterable[Mapping[str, Any]], long_answer: str) -> TalklessPrediction:
    """Take the passage talk out of a prediction's readings and long answer.

    Args:
        readings: dicts with a ``question`` and an ``answer`` (other keys are copied as they are).
        long_answer: the long answer.

    Returns:
        The readings (new dicts) and the long answer through ``strip_passage_talk``, and the sentences changed in
        all. A text that was nothing but talk is kept as it was (better shown than emptied) and not counted.
    """
    answer = strip_passage_talk(long_answer)
    answer = answer if str(answer.text or "").strip() else Talkless(long_answer, 0)
    changed, kept = answer.changed, []
    for reading in readings:
        fields = {key: strip_passage_talk(reading[key]) for key in ("question", "answer") if key in reading}
        fields = {key: f for key, f in fields.items() if f.changed and str(f.text).strip()}
        changed += sum(f.changed for f in fields.values())
        kept.append(dict(reading) | {key: f.text for key, f in fields.items()})
    return TalklessPrediction(kept, answer.text, changed)


def _clean_sentence(sentence: str) -> str:
    """One sentence without its passage talk: rule 1, else rules 2 and 3 of the module docstring ("" to drop)."""
    if any(p.search(sentence) for p in _SOURCE_ONLY):
        fact = _FACT.search(sentence)
        kept = _unquoted(fact.group(1)) if fact else ""
        return _capitalised(kept) if len(re.findall(r"\w+", kept)) >= 2 else ""
    cleaned = sentence
    for pattern in _LEAD_INS:
        cut = pattern.sub("", cleaned, count=1)
        if cut != cleaned:
            cut = _IT_IS_STATED.sub("", cut, count=1)
            if not re.search(r"\w", cut):  # the lead-in was all there was (a reply cut short)
                return ""
            cleaned = _capitalised(_unquoted(cut))
            break
    trimmed = _TRAILING.sub("", cleaned)
    if trimmed != cleaned and len(re.findall(r"\w+", trimmed)) >= 2:
        end = re.search(r"[.!?]+$", cleaned)
        cleaned = trimmed.rstrip(" ,;") + (end.group() if end and not re.search(r"[.!?]$", trimmed) else "")
    return cleaned


def _unquoted(text: str) -> str:
    """``text`` without the quotation marks around it, when one opens it and one ends it (before its final
    punctuation); otherwise unchanged."""
    text = text.strip()
    closing = re.search(rf"[{_QUOTES}](?=[.!?]*$)", text[1:]) if text[:1] in _QUOTES else None
    inner = text[1:]
    if closing is None or re.search(rf"[{_QUOTES}]", inner[:closing.start()]):  # several quotes: leave them
        return text
    return (inner[:closing.start()] + inner[closing.end():]).strip()


def _capitalised(text: str) -> str:
    """``text`` with a capital first letter, unless its second letter is one already ("eBay", "iPhone")."""
    return text if len(text) > 1 and text[1].isupper() else text[:1].upper() + text[1:]
