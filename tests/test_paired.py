"""``disambig.evaluation.paired``: paired-bootstrap differences to a reference, on hand-worked score arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest

from disambig.evaluation.paired import (
    PairedDifference,
    corpus_statistic,
    format_difference,
    mean_statistic,
    paired_difference,
    paired_scores,
    statistic_for,
)
from disambig.evaluation.report import metric_means


def test_identical_programs_differ_by_zero_and_tie():
    scores = [0.2, 0.0, 1.0, 0.5]
    result = paired_difference(scores, scores)
    assert result == PairedDifference(0.0, 0.0, 0.0, 4, "tie")
    assert format_difference(result) == "+0.000 [+0.000, +0.000] tie"


def test_a_program_better_by_a_constant_has_a_zero_width_interval():
    # every paired difference is +0.25, so every resample's difference of means is +0.25
    result = paired_difference([0.25, 0.5, 0.75, 1.0], [0.0, 0.25, 0.5, 0.75])
    assert result.difference == pytest.approx(0.25) and result.low == result.high == result.difference
    assert result.verdict == "better" and result.n == 4


def test_one_question_is_a_zero_width_interval():
    # scipy's bootstrap refuses a single observation; one question can only be resampled as itself
    result = paired_difference([0.3], [0.5])
    assert result.difference == pytest.approx(-0.2) and result.low == result.high and result.verdict == "worse"


def test_a_mixed_program_ties_when_the_interval_spans_zero():
    # differences +1, +1, +1, -1, -1, 0, 0, 0: mean +0.125, but a resample of mostly -1 and 0 goes below 0
    program = [1, 1, 1, 0, 0, 1, 0, 0.5]
    reference = [0, 0, 0, 1, 1, 1, 0, 0.5]
    result = paired_difference(program, reference)
    assert result.difference == pytest.approx(0.125) and result.low < 0 < result.high
    assert result.verdict == "tie"


def test_an_interval_that_touches_zero_is_a_tie():
    # differences 0, 0, 0, +1: a resample without the last question (P = (3/4)^4 = 0.32) gives 0, so low = 0
    result = paired_difference([0.5, 0.5, 0.5, 1.0], [0.5, 0.5, 0.5, 0.0])
    assert result.difference == pytest.approx(0.25) and result.low == 0.0 and result.high > 0
    assert result.verdict == "tie"


def test_worse_on_every_question_by_varying_amounts():
    # differences -0.1, -0.2, -0.3: every resample's mean lies in [-0.3, -0.1]
    result = paired_difference([0.4, 0.3, 0.2], [0.5, 0.5, 0.5])
    assert result.difference == pytest.approx(-0.2) and -0.3 - 1e-9 <= result.low < result.high <= -0.1 + 1e-9
    assert result.verdict == "worse"


def test_lower_is_better_turns_the_verdict_not_the_sign():
    # NACE: the program errs less by 0.1 on every question, so its difference is -0.1 and it is better
    nace = paired_difference([0.4, 0.3, 0.2], [0.5, 0.4, 0.3], higher_is_better=False)
    assert nace.difference == pytest.approx(-0.1) and nace.verdict == "better"
    assert paired_difference([0.5, 0.4, 0.3], [0.4, 0.3, 0.2], higher_is_better=False).verdict == "worse"


def test_corpus_dr_is_bootstrapped_as_the_corpus_value():
    # program: mean D-F1 (0.2 + 0.4 + 0.6) / 3 = 0.4, mean ROUGE-L (0.8 + 0.9 + 1.0) / 3 = 0.9,
    #   DR = sqrt(0.4 * 0.9) = 0.6 (the mean of per-question sqrt(d * r) would be (0.4 + 0.6 + 0.775) / 3 = 0.592)
    # reference: D-F1 0.1 and ROUGE-L 0.4 on every question, DR = sqrt(0.04) = 0.2; difference 0.6 - 0.2 = 0.4
    # a resample's program DR lies between sqrt(0.2 * 0.8) = 0.4 and sqrt(0.6 * 1.0) = 0.775, the reference's is 0.2
    program = [[0.2, 0.4, 0.6], [0.8, 0.9, 1.0]]
    reference = [[0.1, 0.1, 0.1], [0.4, 0.4, 0.4]]
    result = paired_difference(program, reference, corpus_statistic("dr"))
    assert result.difference == pytest.approx(0.4)
    assert 0.2 - 1e-9 <= result.low < 0.4 < result.high <= math.sqrt(0.6) - 0.2 + 1e-9
    assert result.verdict == "better"


def test_corpus_statistics_agree_with_the_report():
    rows = [{"d-f1": 0.2, "rouge-l": 0.8, "g-precision": 1.0, "g-recall": 0.0},
            {"d-f1": 0.0, "rouge-l": 0.3, "g-precision": 0.5, "g-recall": 0.5},
            {"d-f1": 0.7, "rouge-l": 0.6, "g-precision": 0.0, "g-recall": 0.25}]
    report = metric_means(rows, ["d-f1", "rouge-l", "dr", "g-precision", "g-recall", "g-f1"])
    for name in ("dr", "g-f1"):
        inputs, statistic = statistic_for(name, rows[0])
        arrays = [np.array([r[i] for r in rows]) for i in inputs]
        assert float(statistic(*arrays)) == pytest.approx(report[name])


def test_statistic_for_picks_the_inputs_the_report_would():
    assert statistic_for("ambigqa-f1", ["ambigqa-f1", "d-f1"]) == (("ambigqa-f1",), mean_statistic)
    assert statistic_for("dr", ["d-f1", "rouge-l", "dr"])[0] == ("d-f1", "rouge-l")
    assert statistic_for("dr", ["disambig-f1", "d-f1", "rouge-l"])[0] == ("disambig-f1", "rouge-l")


@pytest.mark.parametrize(("metric", "available", "match"), [
    ("dr", ["d-f1", "dr"], "computed from disambig-f1/d-f1 and rouge-l"),
    ("ambigqa-f1", ["d-f1"], "no per-question 'ambigqa-f1'"),
])
def test_statistic_for_names_what_is_missing(metric, available, match):
    with pytest.raises(ValueError, match=match):
        statistic_for(metric, available)


def test_corpus_statistic_names_the_corpus_metrics():
    with pytest.raises(ValueError, match="'rouge-l' is not a corpus metric; choose one of dr, g-f1"):
        corpus_statistic("rouge-l")


@pytest.mark.parametrize(("program", "reference"), [
    ([0.1, 0.2, 0.3], [0.1, 0.2]),
    ([[0.1, 0.2], [0.3, 0.4]], [0.1, 0.2]),
])
def test_misaligned_scores_are_refused(program, reference):
    with pytest.raises(ValueError, match="give both the same inputs over the same questions, aligned by question id"):
        paired_difference(program, reference)


def test_empty_scores_are_refused():
    with pytest.raises(ValueError, match="no questions to compare"):
        paired_difference([], [])


def test_paired_scores_keep_the_shared_questions_in_one_order():
    program = {"q2": {"f1": 0.5}, "q1": {"f1": 1.0, "em": 1.0}, "q9": {"f1": 0.0}}
    reference = {"q1": {"f1": 0.0, "em": 0.0}, "q2": {"f1": 0.25}, "q3": {"f1": 1.0}}
    ours, theirs = paired_scores(program, reference, ["f1", "em"])
    assert ours.tolist() == [[1.0, 0.5], [1.0, 0.0]]  # q1, q2; q2 has no "em", which counts 0 as in the report
    assert theirs.tolist() == [[0.0, 0.25], [0.0, 0.0]]
    with pytest.raises(ValueError, match="share no question id"):
        paired_scores({"q1": {}}, {"q2": {}}, ["f1"])


def test_the_same_inputs_give_the_same_interval():
    rng = np.random.default_rng(7)
    program, reference = rng.random(40), rng.random(40)
    assert paired_difference(program, reference) == paired_difference(program, reference)
    assert paired_difference(program, reference, seed=1) != paired_difference(program, reference)


def test_format_difference_signs_every_number_and_scales():
    result = PairedDifference(0.0123, -0.0201, 0.0449, 30, "tie")
    assert format_difference(result) == "+0.012 [-0.020, +0.045] tie"
    assert format_difference(result, digits=2, scale=100) == "+1.23 [-2.01, +4.49] tie"
    assert format_difference(PairedDifference(-0.0001, -0.0002, 0.0, 3, "tie")) == "+0.000 [+0.000, +0.000] tie"
