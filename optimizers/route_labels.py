"""Which action serves each training question best: the candidates' stored scores, made per-question utilities.

A utility is the question's share of the dataset's primary metric minus ``cost_weight`` times the LM calls the
action made. A mean metric (AmbigQA F1) is its own share. ASQA's DR is corpus-level, ``sqrt(mean D-F1 x mean
ROUGE-L)``; a question's share is its first-order contribution, ``(R d_i + D r_i) / (2 sqrt(D R))`` with ``D`` and
``R`` the means over every candidate's answers, so the action that maximises each question's utility maximises
DR to first order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from disambig.errors import ConfigurationError

CORPUS_METRICS = {"dr": ("d-f1", "rouge-l")}  # metric -> the two per-question means it is the geometric mean of


@dataclass(frozen=True)
class Outcome:
    """One candidate's stored result for one question: its per-question scores and LM calls."""

    scores: Mapping[str, float]
    lm_calls: float


def metric_weights(metric: str, outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Per-question score weights whose weighted sum is a question's share of ``metric`` (see the module doc).

    Raises:
        ConfigurationError: the outcomes lack a score the metric needs.
    """
    if metric not in CORPUS_METRICS:
        _require(metric, outcomes)
        return {metric: 1.0}
    first, second = CORPUS_METRICS[metric]
    _require(first, outcomes)
    _require(second, outcomes)
    a = sum(o.scores[first] for o in outcomes) / len(outcomes)
    b = sum(o.scores[second] for o in outcomes) / len(outcomes)
    if a <= 0 or b <= 0:  # DR is 0 whatever is chosen: fall back to the sum, which still orders the answers
        return {first: 0.5, second: 0.5}
    root = 2.0 * math.sqrt(a * b)
    return {first: b / root, second: a / root}


def utility(outcome: Outcome, weights: Mapping[str, float], cost_weight: float) -> float:
    """The weighted score of one answer minus ``cost_weight`` per LM call."""
    return sum(w * outcome.scores[name] for name, w in weights.items()) - cost_weight * outcome.lm_calls


def label_questions(outcomes: Mapping[str, Mapping[str, Outcome]], metric: str, cost_weight: float = 0.0,
                    abstain_value: float | None = None) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    """Each question's best action and every action's utility.

    Args:
        outcomes: ``{action: {question id: Outcome}}``; every action must cover the same questions.
        metric: the dataset's primary metric (``dr``, ``ambigqa-f1``, ...).
        cost_weight: metric points one LM call is worth giving up.
        abstain_value: the utility of abstaining (None: abstaining is not allowed).

    Ties go to the action with fewer mean LM calls, then to the earlier one.
    """
    actions = list(outcomes)
    ids = _shared_ids(outcomes)
    weights = metric_weights(metric, [outcomes[a][i] for a in actions for i in ids])
    mean_calls = {a: sum(outcomes[a][i].lm_calls for i in ids) / len(ids) for a in actions}
    order = sorted(actions, key=lambda a: (mean_calls[a], actions.index(a)))
    utilities = {i: {a: utility(outcomes[a][i], weights, cost_weight) for a in order} for i in ids}
    if abstain_value is not None:
        for i in ids:
            utilities[i]["abstain"] = abstain_value
        order = ["abstain", *order]
    labels = {i: max(order, key=lambda a: (utilities[i][a], -order.index(a))) for i in ids}
    return labels, utilities


def _shared_ids(outcomes: Mapping[str, Mapping[str, Outcome]]) -> list[str]:
    if not outcomes:
        raise ConfigurationError("no candidate outcomes to label from; run the candidates on the train split first")
    sets = {a: set(rows) for a, rows in outcomes.items()}
    first = next(iter(sets.values()))
    for action, ids in sets.items():
        if ids != first:
            raise ConfigurationError(f"candidate {action!r} answered {len(ids)} questions, another "
                                     f"{len(first)}; every candidate must answer the same train questions")
    if not first:
        raise ConfigurationError("the candidates answered no questions in common")
    return sorted(first)


def _require(name: str, outcomes: Sequence[Outcome]) -> None:
    missing = sum(name not in o.scores for o in outcomes)
    if missing:
        raise ConfigurationError(f"{missing} stored answers lack the score {name!r}; score the candidate runs with "
                                 "the dataset's default metrics")
