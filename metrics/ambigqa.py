"""AmbigQA's official answer-set F1 (Min et al. 2020, ``ambigqa_evaluate_script.py``, ``get_f1``).

For one annotation with answer clusters C_1..C_m (a singleAnswer annotation is one cluster; a multipleQAs
annotation has one cluster per qaPair) and distinct predicted answers p_1..p_n:

    walk clusters i in order and predictions j in order; when neither is taken yet and p_j exactly matches
    (SQuAD-normalised) any answer of C_i, take both
    R = taken clusters / m,  P = taken predictions / n,  F1 = 2PR/(P+R) (0 when P + R = 0)

The question's score is the maximum over its annotations. No prediction scores 0. Predictions are
de-duplicated by their normalised text first.
"""

from __future__ import annotations

from typing import Any

from disambig.data.text import normalize


def annotation_f1(clusters: list[list[str]], predictions: list[str]) -> float:
    """F1 of one annotation's clusters against the predicted answers, with greedy one-to-one exact matching."""
    clusters = [c for c in clusters if c]
    preds = list(dict.fromkeys(normalize(p) for p in predictions if normalize(p)))
    if not clusters or not preds:
        return 0.0
    gold = [{normalize(a) for a in c} for c in clusters]
    taken_gold, taken_pred = [False] * len(gold), [False] * len(preds)
    for i, cluster in enumerate(gold):
        for j, pred in enumerate(preds):
            if not taken_gold[i] and not taken_pred[j] and pred in cluster:
                taken_gold[i] = taken_pred[j] = True
    recall, precision = sum(taken_gold) / len(gold), sum(taken_pred) / len(preds)
    return 0.0 if recall + precision == 0 else 2 * precision * recall / (precision + recall)


def ambigqa_f1(annotations: list[list[list[str]]], predictions: list[str]) -> float:
    """Max over annotations of ``annotation_f1``."""
    return max((annotation_f1(clusters, predictions) for clusters in annotations), default=0.0)


def example_annotations(example: Any) -> list[list[list[str]]]:
    """Each annotator's answer clusters (the loader's ``answer_sets_by_annotator``, else the interpretations)."""
    by_annotator = getattr(example, "answer_sets_by_annotator", None)
    if by_annotator:
        return [[list(c) for c in annotation] for annotation in by_annotator]
    return [[list(i.get("answers") or []) for i in example.interpretations]]
