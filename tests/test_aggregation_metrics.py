"""DFA aggregation metrics (ACE, NACE, chunk-level recall) on hand-worked counts."""

from __future__ import annotations

import pytest

from disambig.metrics.aggregation import EPSILON, ace, aggregation_report, chunk_recall, nace


def test_ace_is_the_absolute_count_error():
    assert ace(7, 5) == 2.0  # |7 - 5|
    assert ace(3, 5) == 2.0  # |3 - 5|
    assert ace(5, 5) == 0.0


def test_counts_may_be_entity_sets_with_duplicates_counted_once():
    # predicted {BM25, DPR, ColBERT} (BM25 twice) = 3 entities, gold 5 -> ACE 2, NACE 2/5
    predicted = ["BM25", "DPR", "BM25", "ColBERT"]
    assert ace(predicted, 5) == 2.0
    assert nace(predicted, {"BM25", "DPR", "ColBERT", "SPLADE", "Contriever"}) == pytest.approx(0.4)


def test_nace_normalises_by_the_gold_count():
    assert nace(7, 5) == pytest.approx(2 / 5)
    assert nace(0, 4) == pytest.approx(1.0)  # predicting nothing: error equals the truth (LLM-only median 1.0)
    assert nace(12, 4) == pytest.approx(2.0)  # |12 - 4| / 4 = 2, above 1 when the error exceeds the truth


def test_nace_with_an_empty_gold_set():
    assert nace(0, 0) == 0.0  # right: 0 / eps
    assert nace(1, 0) == pytest.approx(1 / EPSILON)  # any wrong count explodes, as the formula says
    assert nace(1, 0, eps=0.5) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ace(-1, 3), "predicted=-1"),
        (lambda: nace(2, -3), "gold=-3"),
        (lambda: nace(2, 3, eps=0), "eps=0"),
        (lambda: chunk_recall(["c1"], []), "gold evidence is empty"),
    ],
)
def test_bad_inputs_are_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_chunk_recall_is_the_share_of_gold_chunks_kept():
    # gold {c1, c2, c3, c4}, kept {c2, c4, c9}: 2 of 4
    assert chunk_recall(["c2", "c4", "c9"], ["c1", "c2", "c3", "c4"]) == 0.5
    assert chunk_recall([], ["c1"]) == 0.0
    assert chunk_recall(["c1", "c1"], ["c1", "c1"]) == 1.0  # duplicates count once on both sides


def test_report_has_the_paper_table_columns():
    # query 1: predicted 6, gold 4 -> ACE 2, NACE 0.5, recall 1/2 (c1 of c1, c2)
    # query 2: predicted 3, gold 3 -> ACE 0, NACE 0,   recall 1   (c3)
    # query 3: predicted 0, gold 2 -> ACE 2, NACE 1,   recall 0   (c4, c5 lost)
    report = aggregation_report([6, 3, 0], [4, 3, 2], [["c1"], ["c3"], []], [["c1", "c2"], ["c3"], ["c4", "c5"]])
    assert report.nace_mean == pytest.approx(0.5)  # (0.5 + 0 + 1) / 3
    assert report.nace_median == pytest.approx(0.5)
    assert report.ace_mean == pytest.approx(4 / 3)  # (2 + 0 + 2) / 3
    assert report.recall == pytest.approx(0.5)  # (0.5 + 1 + 0) / 3


def test_report_needs_aligned_non_empty_lists():
    with pytest.raises(ValueError, match="one non-empty entry per query"):
        aggregation_report([1, 2], [1], [[], []], [["c"], ["c"]])
    with pytest.raises(ValueError, match="one non-empty entry per query"):
        aggregation_report([], [], [], [])
