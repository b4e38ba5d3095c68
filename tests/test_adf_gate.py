"""The ambiguity gate: eq. 3 routing, thresholds learned from labels, plain-JSON state."""

from __future__ import annotations

import json

import dspy
import numpy as np
import pytest

from disambig.programs.adf.gate import AmbiguityGate, gate_metrics, is_ambiguous
from disambig.programs.adf.geometry import Coherence

# Toy set: every question is dispersed (variance 0.5 >= the paper's 0.25), so the paper's gate decomposes all
# of them (accuracy 3/6); the ambiguous ones are the separated ones (0.30, 0.35, 0.40 vs 0.02, 0.05, 0.08).
TOY = np.array([[0.5, 0.30], [0.5, 0.35], [0.5, 0.40], [0.5, 0.02], [0.5, 0.05], [0.5, 0.08]])
LABELS = [True, True, True, False, False, False]


def test_the_papers_thresholds_decompose_everything_on_the_toy_set():
    gate = AmbiguityGate(tau_var=0.25, tau_sep=0.1)
    assert gate.predict(TOY).tolist() == [True] * 6
    assert gate_metrics(gate.predict(TOY), LABELS)["accuracy"] == 0.5


def test_fit_moves_the_thresholds_toward_the_labels():
    gate = AmbiguityGate(tau_var=0.25, tau_sep=0.1).fit(TOY, LABELS)
    assert gate.tau_var_ > 0.5                 # dispersion no longer decides (it does not tell the classes apart)
    assert 0.08 < gate.tau_sep_ <= 0.30        # separation splits them
    assert gate.predict(TOY).tolist() == LABELS
    assert gate.train_score_ == 1.0 and gate.n_train_ == 6
    assert (gate.tau_var, gate.tau_sep) == (0.25, 0.1)   # the arguments are left as given


def test_fit_with_uncertain_answered_learns_only_separation():
    gate = AmbiguityGate(tau_var=0.8, tau_sep=0.5, uncertain="answer", strict=True).fit(TOY, LABELS)
    assert gate.tau_var_ == 0.8 and 0.08 <= gate.tau_sep_ < 0.30
    assert gate.predict(TOY).tolist() == LABELS


def test_ties_go_to_the_cheaper_gate():
    # two questions with the same statistics, one ambiguous: "decompose both" and "decompose neither" both
    # score 1/2; the gate that decomposes fewer questions wins.
    X = np.array([[0.5, 0.1], [0.5, 0.1]])
    gate = AmbiguityGate().fit(X, [True, False])
    assert gate.predict(X).tolist() == [False, False] and gate.train_score_ == 0.5


def test_fit_accepts_coherence_records_and_reads_the_chosen_dispersion():
    stats = [Coherence(variance=0.2, mean_distance=0.9, separation=0.0, size=10),
             Coherence(variance=0.2, mean_distance=0.5, separation=0.0, size=10)]
    gate = AmbiguityGate(dispersion="mean_distance").fit(stats, [True, False])
    assert 0.5 < gate.tau_var_ <= 0.9
    assert gate.state(stats[0]) == "Uncertain" and gate.decomposes("Uncertain")


def test_state_round_trips_through_json():
    gate = AmbiguityGate(objective="f1").fit(TOY, LABELS)
    again = AmbiguityGate.from_dict(json.loads(json.dumps(gate.to_dict())))
    assert again.thresholds == gate.thresholds and again.objective == "f1"
    assert again.predict(TOY).tolist() == gate.predict(TOY).tolist()


@pytest.mark.parametrize(("gate", "X", "y", "match"), [
    (AmbiguityGate(), TOY, [True], "one label per question"),
    (AmbiguityGate(), np.zeros((3, 3)), [True] * 3, r"\(n, 2\) array"),
    (AmbiguityGate(objective="recall"), TOY, LABELS, "choose one of accuracy"),
    (AmbiguityGate(uncertain="maybe"), TOY, LABELS, "choose one of decompose, answer"),
    (AmbiguityGate(grid=1), TOY, LABELS, "at least 2"),
])
def test_fit_rejects(gate, X, y, match):
    with pytest.raises(ValueError, match=match):
        gate.fit(X, y)


def test_metrics_and_labels():
    # decisions T T F F vs labels T F T F: accuracy 2/4, F1 = 2*1 / (2*1 + 1 + 1) = 0.5, rate 0.5
    assert gate_metrics([True, True, False, False], [True, False, True, False]) == {
        "accuracy": 0.5, "f1": 0.5, "decomposition_rate": 0.5, "n": 4}
    one = dspy.Example(question="q", interpretations=[{"question": "q", "answers": ["a"]}])
    two = dspy.Example(question="q", interpretations=[{"question": "q1", "answers": ["a"]},
                                                      {"question": "q2", "answers": ["b"]}])
    assert (is_ambiguous(one), is_ambiguous(two)) == (False, True)
