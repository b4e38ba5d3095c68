"""The ambiguity gate: ADF's state rule (eq. 3) and routing as an estimator that learns its thresholds.

The paper sets tau_var and tau_sep by hand per dataset and names learning them as future work (section 7).
AmbigNQ says which questions are ambiguous (an annotator wrote ``multipleQAs``), so ``fit`` can choose the
thresholds that best reproduce those labels on a train split. State is plain numbers (``to_dict``), never
pickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from disambig.programs.adf.geometry import Coherence, Dispersion, State, check_dispersion, classify

Uncertain = Literal["decompose", "answer"]
Objective = Literal["accuracy", "f1", "balanced_accuracy"]
OBJECTIVES = ("accuracy", "f1", "balanced_accuracy")
UNCERTAIN_ROUTES = ("decompose", "answer")
VERSION = 1


class AmbiguityGate:
    """Decide from the first retrieval's coherence whether ADF decomposes a question.

    A question is decomposed when its state is Ambiguous, or Uncertain with ``uncertain="decompose"``
    (Algorithm 1). ``fit`` searches both thresholds over quantiles of the training statistics for the
    pair that best matches the labels (True = ambiguous); ties go to the pair that decomposes fewer
    questions (the cheaper gate).

    Args:
        tau_var: dispersion threshold (the paper's AmbigNQ 0.25).
        tau_sep: separation threshold (the paper's AmbigNQ 0.1).
        dispersion: ``variance`` (eq. 1) or ``mean_distance`` (the released code's statistic).
        strict: compare with ``>`` (released code) instead of ``>=`` (eq. 3).
        uncertain: ``decompose`` (Algorithm 1) or ``answer`` (released code on AmbigNQ: no decomposition).
        objective: what ``fit`` maximises: ``accuracy``, ``f1`` (of the ambiguous class) or
            ``balanced_accuracy``.
        grid: candidate thresholds per statistic in ``fit``.

    Attributes (after ``fit``):
        tau_var_, tau_sep_: the learned thresholds.
        train_score_: the objective on the training statistics.
        n_train_: training questions.
    """

    def __init__(self, tau_var: float = 0.25, tau_sep: float = 0.1, dispersion: Dispersion = "variance",
                 strict: bool = False, uncertain: Uncertain = "decompose", objective: Objective = "accuracy",
                 grid: int = 101) -> None:
        self.tau_var = tau_var
        self.tau_sep = tau_sep
        self.dispersion = dispersion
        self.strict = strict
        self.uncertain = uncertain
        self.objective = objective
        self.grid = grid

    @property
    def thresholds(self) -> tuple[float, float]:
        """(tau_var, tau_sep) in use: the learned ones after ``fit``, else the given ones."""
        return getattr(self, "tau_var_", self.tau_var), getattr(self, "tau_sep_", self.tau_sep)

    def state(self, stats: Coherence) -> State:
        """Eq. 3 with the thresholds in use."""
        self._check()
        tau_var, tau_sep = self.thresholds
        return classify(stats, tau_var, tau_sep, self.dispersion, self.strict)

    def decomposes(self, state: State) -> bool:
        """Whether a question in ``state`` goes through decomposition."""
        return state == "Ambiguous" or (state == "Uncertain" and self.uncertain == "decompose")

    def predict(self, X: Sequence[Coherence] | np.ndarray) -> np.ndarray:
        """True where the gate decomposes. ``X``: ``Coherence`` records or an ``(n, 2)`` array of
        (dispersion, separation)."""
        self._check()
        features = self.features(X)
        tau_var, tau_sep = self.thresholds
        return self._decide(features[:, 0], features[:, 1], np.array([tau_var]), np.array([tau_sep]))[0, 0]

    def fit(self, X: Sequence[Coherence] | np.ndarray, y: Sequence[bool]) -> AmbiguityGate:
        """Learn ``tau_var_`` and ``tau_sep_`` from statistics ``X`` and labels ``y`` (True = ambiguous)."""
        self._check()
        if not isinstance(self.grid, int) or self.grid < 2:
            raise ValueError(f"grid={self.grid!r} must be an integer of at least 2 candidate thresholds")
        features = self.features(X)
        labels = np.asarray(y, dtype=bool).ravel()
        if len(labels) != len(features) or not len(labels):
            raise ValueError(f"{len(features)} statistics and {len(labels)} labels; give one label per question")
        dispersion, separation = features[:, 0], features[:, 1]
        var_grid = self.candidates(dispersion) if self.uncertain == "decompose" else np.array([self.tau_var])
        sep_grid = self.candidates(separation)
        decided = self._decide(dispersion, separation, var_grid, sep_grid)
        scores = score_grid(decided, labels, self.objective)
        rate = decided.mean(axis=2)
        best = np.lexsort((rate.ravel(), -scores.ravel()))[0]
        i, j = np.unravel_index(best, scores.shape)
        self.tau_var_, self.tau_sep_ = float(var_grid[i]), float(sep_grid[j])
        self.train_score_, self.n_train_ = float(scores[i, j]), int(len(labels))
        return self

    def candidates(self, values: np.ndarray) -> np.ndarray:
        """Quantiles of ``values``, plus one threshold below all of them and one above (fire always / never)."""
        quantiles = np.quantile(values, np.linspace(0.0, 1.0, self.grid))
        span = float(values.max() - values.min()) or 1.0
        return np.unique(np.concatenate([[values.min() - span], quantiles, [values.max() + span]]))

    def features(self, X: Sequence[Coherence] | np.ndarray) -> np.ndarray:
        """``(n, 2)`` array of (dispersion, separation)."""
        if len(X) and isinstance(X[0], Coherence):
            return np.array([[s.dispersion(self.dispersion), s.separation] for s in X], dtype=float)
        features = np.asarray(X, dtype=float)
        if features.ndim != 2 or features.shape[1] != 2:
            raise ValueError(f"expected Coherence records or an (n, 2) array of (dispersion, separation), "
                             f"got shape {features.shape}")
        return features

    def to_dict(self) -> dict[str, Any]:
        """Arguments and learned state as plain JSON values."""
        out: dict[str, Any] = {"version": VERSION, "tau_var": self.tau_var, "tau_sep": self.tau_sep,
                               "dispersion": self.dispersion, "strict": self.strict, "uncertain": self.uncertain,
                               "objective": self.objective, "grid": self.grid}
        if hasattr(self, "tau_var_"):
            out["fitted"] = {"tau_var": self.tau_var_, "tau_sep": self.tau_sep_, "train_score": self.train_score_,
                             "n_train": self.n_train_}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AmbiguityGate:
        """The gate ``to_dict`` described, learned thresholds included."""
        if data.get("version") != VERSION:
            raise ValueError(f"gate state version {data.get('version')!r} is not {VERSION}; refit the gate")
        gate = cls(**{k: v for k, v in data.items() if k not in ("version", "fitted")})
        fitted = data.get("fitted")
        if fitted:
            gate.tau_var_, gate.tau_sep_ = float(fitted["tau_var"]), float(fitted["tau_sep"])
            gate.train_score_, gate.n_train_ = float(fitted["train_score"]), int(fitted["n_train"])
        return gate

    def _decide(self, dispersion: np.ndarray, separation: np.ndarray, var_grid: np.ndarray,
                sep_grid: np.ndarray) -> np.ndarray:
        """``(len(var_grid), len(sep_grid), n)`` booleans: decomposed under each threshold pair."""
        above = np.greater if self.strict else np.greater_equal
        separated = above(separation[None, :], sep_grid[:, None])[None, :, :]
        dispersed = above(dispersion[None, :], var_grid[:, None])[:, None, :]
        return separated | dispersed if self.uncertain == "decompose" else np.broadcast_to(
            separated, (len(var_grid), len(sep_grid), len(separation)))

    def _check(self) -> None:
        check_dispersion(self.dispersion)
        if self.uncertain not in UNCERTAIN_ROUTES:
            raise ValueError(f"uncertain={self.uncertain!r}; choose one of {', '.join(UNCERTAIN_ROUTES)}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}; choose one of {', '.join(OBJECTIVES)}")


def score_grid(decided: np.ndarray, labels: np.ndarray, objective: Objective) -> np.ndarray:
    """The objective of each threshold pair's decisions against ``labels`` (last axis = questions)."""
    tp = (decided & labels).sum(axis=-1)
    fp = (decided & ~labels).sum(axis=-1)
    fn = (~decided & labels).sum(axis=-1)
    tn = (~decided & ~labels).sum(axis=-1)
    if objective == "accuracy":
        return (tp + tn) / labels.size
    if objective == "f1":
        return np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros(tp.shape), where=(2 * tp + fp + fn) > 0)
    positives, negatives = max(int(labels.sum()), 1), max(int((~labels).sum()), 1)
    return (tp / positives + tn / negatives) / 2


def gate_metrics(decided: Sequence[bool], labels: Sequence[bool]) -> dict[str, float]:
    """Accuracy, F1 of the ambiguous class, and decomposition rate of a gate's decisions."""
    d, y = np.asarray(decided, dtype=bool), np.asarray(labels, dtype=bool)
    if d.shape != y.shape or not y.size:
        raise ValueError(f"{d.size} decisions and {y.size} labels; give one decision per label")
    return {"accuracy": float(score_grid(d, y, "accuracy")), "f1": float(score_grid(d, y, "f1")),
            "decomposition_rate": float(d.mean()), "n": int(y.size)}


def is_ambiguous(example: Any) -> bool:
    """The free label: the question has more than one annotated interpretation (AmbigNQ ``multipleQAs``)."""
    return len(getattr(example, "interpretations", None) or []) > 1
