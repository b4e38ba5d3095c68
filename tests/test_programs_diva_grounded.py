"""DIVA with the rewrite reading the question's passages, with a scripted engine: what the rewrite is shown, one
retrieval call, and the rest of DIVA unchanged."""

from __future__ import annotations

import dspy
from program_fakes import FakeEmbedder, FakeRetriever, scripted_lm
from test_programs_diva import MEN, QUESTION, WOMEN, rules, steps

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.programs.diva.program import diversify

GROUNDED = "The passages were retrieved for an ambiguous question"


def run(program_name: str, verdicts: dict[str, str], readings: list[str]):
    script = rules(verdicts)
    del script["Rewrite the ambiguous question"]
    script[GROUNDED] = lambda _: {"sub_questions": readings}
    lm, engine = scripted_lm(script)
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    retriever = FakeRetriever()
    program = build_program(program_name, retriever=retriever, embedder=FakeEmbedder(), k=2)
    return program, program(question=QUESTION), engine, retriever


def test_the_rewrite_reads_the_questions_own_top_k_passages_and_diva_goes_on_from_its_readings():
    program, pred, engine, retriever = run("diva-grounded", {MEN: "Yes", WOMEN: "Yes"}, [MEN, WOMEN, MEN])
    # typing, the grounded rewrite, then DIVA's verification (once per distinct reading) and RAC
    assert steps(engine) == ["Decide", "The", "Do", "Do", "Using", "Write"]
    assert retriever.calls == 1 and pred.trace["retrieval_calls"] == 1  # the candidates are fetched once
    shown = engine.calls[1][1]
    top = program.reranker.search(QUESTION, 2)
    assert all(p.text in shown for p in top)  # VanillaRAG's top-k for the question, as the rewrite's passages
    others = [p for p in retriever.passages if p.id not in {t.id for t in top}]
    assert not any(p.text in shown for p in others)
    assert f"question: {QUESTION}" in shown and "AmbSub" in shown  # the typing step's answer reaches the rewrite
    assert pred.trace["notes"]["pseudo_interpretations"] == [MEN, WOMEN]
    assert [p["id"] for p in pred.passages] == [p.id for p in diversify(program.reranker, QUESTION, [MEN, WOMEN], 2)]
    assert pred.trace["notes"]["grade"] == "Useful" and pred.long_answer == "Ronaldo (men), Sinclair."


def test_no_reading_written_keeps_the_question_itself():
    _, pred, engine, _ = run("diva-grounded", {QUESTION: "No"}, [])
    assert pred.trace["notes"]["pseudo_interpretations"] == [QUESTION]
    assert steps(engine)[-1] == "Without" and pred.trace["notes"]["grade"] == "Useless"


def test_the_grounded_rewrite_saves_and_loads_as_its_own_predictor(tmp_path):
    program, _, _, _ = run("diva-grounded", {MEN: "Yes", WOMEN: "Yes"}, [MEN, WOMEN])
    names = dict(program.named_predictors())
    assert "interpret.rewrite" in names and names["interpret.rewrite"].signature.__name__ == "GroundedInterpretations"
    program.save(str(tmp_path / "state.json"))
    again = build_program("diva-grounded", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=2)
    again.load(str(tmp_path / "state.json"))
    loaded = again.interpret.rewrite.signature
    assert "passages" in loaded.input_fields and GROUNDED in loaded.instructions
