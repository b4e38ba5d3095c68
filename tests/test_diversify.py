"""DIVA's numeric steps on a hand-made similarity matrix (eq. 4, eq. 5, grading)."""

from __future__ import annotations

import numpy as np
import pytest

from disambig.programs.diva.diversify import grade, mean_relevance, prune, union_top_k

# Two pseudo-interpretations (rows) against four candidate passages (columns).
SIM = np.array([
    [0.9, 0.1, 0.5, 0.3],
    [0.2, 0.8, 0.6, 0.1],
])


def test_union_takes_each_rows_top_k_rank_by_rank():
    # row 0 top-2: 0, 2; row 1 top-2: 1, 2 -> rank-1 picks 0, 1; rank-2 picks 2 (once).
    assert union_top_k(SIM, 2) == [0, 1, 2]
    assert union_top_k(SIM, 1) == [0, 1]


def test_mean_relevance_averages_over_interpretations():
    # columns: (0.9+0.2)/2, (0.1+0.8)/2, (0.5+0.6)/2, (0.3+0.1)/2
    assert mean_relevance(SIM) == pytest.approx([0.55, 0.45, 0.55, 0.2])


def test_prune_keeps_highest_mean_and_breaks_ties_by_pool_order():
    # pool [0, 1, 2] scores 0.55, 0.45, 0.55 -> 0 and 2 tie; 0 comes first in the pool.
    assert prune(SIM, [0, 1, 2], 2) == [0, 2]
    assert prune(SIM, [2, 1, 0], 2) == [2, 0]
    assert prune(SIM, [1, 3], 5) == [1, 3]


def test_passage_relevant_to_one_reading_only_is_pruned_before_one_relevant_to_all():
    sim = np.array([[0.95, 0.6], [0.05, 0.6]])  # passage 0 fits reading 0 only; passage 1 fits both
    assert prune(sim, union_top_k(sim, 1), 1) == [1]


@pytest.mark.parametrize(("verdicts", "expected"), [
    ([True, True, True], "Useful"),
    ([True, False, True], "PartialUseful"),
    ([False, False], "Useless"),
    ([], "Useless"),
])
def test_grade(verdicts, expected):
    assert grade(verdicts) == expected


@pytest.mark.parametrize("k", [0, -1])
def test_k_must_be_positive(k):
    with pytest.raises(ValueError, match="at least 1"):
        union_top_k(SIM, k)
    with pytest.raises(ValueError, match="at least 1"):
        prune(SIM, [0], k)


@pytest.mark.parametrize(
    ("probabilities", "useful", "partial", "expected"),
    [
        ([0.9, 0.7], 0.6, 0.3, "Useful"),  # min 0.7 >= 0.6
        ([0.9, 0.5], 0.6, 0.3, "PartialUseful"),  # min 0.5 < 0.6, max 0.9 >= 0.3
        ([0.25, 0.1], 0.6, 0.3, "Useless"),  # max 0.25 < 0.3
        ([0.25, 0.1], 0.6, 0.2, "PartialUseful"),  # a lower partial threshold lets 0.25 through
        ([0.04], 0.05, 0.01, "PartialUseful"),  # one reading: below useful, above partial
        ([0.3, 0.45], 0.5, 0.5, "Useless"),  # the paper's rule: no reading reaches 0.5
    ],
)
def test_grade_from_probabilities_and_thresholds(probabilities, useful, partial, expected):
    assert grade(probabilities, useful=useful, partial=partial) == expected
