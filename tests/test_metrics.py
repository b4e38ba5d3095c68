"""Metric values worked out by hand."""

from __future__ import annotations

import math

import dspy
import pytest

from disambig.data.text import normalize
from disambig.errors import ConfigurationError
from disambig.metrics import get_metric
from disambig.metrics.disambiguation import best_span_f1, coverage
from disambig.metrics.mrecall import mrecall_at_k
from disambig.metrics.qa import answer_set_f1, exact_match, f1_pair, token_f1
from disambig.metrics.ranking import query_scores, ranking_scores
from disambig.metrics.rouge import rouge_l

# Interpretation questions name their distinguishing word ("men", "women"), which the D-F1 proxy looks for
# near an answer (the ambiguous question "q" has none of them).
GOALS = [
    {"question": "Men?", "answers": ["Cristiano Ronaldo", "Ronaldo"]},
    {"question": "Women?", "answers": ["Christine Sinclair", "Sinclair"]},
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
    # long answer names Ronaldo next to "men" only: 1 of 2 covered -> D-F1 0.5. The predicted interpretation
    # asks about men and answers Ronaldo -> it covers the men's reading -> P = 1/1
    cov = coverage(GOALS, [{"question": "Men?", "answer": "Cristiano Ronaldo"}], "Men: Cristiano Ronaldo.", "q")
    assert (cov.recall, cov.precision) == (0.5, 1.0)
    assert cov.f1 == pytest.approx(2 / 3)
    # the same answer under a question without "men" is not credited (question-aware): P = 0/1
    assert coverage(GOALS, [{"question": "q", "answer": "Ronaldo"}], "", "q").precision == 0.0
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
    half = dspy.Prediction(interpretations=[], long_answer="Men: Ronaldo.", passages=[])
    # D-F1 0.5 (men's only). ROUGE-Lsum: reference sentences "men: ronaldo." / "women: sinclair.", prediction
    # "men: ronaldo."; union LCS 2 + 0 = 2 of 4 reference tokens: P = 2/2, R = 2/4 -> F = 2/3
    assert get_metric("rouge-l")(ex, half) == pytest.approx(2 / 3)
    assert get_metric("dr")(ex, half) == pytest.approx(math.sqrt(0.5 * 2 / 3))
    assert get_metric("d-f1")(ex, half, trace=object()) is True  # 0.5 passes when optimising


def test_unknown_metric_lists_the_valid_ones():
    with pytest.raises(ConfigurationError, match="d-f1"):
        get_metric("bleu")


def test_ranking_recall_and_mrr_averaged_over_the_judged_queries():
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d9": 1}}
    run = {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d4": 0.7, "d3": 0.6}}  # q3 retrieved nothing
    scores = ranking_scores(qrels, run, ["recall@1", "mrr@10"])
    # q1: d1 at rank 1 -> recall@1 = 1, RR = 1 ; q2: d3 at rank 2 -> recall@1 = 0, RR = 1/2 ; q3: 0
    assert scores == {"recall@1": pytest.approx(1 / 3), "mrr@10": pytest.approx(1.5 / 3)}
    # the per-query scores the means come from (what a paired comparison of two retrievers resamples)
    assert query_scores(qrels, run, ["recall@1", "mrr@10"]) == {
        "q1": {"recall@1": 1.0, "mrr@10": 1.0}, "q2": {"recall@1": 0.0, "mrr@10": pytest.approx(0.5)},
        "q3": {"recall@1": 0.0, "mrr@10": 0.0}}


def test_ndcg_uses_graded_gains_and_the_k_best_judgments_as_the_ideal():
    import math

    qrels = {"q": {"a": 2, "b": 1, "c": 3, "z": 0}}
    run = {"q": {"b": 0.9, "x": 0.8, "a": 0.7}}  # c (grade 3) is never retrieved; z is judged not relevant
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)  # the 3 best grades, not cut to the run's length
    assert ranking_scores(qrels, run, ["ndcg@5"])["ndcg@5"] == pytest.approx(dcg / ideal)
    assert ranking_scores(qrels, run, ["ndcg@1"])["ndcg@1"] == pytest.approx((1 / 1) / (3 / 1))
    assert ranking_scores({"q": {"z": 0}}, run, ["ndcg@5"])["ndcg@5"] == 0.0  # nothing relevant: 0, not 0/0


def test_equal_scores_keep_the_order_the_run_lists_them_in():
    qrels = {"q": {"second": 1}}
    assert ranking_scores(qrels, {"q": {"first": 0.5, "second": 0.5}}, ["mrr@10"])["mrr@10"] == 0.5
    assert ranking_scores(qrels, {"q": {"second": 0.5, "first": 0.5}}, ["mrr@10"])["mrr@10"] == 1.0


def test_an_unknown_ranking_metric_or_empty_judgments_are_refused():
    with pytest.raises(ValueError, match="unknown ranking metric 'map@10'"):
        ranking_scores({"q": {"a": 1}}, {}, ["map@10"])
    with pytest.raises(ValueError, match="unknown ranking metric 'ndcg@'"):  # a cut-off left empty is no "all"
        ranking_scores({"q": {"a": 1}}, {}, ["ndcg@"])
    with pytest.raises(ValueError, match="qrels are empty"):
        ranking_scores({}, {}, ["ndcg@10"])


def test_exact_match_edge_cases():
    assert exact_match("", ["Ronaldo"]) == 0.0
    assert exact_match("Ronaldo", []) == 0.0  # an unanswerable gold: nothing to match
    assert exact_match("Cristiano  Ronaldo!", ["cristiano ronaldo"]) == 1.0


def test_answer_set_f1_one_vs_many_and_empty_clusters():
    # one prediction, one interpretation, exact -> 1
    assert answer_set_f1(["Ronaldo"], [["Cristiano Ronaldo", "Ronaldo"]]) == 1.0
    # one prediction vs two clusters: P = 1, R = (1 + 0) / 2 -> F1 = 2/3
    assert answer_set_f1(["Ronaldo"], [["Ronaldo"], ["Christine Sinclair"]]) == pytest.approx(2 / 3)
    # "sinclair" vs "christine sinclair": P = 1, R = 1/2 -> F1 2/3 for that cluster; P_set = 2/3, R_set = (0 + 2/3)/2
    # = 1/3 -> F1 = 2 * (2/3) * (1/3) / (2/3 + 1/3) = 4/9
    assert answer_set_f1(["Sinclair"], [["Ronaldo"], ["Christine Sinclair"]]) == pytest.approx(4 / 9)
    # clusters without answers are dropped; nothing left and nothing predicted counts as agreement
    assert answer_set_f1([], [[]]) == 1.0
    assert answer_set_f1(["Ronaldo"], [[]]) == 0.0


def test_coverage_edge_cases():
    men, women = {"question": "Men?"}, {"question": "Women?"}
    # an unanswerable gold interpretation counts in the total but is never covered: 1 of 2
    unanswerable = [GOALS[0], {"question": "in 2030?", "answers": []}]
    assert coverage(unanswerable, [{**men, "answer": "Ronaldo"}]).recall == 0.5
    # duplicate predicted answers each match: precision 2/2, recall 1/2
    dup = coverage(GOALS, [{**men, "answer": "Ronaldo"}, {**men, "answer": "ronaldo"}])
    assert (dup.recall, dup.precision, dup.matched_predictions) == (0.5, 1.0, 2)
    # blank predicted answers are not predictions; a wrong one lowers precision: 1 of 2 match
    mixed = coverage(GOALS, [{"answer": ""}, {"answer": None}, {**women, "answer": "Sinclair"}, {"answer": "Messi"}])
    assert (mixed.predictions, mixed.precision) == (2, 0.5)
    # "Sinclair" is an alias of the women's reading -> covered; 1 of 2
    assert mixed.recall == 0.5
    # one token of the two-token alias "Christine Sinclair" is not enough (strict span rule): 0 of 1
    christine = [{"question": "Women?", "answers": ["Christine Sinclair"]}]
    assert coverage(christine, [{**women, "answer": "Sinclair"}]).recall == 0
    # one gold interpretation, one right prediction -> everything 1
    single = coverage(GOALS[:1], [{**men, "answer": "Cristiano Ronaldo"}])
    assert (single.recall, single.precision, single.f1) == (1.0, 1.0, 1.0)
    assert coverage([], [{"answer": "x"}]).recall == 0.0


def test_rouge_l_without_references_or_with_blank_prediction():
    assert rouge_l("Ronaldo leads.", []) == 0.0
    assert rouge_l("   ", ["Ronaldo leads."]) == 0.0


def test_mrecall_edge_cases():
    assert mrecall_at_k([], ["anything"], k=5) == 0.0  # no gold interpretation
    assert mrecall_at_k(GOALS, [], k=5) == 0.0  # nothing retrieved
    # only the top-k count: Sinclair's passage at rank 3 is cut at k=2 (2 interpretations needed)
    passages = ["Cristiano Ronaldo", "Lionel Messi", "Christine Sinclair"]
    assert mrecall_at_k(GOALS, passages, k=2) == 0.0
    assert mrecall_at_k(GOALS, passages, k=3) == 1.0
    # whole-word containment: "Ronaldoo" does not contain the answer "Ronaldo"
    assert mrecall_at_k(GOALS[:1], ["Ronaldoo"], k=1) == 0.0


def test_registry_metrics_read_interpretations_before_the_long_answer():
    ex = dspy.Example(question="q", interpretations=GOALS, long_answers=[])
    pred = dspy.Prediction(interpretations=[{"answer": "Messi"}, {"answer": "Christine Sinclair"}],
                           long_answer="Cristiano Ronaldo", passages=[])
    # EM/F1 are the best over the predicted answers (the long answer is only a fallback): Sinclair -> 1
    assert get_metric("em")(ex, pred) == 1.0 and get_metric("f1")(ex, pred) == 1.0
    # answer-f1: P = (0 + 1)/2, R = (0 + 1)/2 -> 0.5
    assert get_metric("answer-f1")(ex, pred) == pytest.approx(0.5)
    # d-f1 reads the long answer too, but question-aware: neither the long answer "Cristiano Ronaldo" nor the
    # question-less predictions mention "men"/"women" -> 0 covered; d-precision 0 of 2 predicted answers
    assert get_metric("d-f1")(ex, pred) == 0.0 and get_metric("d-precision")(ex, pred) == 0.0
    asked = dspy.Prediction(interpretations=[{"question": "Men?", "answer": "Messi"},
                                             {"question": "Women?", "answer": "Christine Sinclair"}],
                            long_answer="For men, Cristiano Ronaldo.", passages=[])
    # men's covered by the long answer ("men" in its sentence), women's by the second reading -> 1.0;
    # d-precision: Messi covers nothing, Sinclair covers women's -> 1/2
    assert get_metric("d-f1")(ex, asked) == 1.0 and get_metric("d-precision")(ex, asked) == 0.5
    empty = dspy.Prediction(interpretations=[], long_answer="", passages=[])
    assert [get_metric(m)(ex, empty) for m in ("em", "f1", "answer-f1", "d-f1", "rouge-l", "dr")] == [0.0] * 6


def test_mrecall_registry_takes_any_positive_k():
    ex = dspy.Example(question="q", interpretations=GOALS, long_answers=[])
    pred = dspy.Prediction(interpretations=[], long_answer="", passages=[{"title": "", "text": "Ronaldo"}])
    assert get_metric("mrecall@1")(ex, pred) == 1.0 and get_metric("mrecall@5")(ex, pred) == 0.0
    with pytest.raises(ConfigurationError, match="any positive K"):
        get_metric("mrecall@0")


# Judged ranking metrics: a BEIR example carries qrels {doc_id: grade}; the prediction's passages are read in order.
# Run p2, p9, p1 against {p1: 1, p2: 2}: DCG@10 = 2/log2(2) + 1/log2(4) = 2.5; IDCG = 2 + 1/log2(3) = 2.6309;
# nDCG@10 = 0.9502. Recall@2 = 1/2 (p2 only), recall@3 = 1.
@pytest.mark.parametrize(("name", "expected"), [("ndcg@10", 2.5 / (2 + 1 / math.log2(3))), ("recall@2", 0.5),
                                                ("recall@3", 1.0), ("ndcg@5", 2.5 / (2 + 1 / math.log2(3)))])
def test_ndcg_and_recall_read_the_examples_qrels_by_passage_id(name, expected):
    example = dspy.Example(question="q", qrels={"p1": 1, "p2": 2}).with_inputs("question")
    pred = dspy.Prediction(passages=[{"id": pid, "title": ""} for pid in ("p2", "p9", "p1")])
    assert get_metric(name)(example, pred) == pytest.approx(expected, abs=1e-4)


def test_without_qrels_ndcg_and_recall_fall_back_to_titles():
    example = dspy.Example(question="q", relevant_titles=["A", "B"]).with_inputs("question")
    pred = dspy.Prediction(passages=[{"id": "x", "title": "B"}, {"id": "y", "title": "C"}])
    assert get_metric("recall@5")(example, pred) == pytest.approx(0.5)     # B of {A, B}
    assert get_metric("ndcg@5")(example, pred) == pytest.approx(1 / (1 + 1 / math.log2(3)))
