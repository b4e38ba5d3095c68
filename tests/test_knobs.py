from __future__ import annotations

import pytest

from disambig.errors import ConfigurationError
from disambig.optimizers.knobs import Knob, knob_space, tune_knobs


class Toy:
    """Score peaks at top_k=4, weight=0.5: score = -(top_k-4)^2 - (weight-0.5)^2."""

    KNOBS = {"top_k": Knob(1, 8), "weight": Knob(0.0, 1.0, step=0.25)}

    def __init__(self, top_k: int = 1, weight: float = 0.0) -> None:
        self.top_k, self.weight = top_k, weight


def test_tuning_finds_the_peak_of_a_known_function():
    best, value = tune_knobs(lambda v: Toy(**v), knob_space(Toy),
                             lambda p: -((p.top_k - 4) ** 2) - (p.weight - 0.5) ** 2, trials=40)
    assert best == {"top_k": 4, "weight": 0.5} and value == 0.0


def test_int_knobs_suggest_ints():
    best, _ = tune_knobs(lambda v: Toy(**v), {"top_k": Knob(1, 3)}, lambda p: float(p.top_k), trials=5)
    assert isinstance(best["top_k"], int)


@pytest.mark.parametrize(("space", "match"), [({}, "no numeric knobs")])
def test_empty_space_is_refused(space, match):
    with pytest.raises(ConfigurationError, match=match):
        tune_knobs(lambda v: Toy(**v), space, lambda p: 0.0)


def test_bad_range():
    with pytest.raises(ValueError, match="must be below"):
        Knob(5, 2)
