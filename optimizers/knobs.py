"""Numeric knobs (top-K, pruning K, RRF k, thresholds) searched with optuna on a validation split.

A program declares its search space as a class attribute ``KNOBS: dict[str, Knob]`` whose keys are
constructor arguments; ``tune_knobs`` builds the program with each trial's values and keeps the best.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from disambig.errors import ConfigurationError
from disambig.programs.knobs import Knob, knob_space

__all__ = ["Knob", "knob_space", "tune_knobs"]

logger = logging.getLogger(__name__)


def tune_knobs(
    build: Callable[[dict[str, Any]], Any],
    space: dict[str, Knob],
    score: Callable[[Any], float],
    trials: int = 8,
    seed: int = 0,
    record: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], float]:
    """Maximise ``score(build(values))`` over ``space`` with optuna's TPE sampler; return (best values, score).

    Each trial's ``{"knobs": values, "train_score": score}`` is appended to ``record`` when one is given.
    """
    if not space:
        raise ConfigurationError("this program declares no numeric knobs to tune")
    if trials < 1:
        raise ValueError(f"trials={trials} must be at least 1")
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))

    def objective(trial: Any) -> float:
        values = {name: knob.suggest(trial, name) for name, knob in space.items()}
        value = score(build(values))
        logger.info("knobs %s -> %.4f", values, value)
        if record is not None:
            record.append({"knobs": values, "train_score": value})
        return value

    study.optimize(objective, n_trials=trials)
    return dict(study.best_params), float(study.best_value)
