"""VerDICt's HDBSCAN consolidation on the cases of the spec (verdict.md, section 1.3 S5), with sklearn's HDBSCAN."""

from __future__ import annotations

import numpy as np
import pytest

from disambig.programs.verdict.consolidate import consolidate, cosine_distances, medoid

DIM = 64


def blobs(*sizes: int, noise: int = 0, spread: float = 0.05, seed: int = 0) -> np.ndarray:
    """Blobs of near-identical unit vectors around random centres, then ``noise`` random vectors (64-d)."""
    rng = np.random.default_rng(seed)
    rows = []
    for size in sizes:
        centre = rng.normal(size=DIM)
        rows.append(centre / np.linalg.norm(centre) + spread * rng.normal(size=(size, DIM)))
    rows.append(rng.normal(size=(noise, DIM)))
    x = np.vstack(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_blobs_give_one_medoid_each_and_drop_singletons_and_noise():
    # 4 blobs of 6/5/4/1 points (rows 0-5, 6-10, 11-14, 15) + 3 random rows (16-18): the singleton and the
    # random rows are noise, so 3 medoids, one from each real blob
    found = consolidate(blobs(6, 5, 4, 1, noise=3))
    assert found.members == (tuple(range(0, 6)), tuple(range(6, 11)), tuple(range(11, 15)))
    assert [m in g for m, g in zip(found.medoids, found.members, strict=True)] == [True] * 3
    assert found.labels[15:] == (-1,) * 4


def test_two_blobs_give_two_medoids():
    found = consolidate(blobs(4, 4, seed=1))
    assert found.members == ((0, 1, 2, 3), (4, 5, 6, 7))


def tight_blob(n: int = 8, spread: float = 0.1) -> np.ndarray:
    """``n`` points at the same small distance from one centre and from each other (no sub-structure)."""
    x = np.zeros((n, DIM))
    x[:, 0] = 1.0
    x[np.arange(n), np.arange(1, n + 1)] = spread
    return x


def test_one_tight_blob_is_all_noise_and_kept_whole():
    # without allow_single_cluster HDBSCAN calls a lone blob noise; the released rule then keeps every point
    found = consolidate(tight_blob())
    assert found.labels == (-1,) * 8
    assert found.medoids == tuple(range(8)) and found.members == tuple((i,) for i in range(8))


def test_allow_single_cluster_merges_the_tight_blob():
    # one cluster of 8; every point is equally central, so the tie goes to row 0
    found = consolidate(tight_blob(), allow_single_cluster=True)
    assert found.medoids == (0,) and found.members == (tuple(range(8)),)


def test_a_random_blob_splits_into_near_duplicates():
    # a blob with random spread (one reading in 8 passages, worded differently) has density sub-structure:
    # HDBSCAN cuts it into several small clusters, so one reading yields more than one medoid
    found = consolidate(blobs(8, seed=1))
    assert len(found.medoids) == 2 and found.labels == (0, 0, 1, 0, 0, 0, 0, 1)


def test_blob_with_an_outlier_splits_and_drops_the_outlier():
    # the spec's case: one blob of 8 + 1 outlier -> the blob splits into small clusters, the outlier is noise
    found = consolidate(blobs(8, noise=1))
    assert len(found.medoids) == 2 and found.labels[8] == -1
    assert all(i < 8 for group in found.members for i in group)


@pytest.mark.parametrize("x", [blobs(2), blobs(noise=2), blobs(noise=3)], ids=["2-close", "2-far", "3-far"])
def test_few_points_are_all_noise_and_all_kept(x):
    found = consolidate(x)
    assert found.medoids == tuple(range(len(x))) and set(found.labels) == {-1}


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_points_are_kept_without_clustering(n):
    found = consolidate(np.eye(n, DIM))
    assert found.medoids == tuple(range(n)) and found.labels == ()


def test_medoid_maximises_summed_cosine():
    # unit vectors at 0, 10 and 20 degrees: the middle one is closest to both others
    angles = np.radians([0.0, 10.0, 20.0])
    x = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    assert medoid(x, (0, 1, 2)) == 1


def test_medoid_tie_goes_to_the_best_rank():
    # rows 1 and 3 are the same vector and tie; the lower index (the better-ranked passage) wins
    x = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.6, 0.8]])
    assert medoid(x, (1, 2, 3)) == 1
    assert medoid(x, (0, 2)) == 0  # a two-point cluster always ties


def test_identical_points_cluster_at_zero_distance():
    x = np.repeat(np.eye(3, DIM), 3, axis=0)  # three readings, each said by three passages
    found = consolidate(x)
    assert found.medoids == (0, 3, 6) and found.members == ((0, 1, 2), (3, 4, 5), (6, 7, 8))


def test_rows_are_normalised_and_the_input_left_alone():
    x = blobs(4, 4, seed=1) * 3.0
    before = x.copy()
    assert consolidate(x).members == ((0, 1, 2, 3), (4, 5, 6, 7))
    np.testing.assert_array_equal(x, before)


def test_cosine_distances_are_clipped_at_zero():
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(cosine_distances(x), [[0, 0, 1], [0, 0, 1], [1, 1, 0]])
    assert (cosine_distances(blobs(5)) >= 0).all()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_cluster_size": 1}, "min_cluster_size=1 must be an integer of at least 2"),
    ({"min_samples": 0}, "min_samples=0 must be"),
    ({"cluster_selection_method": "kmeans"}, "must be 'eom' or 'leaf'"),
    ({"cluster_selection_epsilon": -0.1}, "cluster_selection_epsilon=-0.1"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        consolidate(blobs(4, 4), **kwargs)


def test_a_flat_vector_is_refused():
    with pytest.raises(ValueError, match=r"2-D array .* got shape \(3,\)"):
        consolidate(np.ones(3))
