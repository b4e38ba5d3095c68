"""Close JSON that the token limit cut off mid-way.

Grammar-constrained decoding keeps every prefix a valid start of JSON, so when the limit stops a long text
field the reply is one closing quote and a few brackets short of parseable. Closing it keeps the text that
was written (a shortened long answer) instead of losing the whole question to a parse error.
"""

from __future__ import annotations

import json

CLOSERS = {"{": "}", "[": "]"}


def close_truncated_json(text: str) -> str:
    """``text`` with its open string, arrays and objects closed, if that makes it parse; else ``text``."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
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
            stack.append(CLOSERS[char])
        elif char in "}]" and stack:
            stack.pop()
    candidate = text.rstrip().removesuffix("\\") if in_string and escaped else text
    candidate = candidate + ('"' if in_string else "") + "".join(reversed(stack))
    try:
        json.loads(candidate)
    except json.JSONDecodeError:
        return text
    return candidate
