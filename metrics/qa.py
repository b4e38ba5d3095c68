"""Short-answer metrics: exact match, token F1 (max over gold answers) and AmbigQA answer-set F1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from disambig.data.text import normalize, tokens


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer."""
    pred = normalize(prediction)
    return float(any(pred == normalize(g) for g in golds))


def f1_pair(prediction: str, gold: str) -> float:
    """Token F1 = 2PR/(P+R) over the multiset of normalised tokens; two empty strings score 1."""
    p, g = tokens(prediction), tokens(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    """Max token F1 of the prediction against any gold answer (0 when there are no golds)."""
    return max((f1_pair(prediction, g) for g in golds), default=0.0)


def answer_set_f1(predictions: list[str], gold_clusters: list[list[str]]) -> float:
    """AmbigQA multi-answer F1 over answer sets.

    Each gold cluster is one interpretation's aliases. Precision = mean over distinct predicted answers of the
    best F1 against any cluster; recall = mean over clusters of the best F1 of any prediction; the score is
    2PR/(P+R). (The AmbigQA script uses this with F1 scoring; each predicted answer may match one cluster.)
    """
    preds = list(dict.fromkeys(p for p in predictions if normalize(p)))
    clusters = [c for c in gold_clusters if c]
    if not preds or not clusters:
        return float(not preds and not clusters)
    scores = [[token_f1(p, cluster) for cluster in clusters] for p in preds]
    precision = sum(max(row) for row in scores) / len(preds)
    recall = sum(max(scores[i][j] for i in range(len(preds))) for j in range(len(clusters))) / len(clusters)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
