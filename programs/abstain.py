"""How an LM says that the passages do not answer: the phrases a reply uses instead of an answer."""

from __future__ import annotations

import re

UNKNOWN = re.compile(r"\b(?:not (?:mentioned|mention|provided|provide|specified|specify|stated|state|clear|known|"
                     r"possible)|no (?:information|mention|answer)|unknown|cannot be determined|can ?not determine|"
                     r"does not (?:say|indicate|give))\b", re.IGNORECASE)
