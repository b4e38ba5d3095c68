"""ADF's numeric steps on hand-computed values: eq. 1-3 (coherence, state), eq. 4 (adaptive k), K-means,
eq. 5 (relevance filter), eq. 6 (RRF on passage ids) and the released code's max-score merge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from disambig.programs.adf.geometry import (
    Coherence,
    adaptive_k,
    classify,
    cluster_relevance,
    coherence,
    fuse,
    kmeans,
    max_score_merge,
    relevant_clusters,
)
from disambig.retrieval.passage import Passage


def test_two_tight_groups_of_unit_vectors():
    # centroid (0.5, 0.5); every distance sqrt(0.5) = 0.7071, so variance 0.5 = 1 - |mu|^2 and mean distance 0.7071;
    # 2-means splits the groups: a_i = 0, b_i = sqrt(2), s_i = 1 for every point.
    stats = coherence(np.array([[1, 0], [1, 0], [0, 1], [0, 1]]))
    assert stats.variance == pytest.approx(0.5)
    assert stats.mean_distance == pytest.approx(math.sqrt(0.5))
    assert stats.separation == pytest.approx(1.0)
    assert stats.size == 4


def test_silhouette_with_a_singleton_cluster():
    # points 0, 1, 10: centroid 11/3; distances 11/3, 8/3, 19/3 -> variance (121 + 64 + 361) / 27 = 20.222,
    # mean distance 38/9 = 4.222. 2-means: {0, 1} and {10}: s(0) = (10 - 1) / 10 = 0.9, s(1) = (9 - 1) / 9,
    # s(10) = 0 (a singleton); separation = (0.9 + 0.8889 + 0) / 3 = 0.5963.
    stats = coherence(np.array([[0.0], [1.0], [10.0]]))
    assert stats.variance == pytest.approx(546 / 27)
    assert stats.mean_distance == pytest.approx(38 / 9)
    assert stats.separation == pytest.approx((0.9 + 8 / 9) / 3)


@pytest.mark.parametrize("points", [np.zeros((0, 3)), np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [1.0, 0.0]])])
def test_too_few_or_identical_passages_are_coherent(points):
    stats = coherence(points)
    assert stats.separation == 0.0 and stats.variance == pytest.approx(0.0)


def test_identical_passages_have_no_separation():
    assert coherence(np.tile([0.6, 0.8], (10, 1))).separation == 0.0


@pytest.mark.parametrize(("variance", "separation", "strict", "expected"), [
    (0.5, 0.30, False, "Ambiguous"),    # separated
    (0.5, 0.10, False, "Ambiguous"),    # separation == tau_sep counts under >=
    (0.5, 0.10, True, "Uncertain"),     # ... but not under the released code's >
    (0.5, 0.05, False, "Uncertain"),    # dispersed, not separated
    (0.2, 0.05, False, "Unambiguous"),  # neither
])
def test_state_rule(variance, separation, strict, expected):
    stats = Coherence(variance=variance, mean_distance=0.9, separation=separation, size=10)
    assert classify(stats, tau_var=0.25, tau_sep=0.1, strict=strict) == expected


def test_state_rule_reads_the_chosen_dispersion():
    stats = Coherence(variance=0.5, mean_distance=0.7, separation=0.0, size=10)
    assert classify(stats, 0.25, 0.1, dispersion="variance") == "Uncertain"
    assert classify(stats, 0.8, 0.1, dispersion="mean_distance") == "Unambiguous"
    with pytest.raises(ValueError, match="choose one of variance, mean_distance"):
        classify(stats, 0.25, 0.1, dispersion="spread")


@pytest.mark.parametrize(("n", "k"), [(10, 4), (9, 4), (7, 3), (5, 2), (3, 2), (2, 2), (1, 1)])
def test_adaptive_k(n, k):
    assert adaptive_k(n) == k  # min(max(2, n // 2), 4), never above n


@pytest.mark.parametrize(("n", "k_min", "k_max", "match"), [
    (0, 2, 4, "at least one passage"), (10, 3, 2, "k_min <= k_max"), (10, 0, 4, "k_min <= k_max"),
])
def test_adaptive_k_rejects(n, k_min, k_max, match):
    with pytest.raises(ValueError, match=match):
        adaptive_k(n, k_min, k_max)


def test_kmeans_is_seeded_and_checks_k():
    points = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    labels, centroids = kmeans(points, 2)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    assert sorted(centroids[:, 0].round(2).tolist()) == [0.05, 5.05]
    assert (kmeans(points, 2)[0] == labels).all()
    with pytest.raises(ValueError, match="k=5 clusters for 4 passages"):
        kmeans(points, 5)


def test_relevance_filter():
    # cosines with the question (1, 0): 1, 0, 0.6 (and 0 for a zero centroid); tau_rel = 0.2 keeps 0 and 2
    centroids = np.array([[2.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.0, 0.0]])
    assert cluster_relevance(np.array([1.0, 0.0]), centroids) == pytest.approx([1.0, 0.0, 0.6, 0.0])
    assert relevant_clusters(np.array([1.0, 0.0]), centroids, tau_rel=0.2) == [0, 2]


def p(pid: str, score: float = 0.0) -> Passage:
    return Passage(pid, pid.upper(), f"text {pid}", score)


def test_rrf_fuses_by_passage_id():
    # eta 60: b = 1/62 + 1/61, a = 1/61, c = 1/62 -> b, a, c
    fused = fuse([[p("a"), p("b")], [p("b"), p("c")]], eta=60)
    assert [x.id for x in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61) and [x.rank for x in fused] == [1, 2, 3]
    assert [x.id for x in fuse([[p("a"), p("b")], [p("b"), p("c")]], top=2)] == ["b", "a"]


def test_max_score_merge_keeps_each_id_once_with_its_best_score():
    merged = max_score_merge([[p("a", 3.0), p("b", 1.0)], [p("b", 9.0), p("c", 2.0)]], top=2)
    assert [(x.id, x.score, x.rank) for x in merged] == [("b", 9.0, 1), ("a", 3.0, 2)]
