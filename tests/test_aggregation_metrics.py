"""DFA aggregation metrics (ACE, NACE, chunk-level recall) on hand-worked counts."""

from __future__ import annotations

import numpy as np
import pytest

from disambig.metrics.aggregation import ace, aggregation_report, chunk_recall, nace


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


def test_nace_with_an_empty_gold_set_divides_by_one():
    assert nace(0, 0) == 0.0  # right
    assert nace(1, 0) == 1.0  # |1 - 0| / 1, not 1 / eps (which would be 1e9)
    assert nace(["a", "b", "c"], []) == 3.0  # three entities predicted for an empty gold set
    assert nace(1, 0, eps=0.5) == 1.0  # eps only shifts non-zero gold counts
    assert nace(3, 2, eps=0.5) == pytest.approx(0.4)  # |3 - 2| / 2.5


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("11", 11, 0.0),  # a numeric string is a number, not 2 characters
        (" 3.0 ", 5, 2.0),
        (b"7", 5, 2.0),
        (3.0, 5, 2.0),
        (2.5, 5, 2.5),  # a float count is taken as it is
        (np.int64(3), np.int32(5), 2.0),
        (np.float64(6), 5, 1.0),
        ({"x", "y"}, (1, 2, 3), 1.0),  # collections: distinct members
    ],
)
def test_counts_accept_numbers_numeric_strings_and_collections(predicted, gold, expected):
    assert ace(predicted, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ace(-1, 3), "predicted=-1"),
        (lambda: nace(2, -3), "gold=-3"),
        (lambda: ace("eleven", 11), "predicted='eleven' is not a numeric string"),
        (lambda: ace("", 11), "predicted='' is not a numeric string"),
        (lambda: ace(True, 1), "predicted=True is not a count"),
        (lambda: ace(None, 1), "predicted=None is not a count"),
        (lambda: ace(3, {"a": 1}), r"gold=\{'a': 1\} \(dict\) is not a count"),
        (lambda: ace(float("nan"), 1), "predicted=nan is not a count"),
        (lambda: ace(3, float("inf")), "gold=inf is not a count"),
        (lambda: ace("-2", 1), "predicted=-2.0 is not a count"),
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


def test_report_leaves_queries_without_gold_chunks_out_of_recall():
    # query 2 has gold count 0 and no gold chunks: NACE = |1 - 0| / 1 = 1; recall over query 1 only (1/2)
    report = aggregation_report([4, 1], [4, 0], [["c1"], []], [["c1", "c2"], []])
    assert (report.nace_mean, report.recall, report.recall_queries) == (0.5, 0.5, 1)


def test_report_needs_aligned_non_empty_lists():
    with pytest.raises(ValueError, match="one non-empty entry per query"):
        aggregation_report([1, 2], [1], [[], []], [["c"], ["c"]])
    with pytest.raises(ValueError, match="one non-empty entry per query"):
        aggregation_report([], [], [], [])


def test_stored_count_answers_are_scored_on_their_count_and_retained_chunks():
    """``disambig score`` (and bench re-scoring) read a count program's stored answer as it was produced."""
    from types import SimpleNamespace

    from disambig.evaluation.scoring import to_prediction
    from disambig.metrics.count import chunk_recall_metric, predicted_count

    example = SimpleNamespace(gold_count=4, gold_chunk_ids=["db/t/1", "db/t/2"])
    row = {"long_answer": "3: a, b, c", "count": 2, "retained_chunk_ids": ["db/t/1", "db/t/9"], "passages": []}
    pred = to_prediction(row)
    assert predicted_count(pred) == 2.0  # the count field, not the long answer's leading 3
    assert chunk_recall_metric(example, pred) == 0.5
    plain = to_prediction({"long_answer": "3: a, b, c", "passages": [{"id": "db/t/2", "text": "..."}]})
    assert predicted_count(plain) == 3.0 and chunk_recall_metric(example, plain) == 0.5
