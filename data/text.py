"""SQuAD answer normalisation: lower case, no punctuation, no articles (a/an/the), single spaces."""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", (text or "").lower().translate(_PUNCT)).split())


def tokens(text: str) -> list[str]:
    return normalize(text).split()
