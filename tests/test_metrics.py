"""Metric values worked out by hand."""

from __future__ import annotations

import math

import dspy
import pytest

from disambig.errors import ConfigurationError
from disambig.metrics import get_metric
from disambig.metrics.disambiguation import best_span_f1, coverage
from disambig.metrics.mrecall import mrecall_at_k
from disambig.metrics.normalize import normalize
from disambig.metrics.qa import answer_set_f1, exact_match, f1_pair, token_f1
from disambig.metrics.ranking import ranking_scores
from disambig.metrics.rouge import rouge_l

GOALS = [
    {"question": "men's?", "answers": ["Cristiano Ronaldo", "Ronaldo"]},
    {"question": "women's?", "answers": ["Christine Sinclair"]},
]


def test_normalize_strips_case_punctuation_articles():
    assert normalize("The  Beatles, a band!") == "beatles band"


def test_exact_match_and_f1():
    assert exact_match("the Beatles", ["Beatles"]) == 1.0
    # "paul simon" vs "simon garfunkel": common 1, P = 1/2, R = 1/2 -> F1 0.5
    assert f1_pair("Paul Simon", "Simon & Garfunkel") == pytest.approx(0.5)
    assert token_f1("Paul Simon", ["Art Garfunkel", "Paul Simon"]) == 1.0
    assert token_f1("anything", []) == 0.0
    assert f1_pair("", "") == 1.0 and f1_pair("", "x") == 0.0


def test_answer_set_f1():
    # predictions {Ronaldo, Messi}: best F1 per prediction 1, 0 -> P = 0.5
    # clusters: men's best 1 (Ronaldo), women's best 0 -> R = 0.5 ; F1 = 0.5
    assert answer_set_f1(["Ronaldo", "Messi"], [g["answers"] for g in GOALS]) == pytest.approx(0.5)
    # duplicates count once: {Ronaldo} -> P = 1, R = 0.5 -> F1 = 2/3
    assert answer_set_f1(["Ronaldo", "ronaldo"], [g["answers"] for g in GOALS]) == pytest.approx(2 / 3)
    assert answer_set_f1([], [g["answers"] for g in GOALS]) == 0.0
    assert answer_set_f1([], []) == 1.0


def test_span_f1_finds_an_answer_inside_a_paragraph():
    assert best_span_f1("The record belongs to Christine Sinclair of Canada.", "Christine Sinclair") == 1.0
    # best window "is christine" vs "christine sinclair": 1 common token, P = R = 1/2 -> 0.5
    assert best_span_f1("It is Christine.", "Christine Sinclair") == pytest.approx(0.5)


def test_coverage_one_of_two_interpretations():
    # long answer names Ronaldo only: 1 of 2 covered -> D-F1 0.5 ; one predicted answer, matches -> P = 1
    cov = coverage(GOALS, [{"answer": "Cristiano Ronaldo"}], "Men: Cristiano Ronaldo.")
    assert (cov.recall, cov.precision) == (0.5, 1.0)
    assert cov.f1 == pytest.approx(2 / 3)
    empty = coverage(GOALS, [], "")
    assert (empty.recall, empty.precision, empty.f1) == (0.0, 0.0, 0.0)


def test_rouge_l_max_over_references():
    # identical to the second reference -> 1.0
    assert rouge_l("Sinclair leads women.", ["Ronaldo leads men.", "Sinclair leads women."]) == 1.0
    assert rouge_l("", ["x"]) == 0.0


def test_mrecall():
    passages = [{"title": "Ronaldo", "text": "Cristiano Ronaldo has scored most goals."}, "Lionel Messi"]
    assert mrecall_at_k(GOALS, passages, k=5) == 0.0  # Sinclair missing
    assert mrecall_at_k(GOALS, passages + ["Christine Sinclair holds the record."], k=5) == 1.0
    assert mrecall_at_k(GOALS, passages, k=1) == 1.0  # more interpretations than k: 1 of them suffices
    with pytest.raises(ValueError, match="k=0"):
        mrecall_at_k(GOALS, passages, k=0)


def test_dspy_metrics_read_common_fields():
    ex = dspy.Example(question="q", interpretations=GOALS, long_answers=["Men: Ronaldo. Women: Sinclair."])
    pred = dspy.Prediction(interpretations=[], long_answer="Men: Ronaldo. Women: Sinclair.", passages=[])
    assert get_metric("d-f1")(ex, pred) == 1.0
    assert get_metric("rouge-l")(ex, pred) == 1.0
    assert get_metric("dr")(ex, pred) == 1.0
    half = dspy.Prediction(interpretations=[], long_answer="Ronaldo.", passages=[])
    # D-F1 0.5; ROUGE-L: reference tokens "men ronaldo women sinclair", LCS "ronaldo": P = 1, R = 1/4 -> F = 0.4
    assert get_metric("dr")(ex, half) == pytest.approx(math.sqrt(0.5 * 0.4))
    assert get_metric("d-f1")(ex, half, trace=object()) is True  # 0.5 passes when optimising


def test_unknown_metric_lists_the_valid_ones():
    with pytest.raises(ConfigurationError, match="d-f1"):
        get_metric("bleu")


def test_ranking_through_ranx():
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    run = {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d4": 0.7, "d3": 0.6}}
    scores = ranking_scores(qrels, run, ["recall@1", "mrr@10"])
    # q1: d1 at rank 1 -> recall@1 = 1, RR = 1 ; q2: d3 at rank 2 -> recall@1 = 0, RR = 1/2
    assert scores == {"recall@1": pytest.approx(0.5), "mrr@10": pytest.approx(0.75)}
