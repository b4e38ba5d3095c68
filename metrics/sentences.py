"""Sentence splitting for ROUGE-Lsum, as ASQA's official scorer prepares text.

The scorer joins ``nltk.sent_tokenize(text.lower())`` with newlines. When NLTK's Punkt model for English is
installed as ``punkt_tab`` data (what ``sent_tokenize`` loads since NLTK 3.8.2; the older pickled ``punkt`` is
never loaded), we use exactly that. Otherwise a rule-based splitter stands in: a
break after ``.``, ``!`` or ``?`` (and any closing quotes or brackets) followed by whitespace, except after a
single letter (an initial) or a common abbreviation. Nothing is downloaded.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft vs etc inc ltd co corp no vol gen col lt sgt capt gov sen rep rev jan feb mar "
    "apr jun jul aug sep sept oct nov dec u.s u.k e.g i.e a.m p.m".split()
)
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (Punkt when available, else the rule-based splitter)."""
    punkt = _punkt()
    if punkt is not None:
        return list(punkt(text))
    return rule_based_sentences(text)


def rule_based_sentences(text: str) -> list[str]:
    """Split after sentence-final punctuation unless the word before it is an initial or an abbreviation."""
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        words = text[start : match.start()].split()
        last = words[-1].lower().rstrip(".") if words else ""
        if len(last) == 1 and last.isalpha() or last in ABBREVIATIONS:
            continue
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    return [s for s in [*sentences, tail] if s]


@lru_cache(maxsize=1)
def _punkt() -> Any:
    try:
        import nltk
    except ImportError:
        return None
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        return None
    return nltk.sent_tokenize
