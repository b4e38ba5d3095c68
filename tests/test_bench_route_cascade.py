"""``bench/quality/route_cascade.py``: the cascade's composition from stored rows (its features are the package's)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cascade(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.quality.route_cascade")


def row(answer: str, scores: dict | None = None, calls: int = 2) -> dict:
    return {"question": "Who won the cup in 1998?", "scores": scores or {"str-em": 0.0},
            "trace": {"lm_calls": calls, "input_tokens": 100, "output_tokens": 20},
            "prediction": {"long_answer": answer, "passages": [], "interpretations": []}}


def test_the_bench_reads_the_packages_answer_features(cascade):
    from disambig.programs.route import answer_features

    assert cascade.ANSWER_FEATURES is answer_features.ANSWER_FEATURES  # one definition (tested in test_route_*)


def test_cascade_adds_the_escalations_calls_and_takes_its_answer(cascade):
    first = {"q0": row("x.", {"str-em": 1.0}), "q1": row("y.", {"str-em": 0.0})}
    second = {"q0": row("x.", {"str-em": 0.0}, calls=6), "q1": row("y.", {"str-em": 1.0}, calls=6)}
    split = cascade.Split(["q0", "q1"], first, second, np.array([False, True]), np.zeros((2, 1)), np.zeros((2, 1)))
    scores, calls, _ = split.cascade(np.array([False, True]))
    assert scores == {"q0": {"str-em": 1.0}, "q1": {"str-em": 1.0}}
    assert calls.tolist() == [2.0, 8.0]
    assert cascade.cascade_value(split, np.array([False, True]), "str-em") == 1.0
    # The rule must escalate q1 alone: x = [0, 1], side +1, threshold 0.5; mean calls 5 < 6.
    rule = cascade.fit_threshold(split, np.array([[0.0], [1.0]]), "str-em", np.arange(2))
    assert rule == (0, 1.0, 0.5)
