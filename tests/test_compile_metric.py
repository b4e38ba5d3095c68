"""``compile``'s metric: the dataset's primary one by default, and none that scores the dataset's own gold answers at
0 (or no higher than empty answers), refused in one line before any LM call. Scripted LM; the AmbigNQ and ASQA rows of
``tests/fixtures`` (AmbigNQ train: amb-1, amb-2, amb-3; ASQA train: mini-1, mini-2, mini-5)."""

from __future__ import annotations

import json

import pytest
from dspy.utils import DummyLM
from typer.testing import CliRunner

from disambig.cli import app
from disambig.data import load_dataset
from disambig.errors import ConfigurationError
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics import default_metrics, get_metric, primary_metric
from disambig.optimizers.metric_fit import check_metric_fits, fitting_metrics, gold_prediction, gold_scores

runner = CliRunner()
DEV_ROWS = [  # two AmbigNQ questions of the dev split (bucket 73 and 62), for a held-out score
    {"id": "amb-dev-1", "question": "Who won the world cup?",
     "annotations": [{"type": "singleAnswer", "answer": ["Argentina"]}]},
    {"id": "amb-dev-2", "question": "Who built the bridge?",
     "annotations": [{"type": "singleAnswer", "answer": ["John Roebling"]}]},
]


@pytest.fixture
def ambignq_with_dev(tmp_path, ambignq_file) -> str:
    path = tmp_path / "ambignq-dev.jsonl"
    rows = open(ambignq_file, encoding="utf-8").read() + "".join(json.dumps(r) + "\n" for r in DEV_ROWS)
    path.write_text(rows, encoding="utf-8")
    return str(path)


@pytest.fixture
def no_lm(monkeypatch):
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda *a, **kw: pytest.fail("an LM was built"))


def test_the_primary_metric_is_one_eval_reports_for_the_format():
    assert primary_metric("asqa") == "dr" and "dr" in default_metrics("asqa")
    assert primary_metric("ambignq") == "ambigqa-f1" and "ambigqa-f1" in default_metrics("ambignq")
    assert primary_metric("aggregation") == "count-score"  # 1 / (1 + NACE): NACE, an error, is what eval reports
    assert primary_metric("") == "d-f1"  # a hub set, whose format is not read ahead


def test_the_gold_answer_of_an_ambignq_question_scores_0_on_dr_and_1_on_answer_set_f1(ambignq_file):
    # amb-2 "When was the tower built?": Eiffel Tower (1887 to 1889 / 1889), Leaning Tower (1173 to 1372).
    # The gold prediction answers each reading with its first answer, the long answer joins them:
    #   ambigqa-f1: both answer sets matched exactly -> 1.0
    #   dr = sqrt(d-f1 x rouge-l): no reference long answer, so rouge-l = 0 -> 0.0
    (tower,) = [ex for ex in load_dataset(ambignq_file) if ex.id == "amb-2"]
    gold = gold_prediction(tower)
    assert gold.answers == ["1887 to 1889", "1173 to 1372"] and gold.long_answer == "1887 to 1889; 1173 to 1372"
    assert get_metric("ambigqa-f1")(tower, gold) == 1.0
    assert get_metric("dr")(tower, gold) == 0.0 and get_metric("rouge-l")(tower, gold) == 0.0


def test_metrics_that_fit_ambignq_include_every_one_eval_reports_there_and_neither_dr_nor_rouge_l(ambignq_file):
    train = load_dataset(ambignq_file, split="train")
    fit = fitting_metrics(train)
    assert set(default_metrics("ambignq")) <= set(fit)
    assert not {"dr", "rouge-l", "chunk-recall", "ace"} & set(fit)  # chunk recall: 1 for gold and empty answers
    assert gold_scores(get_metric("chunk-recall"), train) == (1.0, 1.0)


def test_dr_fits_asqa(asqa_file):
    check_metric_fits("dr", asqa_file, load_dataset(asqa_file, split="train"))  # raises nothing


@pytest.mark.parametrize(("metric", "problem"), [
    ("dr", "scores the gold answers of 3 training questions of {data} at 0"),
    ("rouge-l", "scores the gold answers of 3 training questions of {data} at 0"),
    ("chunk-recall", "scores the gold answers of 3 training questions of {data} no higher than empty answers (1.00)"),
    ("ace", "cannot score the gold answers of 3 training questions of {data} (it needs fields these rows lack"),
])
def test_a_metric_that_cannot_tell_the_gold_answer_is_refused_before_any_lm_call(no_lm, ambignq_with_dev, tmp_path,
                                                                                metric, problem):
    result = runner.invoke(app, ["compile", "closed-book", "--dataset", ambignq_with_dev, "--metric", metric,
                                 "--no-track", "--out", str(tmp_path / "artifacts")])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: --metric {metric} {problem.format(data=ambignq_with_dev)}")
    assert line.endswith("so compiling cannot improve it; metrics that fit this dataset: ambigqa-f1 (the default), em, "
                         "f1, answer-f1, d-f1, d-precision, str-em, mrecall@5, adf-f1, adf-d-f1")
    assert not (tmp_path / "artifacts").exists()


def test_compile_route_refuses_it_too(no_lm, ambignq_with_dev, tmp_path):
    result = runner.invoke(app, ["compile", "route", "--dataset", ambignq_with_dev, "--metric", "dr",
                                 "--candidates", "closed-book,vanilla-rag", "--no-track", "--runs", str(tmp_path / "r"),
                                 "--out", str(tmp_path / "artifacts")])
    assert result.exit_code == 2 and "error: --metric dr scores the gold answers" in result.output, result.output


def test_compile_on_ambignq_optimises_answer_set_f1_when_no_metric_is_given(monkeypatch, ambignq_with_dev, tmp_path):
    lm = DummyLM([{"long_answer": "Argentina."}] * 20, adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    result = runner.invoke(app, ["compile", "closed-book", "--dataset", ambignq_with_dev, "--optimizer",
                                 "labeled-fewshot", "--no-track", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "ambigqa-f1 on 2 held-out questions" in result.output
    manifest = json.loads((tmp_path / "closed-book" / "ambignq-dev" / "manifest.json").read_text())
    assert manifest["labeled-fewshot"]["metric"] == "ambigqa-f1"


def test_a_judge_metric_is_not_checked_without_its_lm(ambignq_file):
    check_metric_fits("g-f1", ambignq_file, load_dataset(ambignq_file, split="train"))  # needs an LM: not scored here


def test_a_dataset_without_training_questions_is_not_checked(ambignq_file):
    check_metric_fits("dr", ambignq_file, [])


def test_the_check_raises_a_configuration_error_naming_the_default(ambignq_file):
    with pytest.raises(ConfigurationError, match=r"metrics that fit this dataset: ambigqa-f1 \(the default\), em"):
        check_metric_fits("dr", ambignq_file, load_dataset(ambignq_file, split="train"))
