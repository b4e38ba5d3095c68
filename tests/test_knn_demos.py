"""The knn-fewshot recipe: each question gets its nearest training examples as demos, saved and loaded as JSON."""

from __future__ import annotations

import json

import dspy
from pickle_scan import pickles_under
from program_fakes import FakeEmbedder, FakeRetriever, ScriptedEngine

from disambig import load
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.artifact import save_artifact
from disambig.optimizers.recipes import Budget, make_optimizer
from disambig.programs import build_program
from disambig.programs.seed_demos import LONG_ANSWER

POOL = [
    dspy.Example(id="a", question="Who won the world cup in 2014?", long_answer="Germany won in 2014.",
                 evidence=[{"title": "x", "text": "not a demo field"}]).with_inputs("question"),
    dspy.Example(id="b", question="Who sings the song Hello?", long_answer="Adele sings Hello.").with_inputs(
        "question"),
    dspy.Example(id="c", question="When was the world cup in Brazil?", long_answer="Brazil hosted in 1950 and 2014.",
                 ).with_inputs("question"),
    dspy.Example(id="d", question="Who wrote the song Yesterday?", long_answer="Paul McCartney wrote it.").with_inputs(
        "question"),
]


class Retriever(FakeRetriever):
    embedder = FakeEmbedder()


class RecordingEngine(ScriptedEngine):
    """Records every message of every request, demos included."""

    def __init__(self, rules: dict) -> None:
        super().__init__(rules)
        self.prompts: list[str] = []

    def complete(self, request):
        self.prompts.append("\n".join(m.text or "" for m in request.messages))
        return super().complete(request)


def compiled(k: int = 1):
    recipe = make_optimizer("knn-fewshot", metric=None, budget=Budget(demos=k))
    return recipe.compile(build_program("closed-book"), trainset=POOL, valset=[])


def configure() -> RecordingEngine:
    engine = RecordingEngine({"Without any passages": lambda _: {"long_answer": "An answer."}})
    dspy.configure(lm=dspy.LM("scripted/knn", engine=engine, cache=False, num_retries=0),
                   adapter=CompactJSONAdapter())
    return engine


def test_different_questions_get_different_demos():
    program = compiled(k=1)
    program.embedder = FakeEmbedder()
    football = program.nearest({"question": "Who won the world cup in 2018?"})
    song = program.nearest({"question": "Who sings the song Someone Like You?"})
    assert [ex.question for ex in football] == ["Who won the world cup in 2014?"]
    assert [ex.question for ex in song] == ["Who sings the song Hello?"]


def test_the_chosen_demos_reach_the_prompt_and_the_program_itself_is_unchanged():
    engine = configure()
    program = compiled(k=1)
    program.embedder = FakeEmbedder()
    program(question="Who won the world cup in 2018?")
    program(question="Who sings the song Someone Like You?")
    assert "Germany won in 2014." in engine.prompts[0] and "Adele" not in engine.prompts[0]
    assert "Adele sings Hello." in engine.prompts[1] and "Germany" not in engine.prompts[1]
    # the wrapped program still holds its seed demo; each call used a copy
    assert [d.long_answer for d in program.program.answer.demos] == [LONG_ANSWER]


def test_a_predictor_without_labels_in_the_pool_keeps_its_seed_demo():
    from disambig.programs.knn_demos import with_demos

    diva = build_program("diva", retriever=Retriever())
    copy = with_demos(diva, [POOL[0]])
    assert copy.closed_book.demos == [POOL[0]]  # has a long_answer
    assert copy.interpret.classify.demos == diva.interpret.classify.demos  # no gold types: the seed demo
    assert copy.verify.demos == []  # no demo in the paper, none in the pool
    assert copy.retriever is diva.retriever


def test_knn_artifact_saves_the_pool_as_json_and_loads_with_the_embedder_reattached(tmp_path):
    configure()
    recipe = make_optimizer("knn-fewshot", metric=None, budget=Budget(demos=1))
    program = recipe.compile(build_program("vanilla-rag", retriever=Retriever()), trainset=POOL)
    path = save_artifact(program, tmp_path / "vanilla-rag" / "asqa" / "knn-fewshot.json",
                         {"program": "vanilla-rag", "optimizer": "knn-fewshot", "knobs": {}, "retriever": ""})
    state = json.loads(path.read_text())
    assert [row["question"] for row in state["pool"]["examples"]] == [ex.question for ex in POOL]
    assert "evidence" not in state["pool"]["examples"][0] and "id" not in state["pool"]["examples"][0]
    assert pickles_under(tmp_path) == []
    loaded = load(path, retriever=Retriever())
    assert isinstance(loaded.embedder or loaded.index() and loaded.embedder, FakeEmbedder)
    question = {"question": "Who sings the song Someone Like You?"}
    assert [ex.question for ex in loaded.nearest(question)] == [ex.question for ex in program.nearest(question)]
