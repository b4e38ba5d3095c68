"""Looping text: where a run of words starts to repeat, and the last whole sentence before a cut.

A text *loops* when some run of ``ngram`` words occurs ``repeats`` times (words are ``\\w+`` runs, compared
lower-cased). What is kept of a looping text is its part before the repeated run's second occurrence, cut back to its
last whole sentence. The engine's repetition guard (``disambig.lm.guard``) applies this rule while a reply is being
generated; ``bench/repetition.py`` applies it to stored answers. Under greedy decoding both give the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from disambig.errors import ConfigurationError

WORD = re.compile(r"\w+")
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
OFF = ("off", "0", "none", "")
DEFAULT_GUARD = "6x3"


@dataclass(frozen=True)
class LoopRule:
    """A text loops when a run of ``ngram`` words occurs ``repeats`` times."""

    ngram: int = 6
    repeats: int = 3

    def __str__(self) -> str:
        return f"{self.ngram}x{self.repeats}"

    @classmethod
    def parse(cls, text: str) -> LoopRule | None:
        """``"6x3"`` as ``LoopRule(6, 3)``; ``"off"`` (or ``"0"``) as None, no guard.

        Raises:
            ConfigurationError: ``text`` is neither ``NxR`` with N >= 1 and R >= 2 nor ``off``.
        """
        value = str(text).strip().lower()
        if value in OFF:
            return None
        ngram, sep, repeats = value.partition("x")
        if not sep or not ngram.isdigit() or not repeats.isdigit() or int(ngram) < 1 or int(repeats) < 2:
            raise ConfigurationError(f"repetition guard {text!r} is not NxR (a run of N >= 1 words occurring R >= 2 "
                                     "times, e.g. 6x3) or off")
        return cls(int(ngram), int(repeats))


def loop_cut(text: str, ngram: int = 6, repeats: int = 3) -> int | None:
    """The character offset where a looping text's repeated n-gram recurs for the first time (its second
    occurrence), or None when no n-gram reaches ``repeats`` occurrences."""
    words = [(m.group(0).lower(), m.start()) for m in WORD.finditer(text)]
    seen: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(words) - ngram + 1):
        key = tuple(w for w, _ in words[i:i + ngram])
        seen.setdefault(key, []).append(words[i][1])
        if len(seen[key]) >= repeats:
            return seen[key][1]
    return None


def last_sentence(text: str) -> str:
    """``text`` up to its last sentence end; the whole text stripped when it has none."""
    ends = [m.end() for m in SENTENCE_END.finditer(text)]
    return text[:ends[-1]].strip() if ends else text.strip()


def guarded(text: str, ngram: int = 6, repeats: int = 3) -> str:
    """What the rule leaves of a text: ``text`` itself when it does not loop, else its last whole sentence before
    the repeated run's second occurrence."""
    cut = loop_cut(text, ngram, repeats)
    return text if cut is None else last_sentence(text[:cut])


def whole_words(text: str) -> str:
    """``text`` without a word still being written at its end (one that a next token could extend)."""
    partial = re.search(r"\w+$", text)
    return text if partial is None else text[:partial.start()]
