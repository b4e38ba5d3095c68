"""Numeric knobs a program declares: top-K, pruning K, RRF k, thresholds.

A program declares its search space as a class attribute ``KNOBS: dict[str, Knob]`` whose keys are
constructor arguments; ``disambig.optimizers.knobs.tune_knobs`` searches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Knob:
    """An integer (``step`` set, or both bounds ints) or float range, optionally log-scaled."""

    low: float
    high: float
    step: float | None = None
    log: bool = False

    def __post_init__(self) -> None:
        if self.low >= self.high:
            raise ValueError(f"knob range low={self.low} must be below high={self.high}")

    @property
    def is_int(self) -> bool:
        return isinstance(self.low, int) and isinstance(self.high, int)

    def suggest(self, trial: Any, name: str) -> float | int:
        if self.is_int:
            return trial.suggest_int(name, self.low, self.high, step=int(self.step or 1), log=self.log)
        return trial.suggest_float(name, self.low, self.high, step=self.step, log=self.log)


def knob_space(program_cls: type) -> dict[str, Knob]:
    """The knobs a program class declares (empty when it has none)."""
    return dict(getattr(program_cls, "KNOBS", {}))
