"""Close JSON that the token limit cut off mid-way.

Grammar-constrained decoding keeps every prefix a valid start of JSON, so when the limit stops a long text
field the reply is one closing quote and a few brackets short of parseable. Closing it keeps the text that
was written (a shortened long answer) instead of losing the whole question to a parse error. A list item
cut half-way (an object missing its last fields) is dropped rather than closed, since its schema would
reject it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

CLOSERS = {"{": "}", "[": "]"}


@dataclass(frozen=True)
class _Open:
    closer: str
    start: int
    in_array: bool


def close_truncated_json(text: str) -> str:
    """``text`` with its open string, arrays and objects closed, if that makes it parse; else ``text``."""
    stack, in_string, escaped = _scan(text)
    if stack and stack[-1].closer == "}" and stack[-1].in_array:
        cut = text[: stack[-1].start].rstrip().removesuffix(",")
        candidate = cut + "".join(o.closer for o in reversed(stack[:-1]))
    else:
        candidate = text[:-1] if escaped else text
        candidate += ('"' if in_string else "") + "".join(o.closer for o in reversed(stack))
    try:
        json.loads(candidate)
    except json.JSONDecodeError:
        return text
    return candidate


def _scan(text: str) -> tuple[list[_Open], bool, bool]:
    """The containers still open at the end of ``text``, whether it ends inside a string, and whether it ends
    on the backslash of an unfinished escape."""
    stack: list[_Open] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in CLOSERS:
            stack.append(_Open(CLOSERS[char], index, bool(stack) and stack[-1].closer == "]"))
        elif char in "}]" and stack:
            stack.pop()
    return stack, in_string, escaped
