"""Route's cascade mode: the policy's JSON state and its errors, the program keeping or escalating with a scripted
LM (the trace counting both runs), the fit's choice by cross-validated worth, and the composition by hand."""

from __future__ import annotations

import json
from types import SimpleNamespace

import dspy
import numpy as np
import pytest
from route_fakes import FakeHybrid

from disambig.errors import ConfigurationError
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.route_labels import Outcome
from disambig.programs import build_program
from disambig.programs.route import ANSWER_FEATURES, FEATURES, Answered, CascadePolicy, LinearModel, observe

QUESTION = "Who has the most goals in world football?"
READINGS = ["Who has the most goals in men's football?"]


@pytest.fixture(autouse=True)
def reset_dspy():
    yield
    dspy.configure(lm=None)


def rules() -> dict:
    return {
        "Using only the numbered passages": lambda _: {"disambiguations": [{"question": READINGS[0],
                                                                             "answer": "Ronaldo", "passage": 1}]},
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Ronaldo, Sinclair."},
        "Without any": lambda _: {"long_answer": "Pele."},
        "Answer the question": lambda _: {"answer": "Pele."},
    }


def configure():
    from program_fakes import scripted_lm

    lm, engine = scripted_lm(rules())
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return engine


def model(intercept: float, features: tuple[str, ...] = ("n_readings",), coef: float = 0.0) -> LinearModel:
    """A binary escalation model: P(escalate) = sigmoid(coef * x0 + intercept) (standardisation off)."""
    d = len(features)
    return LinearModel(features, ("0", "1"), np.zeros(d), np.ones(d), np.array([[coef] + [0.0] * (d - 1)]),
                       np.array([intercept]))


def cascade_route(policy: CascadePolicy):
    route = build_program("route", FakeHybrid(), candidates=["closed-book", "vanilla-rag"])
    route.cascade_ = policy
    return route


def test_the_policy_escalates_above_its_threshold_and_names_what_it_read():
    obs = observe(QUESTION, FakeHybrid())
    two_readings = Answered(QUESTION, "Pele.", ({"question": "a", "answer": "x"}, {"question": "b", "answer": "y"}))
    # P = sigmoid(2 * n_readings - 3): one reading 0.269, two 0.731
    policy = CascadePolicy("closed-book", "vanilla-rag", model(-3.0, coef=2.0))
    up = policy.decide(two_readings, obs)
    assert up.escalated and up.p_escalate == pytest.approx(1 / (1 + np.exp(-1.0)), abs=1e-6)
    assert up.action == "answer:vanilla-rag" and up.probabilities["answer:closed-book"] == pytest.approx(0.268941)
    assert set(up.features) == {*ANSWER_FEATURES, *FEATURES} and up.features["n_readings"] == 2.0
    one = Answered(QUESTION, "Pele.", ({"question": "a", "answer": "x"},))
    assert not policy.decide(one, obs).escalated
    assert CascadePolicy("closed-book", "vanilla-rag", model(-3.0, coef=2.0), threshold=0.2).decide(one, obs).escalated
    constant = CascadePolicy("closed-book", "vanilla-rag", None, constant="escalate").decide(one, obs)
    assert constant.escalated and constant.p_escalate is None and constant.to_dict()["cascade"]["escalated"]


def test_the_cascade_state_round_trips_as_json():
    policy = CascadePolicy("closed-book", "vanilla-rag", model(0.5, ("answer_cut", "dense_top1")), threshold=0.4)
    again = CascadePolicy.from_dict(json.loads(json.dumps(policy.to_dict())))
    assert again.to_dict() == policy.to_dict() and again.threshold == 0.4


@pytest.mark.parametrize("change, message", [
    ({"first": None}, "naming its 'first' and 'escalate'"),
    ({"model": None}, "exactly one of a model and a constant"),
    ({"threshold": 1.5}, "threshold is 1.5"),
    ({"escalate": "closed-book"}, "to itself"),
    ({"model": {**model(0.0).to_dict(), "features": ["nope"]}}, "unknown feature 'nope'"),
    ({"model": {**model(0.0).to_dict(), "coef": [[1.0, 2.0]]}}, "coef has shape"),
    ({"model": {**model(0.0).to_dict(), "classes": ["keep", "escalate"]}}, r"expected \['0', '1'\]"),
])
def test_a_malformed_cascade_state_is_one_line(change, message):
    data = CascadePolicy("closed-book", "vanilla-rag", model(0.0)).to_dict() | change
    with pytest.raises(ConfigurationError, match=message):
        CascadePolicy.from_dict(data)


def test_a_wrong_width_feature_vector_is_one_line():
    with pytest.raises(ConfigurationError, match="feature vector has 1 values; this model expects 2"):
        model(0.0, ("answer_cut", "dense_top1")).predict_proba(np.zeros(1))


@pytest.mark.parametrize("intercept, program, calls, phrases", [
    (-5.0, "closed-book", 1, ["Without"]),
    (5.0, "vanilla-rag", 3, ["Without", "Using", "Write"]),
])
def test_route_keeps_or_escalates_and_the_trace_counts_both_runs(intercept, program, calls, phrases):
    engine = configure()
    pred = cascade_route(CascadePolicy("closed-book", "vanilla-rag", model(intercept)))(question=QUESTION)
    assert pred.program == program and pred.action == f"answer:{program}"
    assert pred.long_answer == ("Pele." if program == "closed-book" else "Ronaldo, Sinclair.")
    assert pred.trace["lm_calls"] == calls and [p.split()[0] for p, _ in engine.calls] == phrases
    notes = pred.trace["notes"]
    cascade = notes["route"]["cascade"]
    assert cascade["escalated"] == (program == "vanilla-rag") and cascade["threshold"] == 0.5
    assert cascade["p_escalate"] == pytest.approx(1 / (1 + np.exp(-intercept)), abs=1e-6)
    assert notes["route"]["features"]["n_readings"] == 0.0 and "dense_top1" in notes["route"]["features"]
    assert notes["route"]["features"]["answer_cut"] == 0.0  # the live trace's count (0), not the text
    assert ("cascade_first" in notes) == (program == "vanilla-rag")
    if program == "vanilla-rag":
        assert notes["cascade_first"]["long_answer"] == "Pele." and notes["cascade_first"]["lm_calls"] == 1
        assert notes["cascade_first"]["interpretations"] == []  # closed-book answers without readings
        assert pred.trace["retrieval_calls"] == 3  # two feature searches + vanilla's; closed-book retrieves nothing


def test_a_cascade_cannot_decide_before_its_first_answer():
    route = cascade_route(CascadePolicy("closed-book", "vanilla-rag", model(0.0)))
    with pytest.raises(ConfigurationError, match="is a cascade .*reads closed-book's answer"):
        route.decide(QUESTION)
    assert route.escalation(QUESTION, Answered(QUESTION, "Pele.")).program == "closed-book"  # p = 0.5, not above


def test_the_route_state_round_trips_and_refuses_missing_candidates(tmp_path):
    path = tmp_path / "cascade.json"
    policy = CascadePolicy("closed-book", "vanilla-rag", model(1.0, ("answer_cut", "dense_gap")), threshold=0.6)
    cascade_route(policy).save(str(path))
    assert json.loads(path.read_text())["route_cascade"]["model"]["features"] == ["answer_cut", "dense_gap"]
    again = build_program("route", FakeHybrid(), candidates=["closed-book", "vanilla-rag"])
    again.load(str(path))
    assert again.cascade_.to_dict() == policy.to_dict()
    smaller = build_program("route", FakeHybrid(), candidates=["closed-book", "iterative-rag"])
    with pytest.raises(ConfigurationError, match="runs vanilla-rag, which is not among this program's candidates"):
        smaller.load(str(path))


def test_the_fit_keeps_a_model_only_when_it_beats_never_and_always_escalating():
    from disambig.optimizers.cascade_fit import fit_cascade

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    better = X[:, 0] > 0

    def worth(escalate: np.ndarray) -> float:  # keeping is worth 0.5; escalating 1 where better, else 0
        return float(np.mean(np.where(escalate, better.astype(float), 0.5)))

    fit = fit_cascade(X, better, ["f1", "f2"], worth)
    assert fit.model is not None and fit.constant is None and fit.threshold == 0.5  # the default grid: 0.5 alone
    fit = fit_cascade(X, better, ["f1", "f2"], worth, thresholds=(0.3, 0.5, 0.7))
    assert fit.model is not None and fit.threshold in (0.3, 0.5, 0.7)
    # escalating exactly the better questions is worth (n_better + 0.5 n_other) / 40; the rule comes close
    assert fit.cv[f"C={fit.C:g}, threshold={fit.threshold:g}"] > worth(better) - 0.03
    assert worth(better) - 0.03 > max(fit.cv["never escalate"], fit.cv["always escalate"])
    noise = rng.random(40) < 0.3  # 30% better at random: never escalating (0.5) beats any rule
    fit = fit_cascade(X, noise, ["f1", "f2"], lambda up: float(np.mean(np.where(up, noise.astype(float), 0.5))))
    assert fit.model is None and fit.constant == "keep"
    with pytest.raises(ValueError, match=r"cascade thresholds \[1.0\]"):
        fit_cascade(X, better, ["f1", "f2"], worth, thresholds=(1.0,))


def test_the_cascade_split_labels_and_composes_by_hand():
    from disambig.optimizers.cascade_compile import cascade_split, compose

    examples = [SimpleNamespace(id="q0", question=QUESTION), SimpleNamespace(id="q1", question="When was it?")]
    rows = {i: {"question": ex.question, "prediction": {"long_answer": "Pele."}, "trace": {"lm_calls": 2}}
            for i, ex in zip(("q0", "q1"), examples, strict=True)}
    outcomes = {"closed-book": {"q0": Outcome({"str-em": 1.0}, 2), "q1": Outcome({"str-em": 0.0}, 2)},
                "vanilla-rag": {"q0": Outcome({"str-em": 0.0}, 6), "q1": Outcome({"str-em": 1.0}, 6)}}
    split = cascade_split(examples, rows, outcomes, ("closed-book", "vanilla-rag"), "str-em", 0.0, FakeHybrid())
    assert split.better.tolist() == [False, True] and split.X.shape == (2, len(ANSWER_FEATURES) + len(FEATURES))
    assert [o.lm_calls for o in split.escalated] == [8.0, 8.0]  # escalating costs both runs
    held = compose(CascadePolicy("closed-book", "vanilla-rag", None, constant="escalate"), split, "str-em")
    # always escalating: str-em (0 + 1) / 2, 8 calls each; the oracle escalates q1 only: 1.0 at (2 + 8) / 2 calls
    assert held["route"] == {"score": 0.5, "lm_calls_per_q": 8.0} and held["escalated"] == 2
    assert held["oracle"] == {"score": 1.0, "lm_calls_per_q": 5.0}
    assert held["singles"]["vanilla-rag"] == {"score": 0.5, "lm_calls_per_q": 6.0}
    with pytest.raises(ConfigurationError, match="lacks 1 of 2 questions"):
        cascade_split(examples, {"q0": rows["q0"]}, outcomes, ("closed-book", "vanilla-rag"), "str-em", 0.0,
                      FakeHybrid())
