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
    """Is the short ``answer`` a refusal ("unknown", "N/A", "None.", "not stated", "The passages do not say")?

    A no-answer phrase inside a name is not one: "Unknown Pleasures" and "Tomb of the Unknown Soldier" keep a
    capitalised word or a number besides the phrase (the answer's first word aside), a refusal does not."""
    if normalize(answer) in NO_ANSWER or REFUSAL.search(answer):
        return True
    match = UNKNOWN.search(answer)
    if match is None:
        return False
    rest = (answer[:match.start()] + " " + answer[match.end():]).split()
    rest = rest[1:] if match.start() > 0 else rest  # the answer's first word is capitalised anyway
    return not any(word[:1].isupper() or word[:1].isdigit() for word in rest)
