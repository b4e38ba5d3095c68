"""A standardised logistic-regression model as plain JSON: fitted with scikit-learn, applied with numpy.

Used twice by the router: the ambiguity detector (classes ``0``/``1``) and the action policy (one class per
action). Saving the coefficients, not the estimator, keeps artifacts free of pickle and joblib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from disambig.errors import ConfigurationError

FORMAT = 1


@dataclass(frozen=True)
class LinearModel:
    """``softmax(((x - mean) / scale) @ coef.T + intercept)`` over ``classes``; a binary model keeps one row of
    coefficients (for the second class), as scikit-learn does.

    Attributes:
        features: the input's names, in order.
        classes: the output labels.
        mean, scale: the standardisation learned on the training inputs.
        coef: ``(1, d)`` for two classes, ``(len(classes), d)`` otherwise.
        intercept: one per row of ``coef``.
    """

    features: tuple[str, ...]
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, y: Sequence[str], features: Sequence[str], C: float = 1.0,
            sample_weight: np.ndarray | None = None, seed: int = 0) -> LinearModel:
        """Standardise ``X`` and fit an L2 logistic regression with inverse regularisation ``C``.

        Raises:
            ValueError: ``X`` is not ``(len(y), len(features))`` or ``y`` has fewer than two classes.
        """
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape != (len(y), len(features)):
            raise ValueError(f"X has shape {X.shape}; expected ({len(y)}, {len(features)}): one row per label and "
                             "one column per feature")
        if len(set(y)) < 2:
            raise ValueError(f"labels hold one class ({sorted(set(y))}); a policy needs at least two to choose from")
        scaler = StandardScaler().fit(X)
        model = LogisticRegression(C=C, max_iter=2000, random_state=seed)
        model.fit(scaler.transform(X), list(y), sample_weight=sample_weight)
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        return cls(tuple(features), tuple(str(c) for c in model.classes_), scaler.mean_.copy(), scale,
                   model.coef_.copy(), model.intercept_.copy())

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """``(n, len(classes))`` probabilities of each row of ``X`` (or of one vector, as a single row).

        Raises:
            ConfigurationError: a row of the wrong width.
        """
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if X.shape[1] != len(self.features):
            raise ConfigurationError(f"feature vector has {X.shape[1]} values; this model expects {len(self.features)}"
                                     f" ({_preview(self.features)}); recompute the features with the model's names")
        z = ((X - self.mean) / self.scale) @ self.coef.T + self.intercept
        if len(self.classes) == 2:
            p = 1.0 / (1.0 + np.exp(-z[:, 0]))
            return np.column_stack([1.0 - p, p])
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: lists of floats and strings."""
        return {"format": FORMAT, "features": list(self.features), "classes": list(self.classes),
                "mean": self.mean.tolist(), "scale": self.scale.tolist(), "coef": self.coef.tolist(),
                "intercept": self.intercept.tolist()}

    @classmethod
    def from_dict(cls, data: Any, what: str = "linear model") -> LinearModel:
        """The model ``to_dict`` wrote; a missing key or inconsistent shape is one ``ConfigurationError``."""
        if not isinstance(data, dict):
            raise ConfigurationError(f"{what} is {type(data).__name__}, not a JSON object; recompile it")
        missing = [k for k in ("features", "classes", "mean", "scale", "coef", "intercept") if k not in data]
        if missing:
            raise ConfigurationError(f"{what} lacks {', '.join(missing)}; recompile it")
        if data.get("format", FORMAT) != FORMAT:
            raise ConfigurationError(f"{what} has format {data.get('format')!r}; this version reads {FORMAT}")
        try:
            model = cls(tuple(map(str, data["features"])), tuple(map(str, data["classes"])),
                        np.asarray(data["mean"], dtype=np.float64), np.asarray(data["scale"], dtype=np.float64),
                        np.atleast_2d(np.asarray(data["coef"], dtype=np.float64)),
                        np.atleast_1d(np.asarray(data["intercept"], dtype=np.float64)))
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"{what} holds non-numeric values ({exc}); recompile it") from None
        model.check()
        return model

    def check(self, what: str = "linear model") -> None:
        """Raise ``ConfigurationError`` when the arrays disagree with the feature and class counts."""
        d, rows = len(self.features), 1 if len(self.classes) == 2 else len(self.classes)
        if len(self.classes) < 2:
            raise ConfigurationError(f"{what} has {len(self.classes)} class(es); it needs at least two")
        shapes = {"mean": (self.mean.shape, (d,)), "scale": (self.scale.shape, (d,)),
                  "coef": (self.coef.shape, (rows, d)), "intercept": (self.intercept.shape, (rows,))}
        for name, (got, want) in shapes.items():
            if got != want:
                raise ConfigurationError(f"{what}: {name} has shape {got}, expected {want} for {d} features and "
                                         f"{len(self.classes)} classes; recompile it")


def _preview(names: Sequence[str], n: int = 4) -> str:
    return ", ".join(names[:n]) + (f", ... {len(names) - n} more" if len(names) > n else "")
