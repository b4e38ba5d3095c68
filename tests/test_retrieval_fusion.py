"""Reciprocal Rank Fusion and the hybrid retriever, on hand-made ranked lists (no index, no model)."""

from __future__ import annotations

import pytest

from disambig.retrieval import Passage, rrf
from disambig.retrieval.hybrid import HybridRetriever


def ranked(*ids: str) -> list[Passage]:
    return [Passage(pid, f"title {pid}", f"text {pid}", 10.0 - rank, rank) for rank, pid in enumerate(ids, 1)]


# Lists A = [a, b, c] and B = [c, a, d], k = 60, score(d) = sum_i w_i / (60 + rank_i(d)):
#   a: 1/61 + 1/62 = 0.0163934 + 0.0161290 = 0.0325224
#   c: 1/63 + 1/61 = 0.0158730 + 0.0163934 = 0.0322664
#   b: 1/62        = 0.0161290
#   d: 1/63        = 0.0158730
A, B = ranked("a", "b", "c"), ranked("c", "a", "d")


def test_rrf_scores_and_order_match_the_hand_computation():
    fused = rrf([A, B])
    assert [p.id for p in fused] == ["a", "c", "b", "d"]
    assert [p.rank for p in fused] == [1, 2, 3, 4]
    assert [p.score for p in fused] == pytest.approx([0.0325224, 0.0322664, 0.0161290, 0.0158730], abs=1e-7)


def test_rrf_weights_can_reorder():
    # weights (1, 3): c = 1/63 + 3/61 = 0.0650533 > a = 1/61 + 3/62 = 0.0647805 > d = 3/63 = 0.0476190 > b = 1/62
    fused = rrf([A, B], weights=[1.0, 3.0])
    assert [p.id for p in fused] == ["c", "a", "d", "b"]
    assert fused[0].score == pytest.approx(1 / 63 + 3 / 61)


def test_rrf_smaller_k_sharpens_and_top_truncates():
    # k = 1: a = 1/2 + 1/3 = 0.8333, c = 1/4 + 1/2 = 0.75
    fused = rrf([A, B], k=1, top=2)
    assert [(p.id, round(p.score, 4)) for p in fused] == [("a", 0.8333), ("c", 0.75)]


def test_rrf_keys_on_id_never_title_and_ties_keep_first_seen_order():
    same_title = [Passage("x", "Paris", "the city"), Passage("y", "Paris", "the film")]
    fused = rrf([same_title[:1], same_title[1:]])  # both 1/61: a tie, x was seen first
    assert [p.id for p in fused] == ["x", "y"]
    assert fused[0].score == fused[1].score == pytest.approx(1 / 61)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "RRF k=0 must be a positive"),
        ({"weights": [1.0]}, "1 weights for 2 ranked lists"),
        ({"weights": [1.0, -1.0]}, "must be non-negative"),
        ({"weights": [0.0, 0.0]}, "not all zero"),
        ({"top": 0}, "top=0 must be positive"),
    ],
)
def test_rrf_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rrf([A, B], **kwargs)


class ListRetriever:
    """Returns fixed lists, whatever the query."""

    def __init__(self, name: str, hits: list[Passage], size: int = 4) -> None:
        self.name, self.hits, self.size = name, hits, size
        self.depths: list[int] = []

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        self.depths.append(k)
        return [self.hits[:k] for _ in queries]


def test_hybrid_fuses_sparse_and_dense_lists():
    sparse, dense = ListRetriever("bm25", A), ListRetriever("dense", B)
    hybrid = HybridRetriever(sparse, dense)
    hits = hybrid.search("anything", k=2)
    assert [p.id for p in hits] == ["a", "c"]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert sparse.depths == dense.depths == [4]  # depth 100 capped at the corpus size


def test_hybrid_weights_favour_the_dense_list():
    hits = HybridRetriever(ListRetriever("bm25", A), ListRetriever("dense", B), weights=(1.0, 3.0)).search("q", k=1)
    assert hits[0].id == "c"


@pytest.mark.parametrize(
    ("query", "k", "error", "match"),
    [
        ("", 3, ValueError, "query must be a non-empty string"),
        ("   ", 3, ValueError, "query must be a non-empty string"),
        ("q", 0, ValueError, "k=0 must be a positive integer"),
        ("q", -2, ValueError, "k=-2 must be a positive integer"),
        ("q", 5, ValueError, "k=5 exceeds corpus size 4"),
    ],
)
def test_hybrid_rejects_bad_queries_and_k(query, k, error, match):
    hybrid = HybridRetriever(ListRetriever("bm25", A), ListRetriever("dense", B))
    with pytest.raises(error, match=match):
        hybrid.search(query, k)


def test_batch_search_refuses_a_bare_string():
    hybrid = HybridRetriever(ListRetriever("bm25", A), ListRetriever("dense", B))
    with pytest.raises(TypeError, match="queries must be a list of strings"):
        hybrid.batch_search("zebra", 2)
