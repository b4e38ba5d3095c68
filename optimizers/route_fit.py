"""Fit the router's two linear models: the ambiguity detector and the action policy, each with its
regularisation chosen by cross-validation on the training questions alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from disambig.programs.route.linear import LinearModel

C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
FOLDS = 5
SEED = 0


@dataclass(frozen=True)
class Fitted:
    """A fitted model, the C it was fitted with, and the cross-validated score that chose it (per C)."""

    model: LinearModel
    C: float
    cv_scores: dict[float, float]


def fit_detector(X: np.ndarray, ambiguous: Sequence[bool], features: Sequence[str],
                 grid: Sequence[float] = C_GRID) -> Fitted:
    """A logistic regression of ``ambiguous`` on ``X``; C maximises the stratified cross-validated ROC AUC."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray([str(int(a)) for a in ambiguous])
    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y))
    scores = {}
    for C in grid:
        p = np.zeros(len(y))
        for train, test in folds:
            p[test] = LinearModel.fit(X[train], y[train], features, C).predict_proba(X[test])[:, 1]
        scores[C] = float(roc_auc_score(y == "1", p))
    best = max(grid, key=lambda c: (scores[c], -c))
    return Fitted(LinearModel.fit(X, y, features, best), best, scores)


@dataclass(frozen=True)
class PolicyFit:
    """The chosen policy: a fitted model (``model``, ``C``), or one action for every question (``constant``) when
    that cross-validates better; ``cv_utility`` holds each option's cross-validated mean utility."""

    model: LinearModel | None
    C: float | None
    constant: str | None
    cv_utility: dict[str, float]


def fit_policy(X: np.ndarray, labels: Sequence[str], utilities: Sequence[Mapping[str, float]],
               features: Sequence[str], grid: Sequence[float] = C_GRID) -> PolicyFit:
    """A logistic regression from ``X`` to each question's best action, each question weighted by what a wrong
    choice would cost it (best utility minus the mean of the others, plus a floor so ties still count a little).

    The options are the regression at each C of ``grid`` and always taking one action; the one with the highest
    cross-validated mean utility of its chosen actions wins (not accuracy: choosing the second-best action where
    the two are close costs little). With few questions a constant action often wins, and then no model is kept.
    """
    from sklearn.model_selection import KFold

    y = np.asarray(labels)
    weights = decision_weights(labels, utilities)
    folds = list(KFold(min(FOLDS, len(y)), shuffle=True, random_state=SEED).split(X))
    scores: dict[str, float] = {}
    for C in grid:
        gained = []
        for train, test in folds:
            model = fit_or_constant(X[train], y[train], features, C, weights[train])
            chosen = choose(model, X[test], y[train])
            gained += [utilities[i][a] for i, a in zip(test, chosen, strict=True)]
        scores[f"C={C}"] = float(np.mean(gained))
    for action in sorted(utilities[0]):
        scores[f"always {action}"] = float(np.mean([u[action] for u in utilities]))
    best = best_option(scores)
    if best.startswith("always "):
        return PolicyFit(None, None, best[len("always "):], scores)
    C = float(best[2:])
    return PolicyFit(LinearModel.fit(X, y, features, C, weights), C, None, scores)


def best_option(scores: Mapping[str, float], digits: int = 9) -> str:
    """The option (``C=...`` or ``always ACTION``) with the highest cross-validated utility; a tie, to ``digits``
    decimals, goes to the simpler policy (the same utilities summed in another order differ in the last bits)."""
    return max(scores, key=lambda k: (round(scores[k], digits), k.startswith("always")))


def decision_weights(labels: Sequence[str], utilities: Sequence[Mapping[str, float]], floor: float = 0.01
                     ) -> np.ndarray:
    """Per question: best utility minus the mean utility of the other actions, plus ``floor``."""
    out = []
    for label, u in zip(labels, utilities, strict=True):
        others = [v for a, v in u.items() if a != label]
        out.append(u[label] - (float(np.mean(others)) if others else 0.0) + floor)
    return np.asarray(out, dtype=np.float64)


def fit_or_constant(X: np.ndarray, y: np.ndarray, features: Sequence[str], C: float,
                    weights: np.ndarray) -> LinearModel | None:
    """The fitted model, or None when the fold's labels hold one action (then that action is always chosen)."""
    return LinearModel.fit(X, y, features, C, weights) if len(set(y.tolist())) > 1 else None


def choose(model: LinearModel | None, X: np.ndarray, train_labels: np.ndarray) -> list[str]:
    """The most probable action per row; with no model, the fold's only training label."""
    if model is None:
        return [str(train_labels[0])] * len(X)
    probs = model.predict_proba(X)
    return [model.classes[j] for j in probs.argmax(axis=1)]
