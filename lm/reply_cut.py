"""Cut a reply that looped or hit the token cap back to its last whole sentence, keeping it parseable.

A grammar-constrained reply is JSON whose text fields are strings; a plain reply is one text. The text being
written when generation stopped is the reply's *last string* (for a plain reply, all of it). A looping reply keeps
that string up to the repeated run's second occurrence, cut back to its last whole sentence
(``disambig.lm.repetition``); a reply cut by the token cap keeps that string up to its last whole sentence. The reply
is then closed (``close_truncated_json``), so what follows the cut string is dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from disambig.lm.repetition import LoopRule, last_sentence, loop_cut, whole_words
from disambig.lm.truncation import close_truncated_json

UNFINISHED_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{0,3})?$")


@dataclass(frozen=True)
class TextSpan:
    """Where the reply's last text sits: ``reply[start:end]`` (raw JSON string content for a JSON reply), and
    whether it was still being written (an open string or a plain reply)."""

    start: int
    end: int
    is_json: bool
    open: bool

    def value(self, reply: str) -> str:
        """The text itself (JSON escapes decoded)."""
        raw = reply[self.start:self.end]
        return _decode(raw) if self.is_json else raw


def is_json_reply(reply: str) -> bool:
    """Whether ``reply`` is (the start of) a JSON object or array."""
    return reply.lstrip()[:1] in ("{", "[")


def last_text(reply: str) -> TextSpan | None:
    """The reply's last string (open or closed) in a JSON reply, the whole reply otherwise; None if it has none."""
    if not is_json_reply(reply):
        return TextSpan(0, len(reply), is_json=False, open=True)
    start = end = None
    escaped = False
    for index, char in enumerate(reply):
        if end is None and start is not None:  # inside a string
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                end = index
        elif char == '"':
            start, end = index + 1, None
    if start is None:
        return None
    return TextSpan(start, len(reply) if end is None else end, is_json=True, open=end is None)


def find_loop(reply: str, rule: LoopRule) -> tuple[TextSpan, str, int] | None:
    """The reply's last text, its value and the offset where it starts repeating, when it loops under ``rule``.

    A word still being written at the end of an open text is left out: the next token may extend it.
    """
    span = last_text(reply)
    if span is None:
        return None
    value = span.value(reply)
    checked = whole_words(value) if span.open else value
    cut = loop_cut(checked, rule.ngram, rule.repeats)
    return None if cut is None else (span, value, cut)


def cut_loop(reply: str, rule: LoopRule) -> str | None:
    """``reply`` with its looping last text cut to its last whole sentence before the loop, closed; None when the
    reply does not loop."""
    found = find_loop(reply, rule)
    if found is None:
        return None
    span, value, cut = found
    return _replace(reply, span, last_sentence(value[:cut]))


def cut_to_sentence(reply: str) -> str:
    """A reply stopped by the token cap: its open text cut back to its last whole sentence, then closed."""
    span = last_text(reply)
    if span is None or not span.open:
        return close_truncated_json(reply) if is_json_reply(reply) else reply
    return _replace(reply, span, last_sentence(span.value(reply)))


def _replace(reply: str, span: TextSpan, text: str) -> str:
    if not span.is_json:
        return text
    encoded = json.dumps(text, ensure_ascii=False)[1:-1]
    return close_truncated_json(reply[:span.start] + encoded)


def _decode(raw: str) -> str:
    """JSON string content as text; an escape cut half-way at the end is dropped."""
    complete = UNFINISHED_ESCAPE.sub("", raw) if _odd_backslashes_at_end(raw) or _cut_unicode(raw) else raw
    try:
        return json.loads(f'"{complete}"', strict=False)
    except json.JSONDecodeError:
        return complete


def _odd_backslashes_at_end(raw: str) -> bool:
    return (len(raw) - len(raw.rstrip("\\"))) % 2 == 1


def _cut_unicode(raw: str) -> bool:
    found = re.search(r"(\\+)u[0-9a-fA-F]{0,3}$", raw)
    return found is not None and len(found.group(1)) % 2 == 1
