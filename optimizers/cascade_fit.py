"""Fit a route cascade's escalation model on the train questions: a logistic regression of "escalation better" on
the answer-side and retrieval features, its C and threshold (from ``thresholds``; by default 0.5 alone, as in the
retired cascade benchmark, ``git show 3772683:bench/quality/route_cascade.py``) chosen by the cross-validated worth
of the train cascade, and kept only when that beats never and always escalating.

The cross-validation is that benchmark's: stratified ``FOLDS``-fold, ``REPEATS`` repeats, seed
``SEED``; each repeat's held-out decisions make one whole train cascade, whose worth (the dataset's metric minus the
cost of its calls, from the caller's ``worth``) is averaged over the repeats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from disambig.programs.route.cascade import ESCALATE
from disambig.programs.route.linear import LinearModel

C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
THRESHOLDS = (0.5,)  # the bench's; a wider grid overfits 60 train questions (see docs/RESULTS.md)
FOLDS, REPEATS, SEED = 5, 10, 0
Worth = Callable[[np.ndarray], float]  # escalation mask over the train questions -> the train cascade's worth


@dataclass(frozen=True)
class CascadeFit:
    """The chosen escalation rule: a model with its C and threshold, or a ``constant`` (``keep``/``escalate``);
    ``cv`` holds every option's cross-validated worth (constants: their worth on the train questions)."""

    model: LinearModel | None
    C: float | None
    threshold: float
    constant: str | None
    cv: dict[str, float]


def cascade_folds(better: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``REPEATS`` rounds of stratified folds (fewer folds when a class has fewer than ``FOLDS`` questions; none
    when it has fewer than two)."""
    from sklearn.model_selection import RepeatedStratifiedKFold

    k = min(FOLDS, int(better.sum()), int((~better).sum()))
    if k < 2:
        return []
    plan = RepeatedStratifiedKFold(n_splits=k, n_repeats=REPEATS, random_state=SEED)
    return list(plan.split(np.zeros(len(better)), better))


def held_out_probabilities(X: np.ndarray, better: np.ndarray, features: Sequence[str], C: float,
                           plan: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """``(REPEATS, n)``: each question's P(escalation better) from the model fitted without its fold (0 where that
    fold's training rows hold one class)."""
    y = np.where(better, ESCALATE, "0")
    per_repeat = len(plan) // REPEATS
    out = np.zeros((REPEATS, len(better)))
    for r in range(REPEATS):
        for fit_rows, held in plan[r * per_repeat:(r + 1) * per_repeat]:
            if len(set(better[fit_rows].tolist())) < 2:
                continue
            out[r, held] = LinearModel.fit(X[fit_rows], y[fit_rows], features, C).predict_proba(X[held])[:, 1]
    return out


def fit_cascade(X: np.ndarray, better: Sequence[bool], features: Sequence[str], worth: Worth,
                grid: Sequence[float] = C_GRID, thresholds: Sequence[float] = THRESHOLDS) -> CascadeFit:
    """The escalation rule with the best cross-validated worth (ties: the constant, then the threshold nearest 0.5,
    then the smaller C), refitted on every train question.

    Raises:
        ValueError: ``X`` is not one row per label, or a threshold is not a probability below 1.
    """
    bad = [t for t in thresholds if not 0.0 <= t < 1.0]
    if bad or not thresholds:
        raise ValueError(f"cascade thresholds {list(thresholds)}: give probabilities in [0, 1), e.g. 0.4,0.5,0.6")
    better = np.asarray(better, dtype=bool)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or len(X) != len(better):
        raise ValueError(f"X has shape {X.shape}; expected one row per label ({len(better)})")
    cv = {"never escalate": worth(np.zeros(len(better), bool)), "always escalate": worth(np.ones(len(better), bool))}
    plan = cascade_folds(better)
    options: dict[str, tuple[float, float]] = {}
    for C in grid if plan else ():
        probabilities = held_out_probabilities(X, better, features, C, plan)
        for t in thresholds:
            key = f"C={C:g}, threshold={t:g}"
            cv[key] = float(np.mean([worth(p > t) for p in probabilities]))
            options[key] = (C, t)
    best = max(cv, key=lambda k: (cv[k], k not in options, -abs(options.get(k, (0, 0.5))[1] - 0.5),
                                  -options.get(k, (0, 0))[0]))
    if best not in options:
        return CascadeFit(None, None, 0.5, "keep" if best == "never escalate" else "escalate", cv)
    C, t = options[best]
    model = LinearModel.fit(X, np.where(better, ESCALATE, "0"), features, C)
    return CascadeFit(model, C, t, None, cv)
