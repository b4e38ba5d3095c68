"""Compiling ADF with a scripted LM: ``--tune-knobs`` fits the ambiguity gate from the train labels before the
knob search; labeled-fewshot shows gold synthesis demos; the artifact loads back into a working program."""

from __future__ import annotations

import dspy
import numpy as np
from program_fakes import compile_asqa, configure_scripted, scripted_lm, use_in_cli
from test_adf import QUESTION, RULES, AxisEmbedder, TableRetriever, corpus

from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.compile import CompileJob, compile_program
from disambig.optimizers.gold import with_gold_fields
from disambig.optimizers.loading import load
from disambig.optimizers.recipes import Budget
from disambig.optimizers.session import search_knobs
from disambig.programs.adf.program import ADF

SPREAD, TIGHT = corpus({"Men": 5, "Women": 5}), corpus({"Men": 10})


def retriever() -> TableRetriever:
    """"spread?" retrieves passages on two axes (ambiguous geometry), "tight?" on one; the embedder rides along."""
    passages = SPREAD + [p for p in TIGHT if p.id not in {q.id for q in SPREAD}]
    searcher = TableRetriever(passages, {"spread?": [p.id for p in SPREAD], "tight?": [p.id for p in TIGHT]})
    searcher.embedder = AxisEmbedder(("Men",))
    return searcher


def example(question: str, readings: int, n: int = 0) -> dspy.Example:
    interpretations = [{"question": f"Which {t}?", "answers": [f"{t} answer"]} for t in ("Men", "Women")[:readings]]
    return dspy.Example(
        id=f"{question}{n}", question=question, interpretations=interpretations,
        long_answers=["Men answer for men; however Women answer for women."][: readings - 1] or ["Men answer."],
        evidence=[{"title": "Men", "text": "Men answer is the record."}],
    ).with_inputs("question")


def configure() -> None:
    configure_scripted(RULES)


def says_depends(ex, pred, trace=None):
    return float("depends" in pred.long_answer)


def test_tune_knobs_fits_the_gate_from_labels_then_searches_the_rest():
    configure()
    trainset = [example("spread?", 2), example("tight?", 1)]
    seen: list = []
    knobs = search_knobs("adf", retriever(), trainset, says_depends, Budget(), trials=1, seen=seen)
    assert len(seen) == 1 and set(seen[0]["knobs"]) == set(ADF.KNOBS) - {"tau_var", "tau_sep"}
    assert 0.0 <= seen[0]["train_score"] <= 1.0
    assert {k: knobs[k] for k in ("tau_var", "tau_sep")} == ADF.fit_gate(retriever(), trainset)
    assert set(knobs) == set(ADF.KNOBS)        # the gate's two thresholds fitted, every other knob searched
    gate = ADF(None, tau_var=knobs["tau_var"], tau_sep=knobs["tau_sep"]).gate
    # spread: variance 0.5, separation 1 (ambiguous); tight: 0, 0 -> the fitted gate separates them
    assert gate.predict(np.array([[0.5, 1.0], [0.0, 0.0]])).tolist() == [True, False]


def test_labeled_fewshot_compiles_saves_and_loads(tmp_path):
    configure()
    trainset = [with_gold_fields(example("spread?", 2, n)) for n in range(3)]
    valset = [example("tight?", 1, 9)]
    job = CompileJob("adf", "toy", "depends", "labeled-fewshot", Budget(demos=2), knobs={"tau_sep": 0.5})
    program = ADF(retriever(), tau_sep=0.5)
    result = compile_program(job, program, trainset, valset, says_depends, tmp_path, {"train": "a", "heldout": "b"})
    assert result.before == result.after == 1.0
    loaded = load(result.state_path, retriever=retriever())
    assert loaded.settings["tau_sep"] == 0.5
    demos = loaded.synthesize.demos
    assert len(demos) == 2 and demos[0]["sub_questions"] == ["Which Men?", "Which Women?"]
    assert "however" in demos[0]["long_answer"]
    configure()
    assert loaded(question=QUESTION).long_answer == "It depends on the reading."


def test_compile_adf_through_the_command_line_with_tuned_knobs_then_load(monkeypatch, tmp_path, asqa_file):
    import json

    searcher = TableRetriever(corpus({"Men": 3, "Women": 3, "Club": 2, "Cricket": 2}))
    searcher.embedder = AxisEmbedder(("Men", "Women", "Club"))
    rules = RULES | {"Write a detailed factual passage": lambda user: {"passage": "hyde"}}  # the ASQA style's HyDE
    use_in_cli(monkeypatch, scripted_lm(rules)[0], searcher)
    state_path, manifest = compile_asqa("adf", asqa_file, tmp_path, "--train", "3", "--val", "2", "--tune-knobs", "1")
    assert {"tau_var", "tau_sep", "tau_rel", "k"} <= set(manifest["knobs"])
    assert manifest["knobs"]["style"] == "asqa"  # taken from the ASQA rows
    # every ASQA row has a long answer, passages and sub-questions: the synthesis step gets gold demos
    assert len(json.loads(state_path.read_text())["synthesize"]["demos"]) == 2
    program = load(state_path, retriever=searcher)
    assert program.settings["tau_sep"] == manifest["knobs"]["tau_sep"]
    with dspy.context(lm=scripted_lm(rules)[0], adapter=CompactJSONAdapter()):
        assert program(question=QUESTION).long_answer == "It depends on the reading."
