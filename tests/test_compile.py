"""Compile, save, load and serve with a scripted LM: JSON state only, fingerprints checked, MLflow records."""

from __future__ import annotations

import json

import dspy
import pytest
from dspy.utils import DummyLM
from pickle_scan import pickles_under

from disambig.errors import ConfigurationError
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.artifact import read_manifest
from disambig.optimizers.compile import CompileJob, compile_program
from disambig.optimizers.fingerprint import fingerprint
from disambig.optimizers.loading import load
from disambig.optimizers.recipes import Budget
from disambig.programs import build_program


def toy_examples(n: int, offset: int = 0) -> list[dspy.Example]:
    return [
        dspy.Example(id=f"t{i}", question=f"Who won prize {i}?", long_answer=f"Person {i} won it.")
        .with_inputs("question")
        for i in range(offset, offset + n)
    ]


def mentions_person(example, pred, trace=None):
    return float("Person" in pred.long_answer)


def scripted_lm() -> DummyLM:
    return DummyLM([{"long_answer": "Person X won it."}] * 50, adapter=CompactJSONAdapter())


@pytest.fixture
def compiled(tmp_path):
    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    job = CompileJob("closed-book", "toy", "mentions", "labeled-fewshot", Budget(demos=2))
    return compile_program(job, build_program("closed-book"), toy_examples(4), toy_examples(3, offset=10),
                           mentions_person, tmp_path / "artifacts", {"train": "x", "heldout": "y"})


def test_compile_scores_before_and_after_and_saves_json_state(compiled):
    assert compiled.before == 1.0 and compiled.after == 1.0
    assert compiled.state_path.name == "labeled-fewshot.json"
    state = json.loads(compiled.state_path.read_text())
    assert len(state["answer"]["demos"]) == 2
    manifest = read_manifest(compiled.state_path)
    assert manifest["program"] == "closed-book" and manifest["scores"]["before"] == 1.0
    assert manifest["fingerprint"] == fingerprint(build_program("closed-book"))
    assert manifest["structure"] == [{"predictor": "answer", "inputs": ["question"], "outputs": ["long_answer"]}]
    assert "dspy" in manifest["versions"]
    assert manifest["lm"] == "local" and manifest["lm_model"].endswith(".gguf")


def test_saved_demos_keep_only_their_signature_fields(compiled):
    """The training rows carry an ``id`` the signature does not use; the saved state leaves it out."""
    demos = json.loads(compiled.state_path.read_text())["answer"]["demos"]
    assert [sorted(d) for d in demos] == [["long_answer", "question"]] * 2
    assert {d["question"] for d in demos} <= {e.question for e in toy_examples(4)}


def test_load_round_trip_gives_identical_predictions(compiled):
    loaded = load(compiled.state_path)
    assert [d.toDict() if hasattr(d, "toDict") else d for d in loaded.answer.demos] == \
        json.loads(compiled.state_path.read_text())["answer"]["demos"]
    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    first = loaded(question="Who won prize 99?").long_answer
    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    again = load(compiled.state_path)(question="Who won prize 99?").long_answer
    assert first == again == "Person X won it."


def test_fingerprint_mismatch_is_refused(compiled):
    manifest_path = compiled.state_path.parent / "manifest.json"
    entries = json.loads(manifest_path.read_text())
    entries["labeled-fewshot"]["fingerprint"] = "0000000000000000"
    manifest_path.write_text(json.dumps(entries))
    with pytest.raises(ConfigurationError, match="recompile"):
        load(compiled.state_path)


def test_state_carrying_an_lm_endpoint_is_not_trusted(compiled):
    state = json.loads(compiled.state_path.read_text())
    state["answer"]["lm"] = {"model": "openai/x", "api_base": "http://127.0.0.1:9"}
    compiled.state_path.write_text(json.dumps(state))
    with pytest.raises(ConfigurationError, match="api_base"):
        load(compiled.state_path)


def test_missing_artifact_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        load(tmp_path / "nope.json")


def test_mlflow_records_the_compile_and_registers_a_model_without_pickle(compiled, tmp_path):
    import mlflow

    from disambig.optimizers.tracking import log_compile_run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = log_compile_run(compiled, uri=uri)
    client = mlflow.MlflowClient(uri)
    run = client.get_run(out["run_id"])
    assert run.data.metrics["score_after"] == 1.0 and run.data.params["program"] == "closed-book"
    assert {a.path for a in client.list_artifacts(out["run_id"], "state")} == {
        "state/labeled-fewshot.json", "state/manifest.json"}
    assert out["registered"] == "models:/disambig-closed-book-toy/1"
    assert pickles_under(tmp_path) == []

    mlflow.set_tracking_uri(uri)
    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    loaded = load(out["registered"])
    assert len(loaded.answer.demos) == 2


@pytest.mark.slow
def test_pyfunc_model_answers_a_question(compiled, tmp_path, monkeypatch):
    import mlflow

    from disambig.optimizers.tracking import log_compile_run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = log_compile_run(compiled, uri=uri)
    mlflow.set_tracking_uri(uri)
    monkeypatch.setenv("DISAMBIG_LM", "local:qwen2.5-0.5b")  # the small model: the end-to-end tests stay fast
    model = mlflow.pyfunc.load_model(out["registered"])
    (answer,) = model.predict(["Who has the highest goals in world football?"])
    assert isinstance(answer["long_answer"], str) and answer["long_answer"]
    assert answer["trace"]["lm_calls"] == 1


def test_the_none_recipe_keeps_the_programs_own_demos(tmp_path):
    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    program = build_program("closed-book")
    own = json.loads(json.dumps(program.dump_state()["answer"]["demos"], default=str))
    job = CompileJob("closed-book", "toy", "mentions", "none", Budget(demos=2))
    result = compile_program(job, program, toy_examples(4), toy_examples(2, offset=10), mentions_person,
                             tmp_path / "artifacts", {"train": "x", "heldout": "y"})
    state = json.loads(result.state_path.read_text())
    assert state["answer"]["demos"] == own
    assert "Person 0" not in json.dumps(state)  # no training example became a demo


def test_the_served_model_refuses_count_inputs_for_a_question_only_program():
    from disambig.serving.model import CompiledProgram

    served = CompiledProgram()
    served.program, served.lm, served.adapter = build_program("closed-book"), scripted_lm(), CompactJSONAdapter()
    ok, refused = served.predict(None, [{"question": "Who won prize 1?", "id": "ignored"},
                                        {"question": "Who won prize 2?", "scope": "air"}])
    assert ok["error"] == "" and ok["long_answer"] == "Person X won it."
    assert "takes only a question; scope is an input" in refused["error"] and refused["trace"]["lm_calls"] == 0
    assert refused["question"] == "Who won prize 2?"
    no_question, answered = served.predict(None, [{"scope": "air"}, {"question": "Who won prize 3?"}])
    assert no_question["error"] == "ValueError: the row has no question" and answered["error"] == ""
    with pytest.raises(ValueError, match="needs a 'question' field"):
        served.predict(None, {"questions": ["Who won prize 1?"]})


def test_the_served_model_reads_the_numpy_values_mlflows_server_hands_it():
    """Over HTTP, ``inputs``/``instances`` arrive as numpy arrays: a single value as a 0-d array, JSON null as a 0-d
    object array; a dict of columns may mix one value with a column of them."""
    import numpy as np

    from disambig.serving.model import CompiledProgram

    served = CompiledProgram()
    served.program, served.lm, served.adapter = build_program("closed-book"), scripted_lm(), CompactJSONAdapter()
    (single,) = served.predict(None, {"question": np.array("Who won prize 1?")})
    assert single["error"] == "" and single["question"] == "Who won prize 1?"
    records = served.predict(None, [{"question": np.array("Who won prize 2?"), "scope": np.array(None)},
                                    {"question": np.array(None)}])
    assert [r["error"] for r in records] == ["", "ValueError: the row has no question"]
    nested = served.predict(None, [{"question": np.array(["a", "b"])}])
    assert nested[0]["error"] == "ValueError: question must be a single value per row"
    with pytest.raises(ValueError, match="differ in length"):
        served.predict(None, {"question": np.array(["a", "b"]), "scope": np.array(["x"])})


def test_serve_runs_the_scoring_app_with_this_python_on_the_fetched_model(monkeypatch):
    """The server is this Python's uvicorn running ``serving.app.create_app`` (MLflow's scoring server behind the body
    limit) on the model folder fetched from the tracking store, with the timeout and the limits it is given."""
    import sys
    from contextlib import contextmanager

    from typer.testing import CliRunner

    from disambig.cli import app, process_group, serve_cmd

    seen = {}

    @contextmanager
    def fetched(model_uri, store):
        seen.update(model_uri=model_uri, store=store)
        yield "/models/dfa"

    monkeypatch.setattr(serve_cmd, "downloaded", fetched)
    monkeypatch.setattr(process_group, "run_as_group", lambda command, env: seen.update(command=command, env=env) or 0)
    monkeypatch.setattr("disambig.lm.server.check_port", lambda host, port: None)  # port 5077 may be busy here
    result = CliRunner().invoke(app, ["serve", "models:/disambig-dfa-spiderqa-72/1", "--port", "5077",
                                      "--tracking-uri", "sqlite:///x.db", "--max-request-bytes", "2048",
                                      "--max-concurrent", "2", "--max-queue", "5"])
    assert result.exit_code == 0, result.output
    command, env = seen["command"], seen["env"]
    assert command[:5] == [sys.executable, "-m", "uvicorn", "--factory", "disambig.serving.app:create_app"]
    assert command[command.index("--port") + 1] == "5077" and command[command.index("--host") + 1] == "127.0.0.1"
    assert (seen["model_uri"], seen["store"]) == ("models:/disambig-dfa-spiderqa-72/1", "sqlite:///x.db")
    assert env["DISAMBIG_SERVE_MODEL_PATH"] == "/models/dfa" and env["MLFLOW_TRACKING_URI"] == "sqlite:///x.db"
    assert env["MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT"] == "1800" and env["DISAMBIG_MAX_REQUEST_BYTES"] == "2048"
    assert (env["DISAMBIG_SERVE_MAX_CONCURRENT"], env["DISAMBIG_SERVE_MAX_QUEUE"]) == ("2", "5")
    refused = CliRunner().invoke(app, ["serve", "artifacts/dfa/spiderqa-72/labeled-fewshot.json"])
    assert refused.exit_code != 0 and "not an MLflow model URI" in refused.output


def test_a_teacher_lm_writes_the_bootstrapped_demos_and_the_manifest_names_it(tmp_path):
    """The student's own replies fail the metric, the teacher's pass: the compiled demos are the teacher's replies,
    the held-out scores are the student's, and the manifest names both LMs."""
    student = DummyLM([{"long_answer": "Nobody knows."}] * 50, adapter=CompactJSONAdapter())
    teacher = DummyLM([{"long_answer": "Person T won it."}] * 50, adapter=CompactJSONAdapter())
    dspy.configure(lm=student, adapter=CompactJSONAdapter())
    job = CompileJob("closed-book", "toy", "mentions", "bootstrap", Budget(demos=2), teacher_lm_spec="local:smollm2")
    result = compile_program(job, build_program("closed-book"), toy_examples(4), toy_examples(2, offset=10),
                             mentions_person, tmp_path / "artifacts", {"train": "x", "heldout": "y"},
                             {"lm": student, "teacher_lm": teacher})
    demos = json.loads(result.state_path.read_text())["answer"]["demos"]
    assert [demo["long_answer"] for demo in demos] == ["Person T won it."] * 2
    assert result.before == 0.0 and result.after == 0.0  # the student still answers, with the teacher's demos
    assert result.state_path.name == "bootstrap-teacher.json"  # not the plain bootstrap's file
    manifest = read_manifest(result.state_path)
    assert manifest["teacher_lm"] == "local:smollm2" and manifest["teacher_lm_model"].endswith(".gguf")
    assert manifest["new_demos"] == 2


def test_without_a_teacher_the_students_failing_traces_give_no_bootstrapped_demo(tmp_path):
    student = DummyLM([{"long_answer": "Nobody knows."}] * 50, adapter=CompactJSONAdapter())
    dspy.configure(lm=student, adapter=CompactJSONAdapter())
    job = CompileJob("closed-book", "toy", "mentions", "bootstrap", Budget(demos=2))
    result = compile_program(job, build_program("closed-book"), toy_examples(4), toy_examples(2, offset=10),
                             mentions_person, tmp_path / "artifacts", {"train": "x", "heldout": "y"}, {"lm": student})
    demos = json.loads(result.state_path.read_text())["answer"]["demos"]
    # no trace passed, so the demos are training rows as labeled, not the student's replies
    answers = [demo["long_answer"] for demo in demos]
    assert len(answers) == 2 and set(answers) <= {f"Person {i} won it." for i in range(4)}
    assert read_manifest(result.state_path)["teacher_lm"] == ""


@pytest.mark.parametrize("optimizer", ["labeled-fewshot", "knn-fewshot", "none", "gepa", "simba"])
def test_a_teacher_lm_for_a_recipe_that_bootstraps_nothing_is_refused(optimizer):
    from disambig.optimizers.recipes import make_optimizer

    with pytest.raises(ConfigurationError, match="--teacher-lm writes bootstrapped demos"):
        make_optimizer(optimizer, mentions_person, Budget(), lm=scripted_lm(), teacher_lm=scripted_lm())


@pytest.mark.parametrize("optimizer", ["bootstrap", "bootstrap-rs", "mipro"])
def test_every_bootstrapping_recipe_hands_the_teacher_to_dspy(optimizer):
    from disambig.optimizers.recipes import make_optimizer

    teacher = scripted_lm()
    made = make_optimizer(optimizer, mentions_person, Budget(), lm=scripted_lm(), teacher_lm=teacher)
    assert made.teacher_settings == {"lm": teacher}
    assert not make_optimizer(optimizer, mentions_person, Budget(), lm=scripted_lm()).teacher_settings


def test_a_teacher_spec_is_checked_up_front_and_the_programs_own_model_is_no_teacher():
    from disambig.optimizers.recipes import teacher_spec

    assert teacher_spec("local:qwen2.5-1.5b", "local:qwen2.5-0.5b") == "local:qwen2.5-1.5b"
    assert teacher_spec("local:qwen2.5-1.5b", "local") == ""  # `local` is the 1.5B: the same model
    assert teacher_spec(None, "local") == "" and teacher_spec("", "local") == ""
    with pytest.raises(ConfigurationError, match="no embedded model 'qwen2.5-1.5'"):
        teacher_spec("local:qwen2.5-1.5", "local")
