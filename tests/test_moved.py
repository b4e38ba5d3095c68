"""What was saved before programs/ got a folder per method (issue 39) still loads and answers, and a module path
from before the move still finds its class (``programs/moved.py``).

The fixtures in ``tests/fixtures/release-9e7fddc/`` were made with the code of 9e7fddc, the last release before the
move (``tests/release_9e7fddc.py``): the JSON state and manifest of ``verdict`` (now ``programs/verdict/``) and of
``dtv-pseudo`` (now ``programs/baselines/``), ``dtv-pseudo`` as ``disambig compile`` logged it to MLflow, and the
classes and functions of every module that moved. The states the project keeps from before the move (the shipped
``artifacts/`` and ``bench/results/*/compiled/``) load too.
"""

from __future__ import annotations

import json
import shutil
from importlib import import_module
from pathlib import Path

import pytest
from program_fakes import FakeEmbedder, FakeRetriever, configure_scripted
from release_9e7fddc import MEN, RULES, WOMEN, ListRetriever

from disambig.optimizers.artifact import read_manifest
from disambig.optimizers.loading import load
from disambig.programs.moved import MOVED, locate
from disambig.programs.registry import PROGRAMS, ProgramInfo, build_program, program_options

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT / "tests" / "fixtures" / "release-9e7fddc"
QUESTION = "Who has the most goals in football?"
STORED = sorted(p for pattern in ("artifacts/*/*/*.json", "bench/results/*/compiled/*/*/*.json")
                for p in ROOT.glob(pattern) if p.name != "manifest.json")


def demo_counts(program) -> dict[str, int]:
    return {name: len(predictor.demos) for name, predictor in program.named_predictors()}


def test_a_verdict_state_saved_at_the_last_release_loads_and_answers():
    _, engine = configure_scripted(RULES)
    program = load(RELEASE / "artifacts" / "verdict" / "toy" / "labeled-fewshot.json", retriever=ListRetriever())
    assert type(program).__module__ == "disambig.programs.verdict.program"
    assert demo_counts(program) == {"relaxer": 2, "feedback": 2, "writer": 2}  # LabeledFewShot, demos=2
    assert program.relaxer.demos[0]["question"] == "Who scored the most goals in league 1?"
    pred = program(question=QUESTION)
    # relax, one feedback call per passage (3), the long answer; three readings, each its passage's: HDBSCAN calls
    # all three points noise (fewer than a cluster and its neighbours), and noise is kept
    assert len(engine.calls) == 5 and pred.long_answer == "Men: Ronaldo. Women: Sinclair."
    assert [(i["question"], i["answer"], i["passage_ids"]) for i in pred.interpretations] == [
        (MEN, "Cristiano Ronaldo", ["p1"]), (WOMEN, "Christine Sinclair", ["p2"]), (MEN, "Cristiano Ronaldo", ["p3"])]


def test_a_baseline_state_saved_at_the_last_release_loads_and_answers():
    _, engine = configure_scripted(RULES)
    program = load(RELEASE / "artifacts" / "dtv-pseudo" / "toy" / "labeled-fewshot.json")
    assert type(program).__module__ == "disambig.programs.baselines.dtv_pseudo"
    assert demo_counts(program) == {"interpret.classify": 2, "interpret.rewrite": 2, "answerer": 2}
    assert program.interpret.rewrite.demos == [  # the rewrite step's own fields of the examples, as saved
        {"question": "Who scored the most goals in league 0?", "reason": "men or women 0"},
        {"question": "Who scored the most goals in league 1?", "reason": "men or women 1"}]
    pred = program(question=QUESTION)
    assert len(engine.calls) == 3  # typing, rewriting, one closed-book call for both readings
    assert [(i["question"], i["answer"]) for i in pred.interpretations] == [
        (MEN, "Cristiano Ronaldo"), (WOMEN, "Christine Sinclair")]


def scripted_serving_lm(settings):
    """``DISAMBIG_LM_FACTORY`` for the served model: the scripted LM of the fixtures."""
    from program_fakes import scripted_lm

    return scripted_lm(RULES)[0]


def test_an_mlflow_model_logged_at_the_last_release_loads_and_answers(tmp_path, monkeypatch):
    import mlflow

    model_dir = tmp_path / "model"
    shutil.copytree(RELEASE / "mlflow-model", model_dir)
    (model_dir / "serving_model.py.txt").rename(model_dir / "serving_model.py")  # the code file as MLflow wrote it
    monkeypatch.setenv("DISAMBIG_LM_FACTORY", f"{Path(__file__).resolve()}:scripted_serving_lm")
    model = mlflow.pyfunc.load_model(str(model_dir))
    (answer,) = model.predict([QUESTION])
    assert answer["error"] == "" and answer["trace"]["lm_calls"] == 3
    assert [(i["question"], i["answer"]) for i in answer["interpretations"]] == [
        (MEN, "Cristiano Ronaldo"), (WOMEN, "Christine Sinclair")]


def test_the_alias_table_names_every_module_that_moved_and_finds_each_of_its_names():
    defined = json.loads((RELEASE / "modules.json").read_text(encoding="utf-8"))  # at 9e7fddc
    assert set(MOVED) == set(defined)
    for old, names in defined.items():
        # each old target finds the object its module holds now (defined there, or imported from where it moved next)
        assert [name for name in names if locate(f"{old}:{name}") is not getattr(import_module(MOVED[old]), name)] \
            == [], old


@pytest.mark.parametrize(("target", "module"), [
    ("disambig.programs.adf_gate:AmbiguityGate", "disambig.programs.adf.gate"),
    ("disambig.programs.count_baselines:MapCount", "disambig.programs.baselines.count"),
    ("disambig.programs.expansion:GenQR", "disambig.programs.amd.expansion"),
    ("disambig.programs.verdict:VerDICt", "disambig.programs.verdict.program"),  # from the package
    ("disambig.programs.verdict:passage_text", "disambig.programs.verdict.program"),  # not exported: from program
    ("disambig.programs.amd:AMD", "disambig.programs.amd.program"),
    ("disambig.programs.diva:diversify", "disambig.programs.diva.program"),  # the function, not diva/diversify.py
    ("disambig.programs.amd:ExpansionSearch", "disambig.programs.amd.expanded_retrieval"),  # the registry's target
    ("disambig.programs.adf.gate:AmbiguityGate", "disambig.programs.adf.gate"),  # a path of today
    ("disambig.programs.rac:RAC", "disambig.programs.rac"),  # never moved
])
def test_locate_reads_a_module_that_moved_at_its_new_path(target, module):
    assert locate(target).__module__ == module


def test_locate_leaves_other_targets_to_the_import_system():
    with pytest.raises(ModuleNotFoundError, match="disambig.programs.nowhere"):
        locate("disambig.programs.nowhere:Thing")
    with pytest.raises(AttributeError, match="Nothing"):
        locate("disambig.programs.verdict:Nothing")


def test_a_registry_entry_with_a_module_path_from_before_the_move_builds_its_program(monkeypatch):
    from disambig.programs.baselines import ClosedBook

    monkeypatch.setitem(PROGRAMS, "old-closed-book", ProgramInfo("disambig.programs.closed_book:ClosedBook",
                                                                 "closed-book, registered as before the move", False))
    assert isinstance(build_program("old-closed-book"), ClosedBook)
    assert program_options("old-closed-book") == program_options("closed-book")


def stored_retriever(manifest: dict):
    """A fake retriever of the kind the artifact was compiled with: an expansion retriever for ``amd``."""
    from disambig.programs.amd.expanded_retrieval import SparseExpansion, make_expander

    kind = manifest.get("retriever", "").partition(":")[0]
    if manifest["program"] == "amd":
        return SparseExpansion(kind, FakeRetriever(), make_expander(kind.partition("-")[0]))
    retriever = FakeRetriever()
    retriever.embedder = FakeEmbedder()
    return retriever


@pytest.mark.parametrize("state_path", STORED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_state_compiled_before_the_move_loads_with_its_demos(state_path):
    program = load(state_path, retriever=stored_retriever(read_manifest(state_path)))
    state = json.loads(state_path.read_text(encoding="utf-8"))
    saved = {name: len(value["demos"]) for name, value in state.items() if isinstance(value, dict) and "demos" in value}
    assert demo_counts(program) == saved


def test_the_shipped_artifact_is_among_the_stored_states():
    assert ROOT / "artifacts" / "dfa" / "spiderqa-72" / "labeled-fewshot.json" in STORED
