"""How an LM says that the passages do not answer: the phrases a reply uses instead of an answer."""

from __future__ import annotations

import re

from disambig.data.text import normalize

# Phrases of a long answer that gives no answer (one of the router's answer features).
UNKNOWN = re.compile(r"\b(?:not (?:mentioned|mention|provided|provide|specified|specify|stated|state|clear|known|"
                     r"possible)|no (?:information|mention|answer)|unknown|cannot be determined|can ?not determine|"
                     r"does not (?:say|indicate|give))\b", re.IGNORECASE)
NO_ANSWER = frozenset({"", "unknown", "none", "null", "na", "nothing"})
REFUSAL = re.compile(r"\bdo(?:es)? not (?:say|state|mention|give|contain|answer)\b", re.IGNORECASE)


def says_unknown(answer: str) -> bool:
    """Is the short ``answer`` a refusal ("unknown", "N/A", "None.", "not stated", "The passages do not say")?"""
    return normalize(answer) in NO_ANSWER or bool(UNKNOWN.search(answer) or REFUSAL.search(answer))
