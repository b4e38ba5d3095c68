"""ASQA-official, AmbigQA-official and ADF-code metrics, corpus-level report values and ``disambig score``,
on hand-worked values (no crosscheck data: that check is ``bench/quality/crosscheck.py``)."""

from __future__ import annotations

import json
import math

import dspy
import pytest
from typer.testing import CliRunner

from disambig.cli.app import app
from disambig.errors import ConfigurationError
from disambig.evaluation.records import QuestionResult
from disambig.evaluation.report import build_report, metric_means
from disambig.evaluation.scoring import match_rows, score_predictions
from disambig.metrics import QAReader, default_metrics, get_metric, with_inputs
from disambig.metrics.adf_ranking import adf_ndcg_at_k, adf_recall_at_k, ndcg_at_k
from disambig.metrics.adf_text import adf_token_f1, lcs_f1, normalize_adf
from disambig.metrics.ambigqa import ambigqa_f1
from disambig.metrics.sentences import rule_based_sentences

# The audit's worked example A (closed-book, "What season is the plane crash greys anatomy?")
GREYS = dspy.Example(
    id="g", question="What season is the plane crash greys anatomy?",
    interpretations=[
        {"question": "What season is the plane crash in greys anatomy that killed Mark Sloan?",
         "answers": ["eleventh season", "Season 11"]},
        {"question": "What season is the plane crash greys anatomy, the episode Flight?",
         "answers": ["eighth season", "Season 8", "the eighth season"]},
    ],
    long_answers=["The plane crash happens at the end of the eighth season, in the episode Flight."],
).with_inputs("question")
WRONG = dspy.Prediction(long_answer="The plane crash has aired its season on the 2017 season. The plane crash has "
                        "aired its season on the 2017 season.", interpretations=[], passages=[])


def test_audit_counterexample_scores_zero_on_the_proxy_and_str_em():
    # "its season" shares 1 of the 2 tokens of "eighth season": not more than half -> not found; likewise
    # "season on" for "Season 11". Old rule (F1 >= 0.5) covered all -> 1.0; now 0 of 2.
    assert get_metric("d-f1")(GREYS, WRONG) == 0.0
    assert get_metric("str-em")(GREYS, WRONG) == 0.0
    right = dspy.Prediction(long_answer="The crash in the episode Flight ends the eighth season.", interpretations=[])
    # "eighth season" is in a sentence that names "flight" (a distinguishing word of reading 2) -> 1 of 2;
    # STR-EM: "eighth season" is a substring -> 1 of 2
    assert get_metric("d-f1")(GREYS, right) == 0.5
    assert get_metric("str-em")(GREYS, right) == 0.5


def test_adf_normalisation_and_token_f1():
    assert normalize_adf("The-End") == "end"  # articles go before punctuation: "the-end" -> "-end" -> "end"
    assert normalize_adf("1979-1980") == "19791980" and normalize_adf("1979–80") == "1979–80"  # en dash kept
    # "paul simon sang it" vs "paul simon": common 2, P = 2/4, R = 1 -> F1 = 2/3
    assert adf_token_f1("Paul Simon sang it", "Paul Simon") == pytest.approx(2 / 3)
    assert adf_token_f1("", "") == 1.0 and adf_token_f1("a", "x") == 0.0  # "a" normalises to nothing
    # LCS of "men ronaldo women sinclair" and "ronaldo sinclair" = 2: P = 2/2, R = 2/4 -> 2/3
    assert lcs_f1("Ronaldo, Sinclair", "Men: Ronaldo. Women: Sinclair.") == pytest.approx(2 / 3)


AMBIG = dspy.Example(
    id="a", question="Who sang it?", long_answers=[],
    interpretations=[{"question": "Who sang it in 1964?", "answers": ["Simon & Garfunkel"]}],
    answer_sets_by_annotator=[[["Simon & Garfunkel"], ["Dami Im"]], [["Paul Simon"]]],
    nq_answer=["Simon and Garfunkel"],
).with_inputs("question")


def test_adf_f1_and_d_f1_on_ambignq():
    pred = dspy.Prediction(long_answer="Simon and Garfunkel")
    # A_q = {simon garfunkel, dami im, paul simon, simon and garfunkel}: the nq_answer is exact -> 1.0
    assert get_metric("adf-f1")(AMBIG, pred) == 1.0
    # sets (annotators concatenated): {S&G} F1 = 2*(2/3*1)/(5/3) = 0.8 covered; {Dami Im} 0; {Paul Simon}:
    # common "simon", P = 1/3, R = 1/2 -> 0.4 < 0.5 -> 1 of 3
    assert get_metric("adf-d-f1")(AMBIG, pred) == pytest.approx(1 / 3)


def test_ambigqa_official_f1_is_exact_one_to_one_and_max_over_annotations():
    annotations = [[["Simon & Garfunkel"], ["Dami Im"]], [["Paul Simon"]]]
    # annotation 1: "dami im" takes cluster 2, "simon garfunkel" cluster 1 -> R = 1, P = 2/3 -> 0.8;
    # annotation 2: nothing exact -> 0 ; max -> 0.8
    assert ambigqa_f1(annotations, ["Dami Im", "Simon & Garfunkel", "Art"]) == pytest.approx(0.8)
    assert ambigqa_f1(annotations, ["dami  im", "Dami Im"]) == pytest.approx(2 / 3)  # one distinct: R 1/2, P 1
    assert ambigqa_f1(annotations, []) == 0.0


def test_rouge_lsum_and_the_adf_rouge_l_differ_by_sentence_split():
    ex = dspy.Example(question="q", interpretations=[], long_answers=["Alpha beta. Gamma delta."])
    pred = dspy.Prediction(long_answer="Gamma delta. Alpha beta.")
    # rougeL over "alpha beta gamma delta" vs "gamma delta alpha beta": LCS 2 -> P = R = 1/2 -> 0.5;
    # rougeLsum: each reference sentence finds itself among the predicted sentences -> union LCS 4 of 4 -> 1.0
    assert get_metric("adf-rouge-l")(ex, pred) == pytest.approx(0.5)
    assert get_metric("rouge-l")(ex, pred) == pytest.approx(1.0)
    assert rule_based_sentences("Dr. Who met J. Smith in the U.S. today. Then left!") == [
        "Dr. Who met J. Smith in the U.S. today.", "Then left!"]


class FakeReader(QAReader):
    """A reader whose pipeline answers from a table (question -> span), as transformers' pipeline would."""

    def __init__(self, spans: dict[str, str]) -> None:
        super().__init__("unused")
        self._pipeline = lambda question, context, **kwargs: [{"answer": spans.get(q, "")} for q in question]


def test_reader_metrics_ask_each_interpretation_question():
    reader = FakeReader({GREYS.interpretations[0]["question"]: "2017",
                         GREYS.interpretations[1]["question"]: "the eighth season"})
    # disambig-f1: reading 1 F1("2017", ...) = 0, reading 2 exact = 1 -> mean 0.5 (un-thresholded)
    assert get_metric("disambig-f1", reader=reader)(GREYS, WRONG) == 0.5
    # adf-d-f1 (ASQA branch): reading 2 covered -> 1/2
    assert get_metric("adf-d-f1", reader=reader)(GREYS, WRONG) == 0.5
    with pytest.raises(ConfigurationError, match="--reader"):
        get_metric("disambig-f1")
    with pytest.raises(ConfigurationError, match="--reader"):
        get_metric("adf-d-f1")(GREYS, WRONG)


def test_a_reader_folder_without_a_model_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="not a Hugging Face model folder"):
        QAReader(tmp_path).answers(["q"], "some context", allow_null=True)


def test_adf_ndcg_can_exceed_one_and_ours_cannot():
    relevant = {"A", "B"}
    titles = ["A", "A", "A", "C", "B"]
    ideal = 1 + 1 / math.log2(3)
    # ADF: ranks 1, 2, 3, 5 are all credited; ours: A at 1 and B at 5 only
    assert adf_ndcg_at_k(titles, relevant, 5) == pytest.approx((1 + 1 / math.log2(3) + 0.5 + 1 / math.log2(6)) / ideal)
    assert adf_ndcg_at_k(titles, relevant, 5) > 1
    assert ndcg_at_k(titles, relevant, 5) == pytest.approx((1 + 1 / math.log2(6)) / ideal)
    assert adf_recall_at_k(titles, relevant, 3) == 0.5 and adf_recall_at_k(titles, set(), 5) == 0.0


def test_corpus_dr_and_g_f1_are_computed_from_means():
    # q1: D-F1 1, ROUGE 0.04 ; q2: D-F1 0, ROUGE 0.36. Per-question DR: 0.2 and 0 -> mean 0.1.
    # Corpus DR = sqrt(0.5 * 0.2) = sqrt(0.1) = 0.316
    scores = [{"d-f1": 1.0, "rouge-l": 0.04, "dr": 0.2}, {"d-f1": 0.0, "rouge-l": 0.36, "dr": 0.0}]
    assert metric_means(scores)["dr"] == pytest.approx(math.sqrt(0.1))
    # without its inputs a corpus metric is reported as a plain per-question mean under another name
    assert metric_means([{"dr": 0.2}, {"dr": 0.0}]) == {"dr-per-question": pytest.approx(0.1)}
    # G-F1 = HM(mean G-P 0.5, mean G-R 0.25) = 1/3 (not the mean of per-question F1s 0 and 0.5)
    g = [{"g-precision": 1.0, "g-recall": 0.0, "g-f1": 0.0}, {"g-precision": 0.0, "g-recall": 0.5, "g-f1": 0.0}]
    assert metric_means(g)["g-f1"] == pytest.approx(1 / 3)
    assert with_inputs(["dr"]) == ["d-f1", "rouge-l", "dr"]
    assert with_inputs(["dr"], reader=True) == ["disambig-f1", "rouge-l", "dr"]
    assert default_metrics("asqa") == ["str-em", "rouge-l", "d-f1", "dr"]


def test_report_costs_cover_failed_questions():
    ok = QuestionResult("1", "q", {}, {"d-f1": 1.0}, trace={"lm_calls": 2, "input_tokens": 100, "seconds": 1.0})
    failed_traced = QuestionResult("2", "q", None, {"d-f1": 0.0}, error="E", trace={"lm_calls": 4, "seconds": 3.0})
    failed_bare = QuestionResult("3", "q", None, {"d-f1": 0.0}, error="E")
    report = build_report([ok, failed_traced, failed_bare], {})
    eff = report["efficiency"]
    # LM calls (2 + 4 + 0) / 3 = 2 ; input tokens 100 / 3 ; latency over the two timed runs: p50 = 2.0
    assert eff["lm_calls_per_q"] == pytest.approx(2.0) and eff["input_tokens_per_q"] == pytest.approx(100 / 3)
    assert eff["latency_p50_s"] == pytest.approx(2.0) and eff["failures_without_trace"] == 1.0
    assert report["metrics"]["d-f1"] == pytest.approx(1 / 3) and report["failures"] == 2


def test_score_matches_rows_by_id_then_question_and_names_unmatched_rows():
    rows = [{"id": "g", "question": "other text", "long_answer": "x"},
            {"question": "  WHO sang it? ", "long_answer": "Simon and Garfunkel"}]
    assert [ex.id for ex in match_rows(rows, [GREYS, AMBIG])] == ["g", "a"]
    with pytest.raises(ValueError, match=r"1 prediction row\(s\) match no question.*row 1 \('Who won\?'\)"):
        match_rows([{"question": "Who won?"}], [GREYS, AMBIG])
    result = score_predictions(rows[1:], [GREYS, AMBIG], {"adf-f1": get_metric("adf-f1")})
    assert result.to_json() == {"questions": 1, "metrics": {"adf-f1": 1.0}, "judge": None,
                                "per_question": [{"id": "a", "question": "Who sang it?", "scores": {"adf-f1": 1.0}}]}


def test_score_command_writes_the_json(tmp_path):
    dataset = tmp_path / "asqa.jsonl"
    dataset.write_text(json.dumps({
        "id": "7", "question": "Who sang sound of silence?",
        "qa_pairs": [{"question": "Who sang sound of silence in 1964?", "short_answers": ["Simon & Garfunkel"]},
                     {"question": "Who sang sound of silence in 2016?", "short_answers": ["Dami Im"]}],
        "annotations": [{"long_answer": "Simon & Garfunkel sang it in 1964.", "knowledge": []}],
    }) + "\n", encoding="utf-8")
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text(json.dumps({"question": "Who sang sound of silence?",
                                       "long_answer": "Simon & Garfunkel sang it in 1964."}) + "\n", encoding="utf-8")
    out = tmp_path / "scores.json"
    result = CliRunner().invoke(app, ["score", str(predictions), "--dataset", str(dataset), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text(encoding="utf-8"))
    # defaults for an ASQA-shaped file: STR-EM 1/2, ROUGE-L 1 (identical to the reference), D-F1 1/2
    # ("simon garfunkel" next to "1964"), corpus DR sqrt(0.5 * 1)
    assert written["metrics"] == pytest.approx({"str-em": 0.5, "rouge-l": 1.0, "d-f1": 0.5, "dr": math.sqrt(0.5)})
    assert written["questions"] == 1 and written["per_question"][0]["id"] == "7"
    bad = CliRunner().invoke(app, ["score", str(predictions), "--dataset", str(dataset), "-m", "bleu"])
    assert bad.exit_code == 2 and "unknown metric 'bleu'" in bad.output


def test_score_reads_an_eval_results_file_and_scores_a_failure_as_an_empty_answer(tmp_path, asqa_file):
    results = tmp_path / "results.jsonl"
    answer = {"long_answer": "The capital of Australia is Canberra.", "interpretations": [], "passages": []}
    results.write_text(json.dumps({"id": "mini-4", "question": "What is the capital?", "prediction": answer,
                                   "scores": {}, "error": None}) + "\n"
                       + json.dumps({"id": "mini-1", "question": "Who wrote the novel about the white whale?",
                                     "prediction": None, "scores": {}, "error": "ValueError: cut"}) + "\n")
    out = tmp_path / "scores.json"
    result = CliRunner().invoke(app, ["score", str(results), "--dataset", asqa_file, "-m", "str-em", "--out", str(out)])
    assert result.exit_code == 0, result.output
    # mini-4: the answer names Canberra, its one short answer (STR-EM 1); mini-1 failed: an empty answer scores 0
    assert [q["scores"]["str-em"] for q in json.loads(out.read_text())["per_question"]] == [1.0, 0.0]
