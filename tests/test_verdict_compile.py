"""VerDICt compiled with gold demos: the feedback step's demo fields from ASQA evidence, and the CLI round trip."""

from __future__ import annotations

import json
import re

import dspy
import pytest
from program_fakes import FakeEmbedder, FakeRetriever, compile_asqa, scripted_lm, use_in_cli
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.gold import with_gold_fields
from disambig.programs.context import UNTRUSTED_NOTE

MEN = "Who has the most international goals in men's football?"


def asqa_row(**overrides) -> dspy.Example:
    fields = dict(
        id="q1", question="Who has the most goals?", long_answers=["Men: Ronaldo."],
        interpretations=[{"question": MEN, "answers": ["Cristiano Ronaldo"]},
                         {"question": "Most goals, women?", "answers": ["Christine Sinclair"]}],
        evidence=[{"title": "Women's football", "text": "Nobody is named here."},
                  {"title": "Ronaldo", "text": "Cristiano Ronaldo holds the men's record."}],
    )
    return dspy.Example(**(fields | overrides)).with_inputs("question")


def test_gold_feedback_demo_is_one_evidence_passage_with_the_reading_it_answers():
    gold = with_gold_fields(asqa_row())
    # only passage 2 states a gold answer (Ronaldo's); the demo shows it alone, as the step sees one passage
    assert gold.document == f"{UNTRUSTED_NOTE}\n<passage>Ronaldo | Cristiano Ronaldo holds the men's record.</passage>"
    assert (gold.interpretation, gold.answer) == (MEN, "Cristiano Ronaldo")
    assert gold.inputs().toDict() == {"question": "Who has the most goals?"}


def test_no_passage_stating_an_answer_gives_no_feedback_demo():
    gold = with_gold_fields(asqa_row(evidence=[{"title": "X", "text": "Nothing relevant."}]))
    assert not {"document", "interpretation", "answer"} & set(gold.keys())


class EmbeddingRetriever(FakeRetriever):
    """The fake corpus with the fake encoder attached, as dense and hybrid retrievers expose theirs."""

    embedder = FakeEmbedder()


def rules() -> dict:
    def feedback(user: str):
        title = re.search(r"<passage>([^|]+) \|", user)[1].strip()
        return {"interpretation": f"Which {title}?", "answer": title} if "Ronaldo" in title else {
            "interpretation": None, "answer": None}

    return {
        "Turn the question into a short, broad search query": lambda _: {"query": "goals"},
        "ONE document, a passage from the search results": feedback,
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Herman Melville wrote it."},
    }


@pytest.fixture
def fakes(monkeypatch):
    lm, engine = scripted_lm(rules())
    use_in_cli(monkeypatch, lm, EmbeddingRetriever())
    return engine


def test_compile_verdict_with_labeled_gold_demos_then_load_and_ask(fakes, tmp_path, asqa_file):
    state_path, _ = compile_asqa("verdict", asqa_file, tmp_path, "--train", "3", "--val", "2", "--demos", "3")
    state = json.loads(state_path.read_text())
    # train rows mini-1, -2, -5; only mini-1 has an evidence passage stating a gold answer
    gold = [d for d in state["feedback"]["demos"] if d.get("document")]
    document = f"{UNTRUSTED_NOTE}\n<passage>Moby-Dick | Moby-Dick is an 1851 novel by Herman Melville.</passage>"
    assert gold == [dict(gold[0], document=document,
                         interpretation="Who wrote the 1851 novel Moby-Dick?", answer="Herman Melville")]
    assert len(state["writer"]["demos"]) == 3  # every row has a long answer

    from disambig.optimizers.loading import load

    program = load(state_path, retriever=EmbeddingRetriever())
    loaded = [d.toDict() if hasattr(d, "toDict") else d for d in program.feedback.demos]
    assert loaded == state["feedback"]["demos"]
    messages = CompactJSONAdapter().format(program.feedback.signature, program.feedback.demos,
                                           {"question": "Q?", "document": "T | x"})
    # the gold demo is shown as a user/assistant turn; the rows without one (no output field) are left out
    assert len(messages) == 1 + 2 + 1 and "Moby-Dick is an 1851 novel" in messages[1]["content"]
    calls = len(fakes.calls)
    lm, _ = scripted_lm(rules())
    with dspy.context(lm=lm):
        pred = program(question="Who scored the most goals?")
    assert pred.interpretations[0]["passage_ids"] == ["p1"] and pred.trace["lm_calls"] == 1 + 6 + 1
    assert len(fakes.calls) == calls  # the loaded program used the LM it was given


def test_compile_with_tuned_knobs_records_them_and_loads_with_them(fakes, tmp_path, asqa_file):
    state_path, manifest = compile_asqa("verdict", asqa_file, tmp_path, "--train", "2", "--val", "1",
                                        "--tune-knobs", "2")
    knobs = manifest["knobs"]
    assert set(knobs) == {"k", "min_cluster_size", "min_samples", "cluster_selection_epsilon"}

    from disambig.optimizers.loading import load

    program = load(state_path, retriever=EmbeddingRetriever())
    assert program.k == knobs["k"] and program.clustering["min_samples"] == knobs["min_samples"]


def test_eval_runs_verdict_on_an_asqa_file(fakes, tmp_path, asqa_file):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "verdict", "--dataset", asqa_file, "--limit", "2", "--no-track",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["questions"] == 2 and report["efficiency"]["lm_calls_per_q"] == 1 + 6 + 1
    assert "rouge-l" in report["metrics"]
