"""The router: named, deterministic features; its JSON policy; labels from stored outcomes; actions with a scripted
LM (answer, clarify, abstain); the state round trip and the errors of a wrong artifact."""

from __future__ import annotations

import json

import dspy
import numpy as np
import pytest
from route_fakes import FakeHybrid

from disambig.errors import ConfigurationError
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.route_labels import Outcome, label_questions, metric_weights
from disambig.programs import build_program
from disambig.programs.route import FEATURES, LinearModel, Observation, RoutePolicy, feature_vector, named, observe
from disambig.programs.route.features import (
    bm25_gap,
    dense_gap,
    distinct_titles,
    list_overlap,
    names_year,
    title_entropy,
)
from disambig.retrieval.passage import Passage

QUESTION = "Who has the most goals in world football?"
READINGS = ["Who has the most goals in men's football?", "Who has the most goals in women's football?"]


def hits(*items: tuple[str, str, float]) -> tuple[Passage, ...]:
    return tuple(Passage(i, t, "text", s, r) for r, (i, t, s) in enumerate(items, 1))


def hand_observation() -> Observation:
    sparse = hits(("a", "A", 10.0), ("b", "B", 8.0), ("c", "A", 6.0), ("d", "C", 5.0), ("e", "D", 4.0))
    dense = hits(("a", "A", 0.9), ("x", "X", 0.8), ("b", "B", 0.7), ("y", "A", 0.6), ("z", "Z", 0.5))
    return Observation("When did it happen in 1998?", np.ones(4, dtype=np.float32), sparse, dense,
                       np.zeros((0, 4), dtype=np.float32))


def test_features_on_hand_computed_lists():
    obs = hand_observation()
    assert dense_gap(obs) == pytest.approx(0.9 - 0.5)
    assert bm25_gap(obs) == pytest.approx((10 - 4) / 10)
    assert list_overlap(obs) == pytest.approx(2 / 5)  # a and b of the dense five are in the sparse list
    # titles of the ten hits: A B A C D A X B A Z -> 6 distinct of 10; counts A4 B2 C1 D1 X1 Z1
    assert distinct_titles(obs) == pytest.approx(6 / 10)
    expected = -(0.4 * np.log(0.4) + 0.2 * np.log(0.2) + 4 * 0.1 * np.log(0.1))
    assert title_entropy(obs) == pytest.approx(expected)
    assert names_year(obs) == 1.0 and named(obs)["asks_time"] == 1.0


def test_features_are_deterministic_and_named():
    retriever = FakeHybrid()
    first, second = observe(QUESTION, retriever), observe(QUESTION, retriever)
    assert list(named(first)) == list(FEATURES)
    assert named(first) == named(second)
    vector = feature_vector(first, ["dense_top1", "emb_3", "asks_person"])
    assert vector[1] == pytest.approx(float(first.embedding[3])) and vector[2] == 1.0
    with pytest.raises(ConfigurationError, match="unknown router feature 'nope'"):
        feature_vector(first, ["nope"])


def test_observe_needs_both_first_stage_lists():
    with pytest.raises(ConfigurationError, match="needs the hybrid retriever"):
        observe(QUESTION, FakeHybrid().sparse)


def test_linear_model_round_trips_as_json_and_refuses_a_wrong_width():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "b", "a")
    model = LinearModel.fit(X, y, ["f1", "f2", "f3"])
    again = LinearModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert np.allclose(again.predict_proba(X), model.predict_proba(X))
    assert (model.predict_proba(X).argmax(axis=1) == (y == "b")).mean() > 0.9
    with pytest.raises(ConfigurationError, match="feature vector has 2 values; this model expects 3"):
        model.predict_proba(np.zeros(2))
    broken = model.to_dict() | {"coef": [[1.0, 2.0]]}
    with pytest.raises(ConfigurationError, match="coef has shape"):
        LinearModel.from_dict(broken)


def test_dr_weights_and_labels_by_hand():
    # two actions, two questions. means over all four answers: d-f1 = (0.4+0+0.2+0.2)/4 = 0.2,
    # rouge-l = (0.2+0.4+0.4+0.2)/4 = 0.3; weights d: 0.3/(2*sqrt(0.06)), r: 0.2/(2*sqrt(0.06))
    rows = {"answer:a": {"q1": Outcome({"d-f1": 0.4, "rouge-l": 0.2}, 2), "q2": Outcome({"d-f1": 0.0,
                                                                                          "rouge-l": 0.4}, 2)},
            "answer:b": {"q1": Outcome({"d-f1": 0.2, "rouge-l": 0.4}, 6), "q2": Outcome({"d-f1": 0.2,
                                                                                          "rouge-l": 0.2}, 6)}}
    weights = metric_weights("dr", [o for r in rows.values() for o in r.values()])
    root = 2 * np.sqrt(0.2 * 0.3)
    assert weights == pytest.approx({"d-f1": 0.3 / root, "rouge-l": 0.2 / root})
    labels, utilities = label_questions(rows, "dr")
    # q1: a = (0.12+0.04)/root, b = (0.06+0.08)/root -> a; q2: a = 0.08/root, b = (0.06+0.04)/root -> b
    assert labels == {"q1": "answer:a", "q2": "answer:b"}
    assert utilities["q2"]["answer:b"] == pytest.approx(0.10 / root)
    # b's edge on q2 is 0.02/root = 0.041: a cost of 0.02 per call (b makes 4 calls more: 0.08) moves q2 to a,
    # a cost of 0.01 (0.04) does not
    assert label_questions(rows, "dr", cost_weight=0.02)[0]["q2"] == "answer:a"
    assert label_questions(rows, "dr", cost_weight=0.01)[0]["q2"] == "answer:b"
    # abstaining wins where every answer is worth less than it
    assert set(label_questions(rows, "dr", cost_weight=1.0, abstain_value=0.0)[0].values()) == {"abstain"}


def test_labels_break_ties_towards_the_cheaper_action():
    rows = {"answer:costly": {"q": Outcome({"ambigqa-f1": 0.0}, 6)}, "answer:cheap": {"q": Outcome({"ambigqa-f1": 0.0},
                                                                                                     1)}}
    assert label_questions(rows, "ambigqa-f1")[0] == {"q": "answer:cheap"}


def rules() -> dict:
    return {
        "Decide why a question may be ambiguous": lambda _: {"reason": "men or women", "types": ["AmbSub"]},
        "Rewrite the ambiguous question": lambda _: {"sub_questions": READINGS},
        "Using only the numbered passages": lambda _: {"disambiguations": [{"question": READINGS[0],
                                                                             "answer": "Ronaldo", "passage": 1}]},
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Ronaldo, Sinclair."},
        "Answer the question": lambda _: {"answer": "Pele."},
    }


def configure():
    from program_fakes import scripted_lm

    lm, engine = scripted_lm(rules())
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return engine


def always(action: str, actions: list[str], features: list[str]) -> LinearModel:
    """A policy that prefers ``action`` whatever the features (intercepts only)."""
    d = len(features)
    rows = len(actions) if len(actions) > 2 else 1
    intercept = np.array([5.0 if a == action else 0.0 for a in actions]) if rows > 1 else \
        np.array([5.0 if actions[1] == action else -5.0])
    return LinearModel(tuple(features), tuple(actions), np.zeros(d), np.ones(d), np.zeros((rows, d)), intercept)


def test_route_answers_with_the_chosen_candidate_and_records_why():
    engine = configure()
    route = build_program("route", FakeHybrid(), candidates=["closed-book", "vanilla-rag"])
    route.policy_ = RoutePolicy("answer:closed-book", None,
                                always("answer:vanilla-rag", ["answer:closed-book", "answer:vanilla-rag"],
                                       ["dense_top1"]))
    pred = route(question=QUESTION)
    assert pred.action == "answer:vanilla-rag" and pred.program == "vanilla-rag"
    assert pred.long_answer == "Ronaldo, Sinclair." and pred.interpretations[0]["answer"] == "Ronaldo"
    notes = pred.trace["notes"]["route"]
    assert notes["probabilities"]["answer:vanilla-rag"] > 0.99 and set(notes["features"]) == set(FEATURES)
    assert pred.trace["lm_calls"] == 2 and pred.trace["retrieval_calls"] == 3  # two feature searches + the answer's
    assert [p.split()[0] for p, _ in engine.calls] == ["Using", "Write"]


def test_route_clarifies_with_the_readings_and_abstains_with_a_reason():
    configure()
    route = build_program("route", FakeHybrid(), candidates=["closed-book"], allow=["clarify", "abstain"])
    actions = ["answer:closed-book", "clarify", "abstain"]
    route.policy_ = RoutePolicy("answer:closed-book", None, always("clarify", actions, ["dense_gap"]))
    pred = route(question=QUESTION)
    assert pred.action == "clarify" and pred.options == READINGS and pred.long_answer == ""
    assert READINGS[1] in pred.clarify_question
    route.policy_ = RoutePolicy("answer:closed-book", None, always("abstain", actions, ["dense_gap"]))
    pred = route(question=QUESTION)
    assert pred.action == "abstain" and pred.abstain_reason and pred.trace["lm_calls"] == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"candidates": ["nope"]}, "unknown route candidate 'nope'"),
    ({"candidates": ["dfa"]}, "unknown route candidate 'dfa'"),
    ({"candidates": []}, "at least one candidate"),
    ({"candidates": ["closed-book", "closed-book"]}, "repeat"),
    ({"candidates": ["closed-book"], "allow": ["guess"]}, "cannot allow 'guess'"),
])
def test_route_refuses_bad_candidates(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        build_program("route", FakeHybrid(), **kwargs)


def test_route_state_round_trips_without_pickle_and_refuses_missing_candidates(tmp_path):
    route = build_program("route", FakeHybrid(), candidates=["closed-book", "vanilla-rag"])
    policy = always("answer:vanilla-rag", ["answer:closed-book", "answer:vanilla-rag"], ["dense_top1", "dense_gap"])
    route.policy_ = RoutePolicy("answer:closed-book", None, policy)
    path = tmp_path / "route.json"
    route.save(str(path))
    state = json.loads(path.read_text())
    assert state["route_policy"]["policy"]["classes"] == ["answer:closed-book", "answer:vanilla-rag"]
    again = build_program("route", FakeHybrid(), candidates=["closed-book", "vanilla-rag"])
    again.load(str(path))
    assert again.policy_.policy.to_dict() == policy.to_dict()
    smaller = build_program("route", FakeHybrid(), candidates=["closed-book"])
    with pytest.raises(ConfigurationError, match="answer:vanilla-rag, which this program cannot"):
        smaller.load(str(path))


def test_the_served_model_returns_a_clarify_rows_question_and_options():
    from disambig.serving.model import _answer

    configure()
    route = build_program("route", FakeHybrid(), candidates=["closed-book"], allow=["clarify"])
    route.policy_ = RoutePolicy("answer:closed-book", None,
                                always("clarify", ["answer:closed-book", "clarify"], ["dense_gap"]))
    row = _answer(route, {"question": QUESTION})
    extra = json.loads(row["extra"])
    assert row["error"] == "" and row["long_answer"] == ""
    assert extra["action"] == "clarify" and extra["options"] == READINGS
    assert extra["clarify_question"].startswith("Which do you mean?")


def test_the_policy_fit_keeps_a_model_only_when_it_beats_every_constant_action():
    from disambig.optimizers.route_fit import fit_policy

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    # signal: b is worth 1 where the first feature is positive, a is worth 1 elsewhere
    utilities = [{"a": float(x[0] <= 0), "b": float(x[0] > 0)} for x in X]
    labels = [max(u, key=u.get) for u in utilities]
    fit = fit_policy(X, labels, utilities, ["f1", "f2"])
    assert fit.model is not None and fit.cv_utility[f"C={fit.C}"] > 0.85 > fit.cv_utility["always b"]
    # no signal: a is always worth 0.5, b is worth 1 at random 40% of the time -> always a (0.5 > 0.4)
    utilities = [{"a": 0.5, "b": float(v < 0.4)} for v in rng.random(40)]
    labels = [max(u, key=u.get) for u in utilities]
    fit = fit_policy(X, labels, utilities, ["f1", "f2"])
    assert fit.model is None and fit.constant == "a"


def test_composed_scores_by_hand():
    from disambig.optimizers.route_eval import chosen_outcome, corpus_score, summary

    a = Outcome({"d-f1": 0.5, "rouge-l": 0.2}, 2)
    b = Outcome({"d-f1": 0.1, "rouge-l": 0.4}, 6)
    # DR over (a, b): sqrt(mean d-f1 0.3 * mean rouge-l 0.3) = 0.3; an abstention scores 0 and costs no call
    assert corpus_score("dr", [a, b]) == pytest.approx(0.3)
    abstained = chosen_outcome("abstain", {"x": {"q": a}}, "q")
    assert summary("dr", [a, abstained]) == {"score": pytest.approx(np.sqrt(0.25 * 0.1), abs=1e-6),
                                              "lm_calls_per_q": 1.0}
    assert chosen_outcome("answer:x", {"x": {"q": a}}, "q") is a
    assert corpus_score("ambigqa-f1", [Outcome({"ambigqa-f1": 1.0}, 1), Outcome({}, 0)]) == 0.5


def test_the_route_against_each_candidate_has_a_paired_interval():
    from disambig.evaluation.paired import paired_metric
    from disambig.optimizers.route_eval import versus

    rng = np.random.default_rng(3)
    x = [Outcome({"ambigqa-f1": float(v)}, 2) for v in rng.uniform(0, 1, 30)]
    y = [Outcome({"ambigqa-f1": float(v)}, 6) for v in rng.uniform(0, 1, 30)]
    routed = [*x[:15], *y[15:]]
    table = versus("ambigqa-f1", routed, {"x": x, "y": y})
    by_q = {str(i): o.scores for i, o in enumerate(routed)}
    expected = paired_metric(by_q, {str(i): o.scores for i, o in enumerate(x)}, "ambigqa-f1")
    assert table["x"]["difference"] == pytest.approx(expected.difference, abs=1e-6)
    assert table["x"]["low"] == pytest.approx(expected.low, abs=1e-6)
    assert table["x"]["low"] < table["x"]["difference"] < table["x"]["high"]
    assert table["x"]["verdict"] == expected.verdict
    same = versus("ambigqa-f1", x, {"x": x})["x"]  # the route that always picks x ties x exactly
    assert (same["difference"], same["low"], same["high"], same["verdict"]) == (0.0, 0.0, 0.0, "tie")
    # abstaining everywhere scores 0 on every question: worse than a candidate that always scores
    nothing = versus("ambigqa-f1", [Outcome({}, 0)] * 30, {"x": x})["x"]
    assert nothing["verdict"] == "worse" and nothing["difference"] == pytest.approx(-np.mean(
        [o.scores["ambigqa-f1"] for o in x]), abs=1e-6)


def test_a_model_level_with_a_constant_action_up_to_rounding_is_not_kept():
    from disambig.optimizers.route_fit import best_option

    # what the AmbigNQ fit on the 1.5B saw: every C chose VanillaRAG everywhere, its mean summed in another order
    level = {"C=0.01": 0.17813492063492065, "always answer:diva": 0.16,
             "always answer:vanilla-rag": 0.17813492063492062}
    assert best_option(level) == "always answer:vanilla-rag"
    assert best_option({**level, "C=0.01": 0.1782}) == "C=0.01"
