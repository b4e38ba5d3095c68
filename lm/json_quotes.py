"""Double quotes a model meant as text inside a JSON string, written escaped so the string goes on.

Under a JSON grammar, a model that quotes a title inside a string value (``"The song "Stuck in the Middle with You"
is ..."``) ends the string at the quote before the title: the grammar then allows only ``,`` or ``}``, and the answer
is cut to "The song " (4 of 150 DIVA long answers and 2 of 150 VanillaRAG ones on ASQA with Qwen2.5-Coder-1.5B).
``InnerQuotes`` follows the reply's text as the grammar reads it and, for a quote that opens or closes a quotation
inside a string, gives the sampler the same text with the quote escaped (``\\"``):

- a quote opens a quotation when it follows whitespace or "(" inside a string (a string's own closing quote follows
  its last word);
- the next unescaped quote in that string closes the quotation;
- but a quote with JSON structure right after it in the same token (``"}`` ``"]`` ``":``), or, for an opening one,
  a quote after ``\", `` (the model going on to the next key once its quotation closed), ends the string as usual;
- when the model answers an escaped opening quote with JSON structure (``,`` ``}`` ``]``) or an escaped closing one
  with ``}`` or ``]``, the quote was the string's end after all: the string is closed there (its text then ends with
  the quote mark);
- at most ``MAX_REWRITES`` quotes a string are rewritten, so a misreading cannot keep a string open for good.

A string that starts with a quoted title (``""Yesterday" is ..."``) is not repaired: its first quote cannot be told
from an empty string's closing one.

A quote the model escapes itself is left alone, but counts: a model that closes with ``\"`` a quotation opened by a
rewrite (or opens one so and closes it with a bare quote) gets the same treatment.
"""

from __future__ import annotations

from dataclasses import dataclass

OPENS_AFTER = frozenset(" \t(")
"""Characters after which a quote inside a string opens a quotation."""

ENDS_AFTER_OPENING = frozenset(",}]\n")
ENDS_AFTER_CLOSING = frozenset("}]\n")
"""What a model writes next when the quote it wrote was the string's end, not a quotation mark."""

ENDS_IN_TOKEN = frozenset(",}]:")
"""JSON structure that, right after a quote in the same token, shows the quote ends the string (``",`` only when no
quotation is open: after one, ``"X",`` is prose)."""

MAX_REWRITES = 4
"""Quotes rewritten in one string at most: two quotations."""


@dataclass(frozen=True)
class Rewrite:
    """The text to write instead of the model's token, and what it does to an open quotation."""

    text: str
    opens: bool  # True: an escaped opening quote; False: the quotation (or the string) is closed


class InnerQuotes:
    """The JSON lexer state of one reply, read from the text of every token written."""

    def __init__(self) -> None:
        self.in_string = False
        self.escaped = False  # the last character in the string was a backslash that escapes the next one
        self.tail = ""  # the string's last four characters as written ("" at its start)
        self.open_quote = False  # an escaped opening quote in this string waits for its closing one
        self.rewritten = False  # the last token written was a rewrite of ours ending in an escaped quote
        self.rewrites = 0  # quotes rewritten in the current string

    def rewrite(self, text: str) -> Rewrite | None:
        """What to write instead of the model's next token ``text``; None to write it as it is."""
        if not self.in_string:
            return None
        if self.rewritten and self.tail.endswith('\\"'):
            ends = ENDS_AFTER_OPENING if self.open_quote else ENDS_AFTER_CLOSING
            if text.lstrip(" \t")[:1] in ends:
                return Rewrite('"', opens=False)
        if self.rewrites >= MAX_REWRITES:
            return None
        index = self._first_quote(text)
        if index is None:
            return None
        after = text[index + 1:].lstrip(" \t")[:1]
        if after and after in ENDS_IN_TOKEN and (after != "," or not self.open_quote):
            return None
        escaped = Rewrite(text[:index] + "\\" + text[index:], opens=not self.open_quote)
        if self.open_quote:
            return escaped
        before_char = text[index - 1] if index else self.tail[-1:]
        before = (self.tail + text[:index]).rstrip(" \t")
        if before_char and before_char in OPENS_AFTER and not before.endswith('\\",'):
            return escaped
        return None

    def take(self, rewrite: Rewrite) -> None:
        """The sampler wrote ``rewrite`` (call before ``accept`` reads its text)."""
        self.open_quote = rewrite.opens
        self.rewritten = rewrite.text != '"'
        self.rewrites += 1

    def accept(self, text: str, ours: bool = False) -> None:
        """Read the text of a token written to the reply; ``ours``: part of a rewrite (keeps ``rewritten``)."""
        if not ours:
            self.rewritten = False
        for char in text:
            if not self.in_string:
                if char == '"':
                    self.in_string, self.escaped, self.tail, self.open_quote, self.rewrites = True, False, "", False, 0
                continue
            if char == '"' and not self.escaped:
                self.in_string, self.open_quote = False, False
                continue
            if char == '"' and not ours:  # a quote the model escaped itself opens or closes a quotation
                self.open_quote = not self.open_quote
            self.escaped = char == "\\" and not self.escaped
            self.tail = (self.tail + char)[-4:]

    def _first_quote(self, text: str) -> int | None:
        """Where the first quote of ``text`` that would end the string is (an escaped one would not)."""
        escaped = self.escaped
        for index, char in enumerate(text):
            if char == '"' and not escaped:
                return index
            escaped = char == "\\" and not escaped
        return None
