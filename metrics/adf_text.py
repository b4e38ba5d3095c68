"""Text helpers exactly as the ADF authors' evaluation code defines them (``src/evaluation.py``).

    normalize_adf(s) = collapse_spaces(strip_ascii_punctuation(remove_articles(lower(s))))
    token_f1(p, g)   = 2PR/(P+R), P = |p n g|/|p|, R = |p n g|/|g| over token multisets; both empty -> 1, one -> 0
    lcs_f1(p, r)     = 2PR/(P+R), P = LCS/|p|, R = LCS/|r| over normalize_adf tokens, no stemming (0 if p is empty)

Articles are removed *before* punctuation (the reverse of SQuAD), so "the-end" -> "end" and "1979-1980" ->
"19791980", while non-ASCII marks ("1979–80" with an en dash) stay inside their token. ``lcs_f1`` is the
authors' fallback ROUGE-L, used when ``rouge-score`` is missing; their stored DIVA ASQA values were computed
with it.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_adf(text: str) -> str:
    """Lower-case, drop a/an/the, then ASCII punctuation, then collapse whitespace (the authors' order)."""
    return " ".join(_ARTICLES.sub(" ", (text or "").lower()).translate(_PUNCT).split())


def adf_tokens(text: str) -> list[str]:
    return normalize_adf(text).split()


def adf_token_f1(prediction: str, gold: str) -> float:
    """Token F1 of the whole ``prediction`` against ``gold`` on ``normalize_adf`` token multisets."""
    p, g = adf_tokens(prediction), adf_tokens(gold)
    if not p or not g:
        return float(not p and not g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists (dynamic programming, O(|a||b|))."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def lcs_f1(prediction: str, reference: str) -> float:
    """The authors' no-stem ROUGE-L fallback: LCS F-measure on ``normalize_adf`` tokens."""
    p, r = adf_tokens(prediction), adf_tokens(reference)
    if not p or not r:
        return 0.0
    lcs = lcs_length(p, r)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(p), lcs / len(r)
    return 2 * precision * recall / (precision + recall)
