"""``disambig compile route``, ``route predict``, ``eval route --artifact`` and ``ask --interactive`` with a clarifying
route, through the command line with a scripted LM and the in-memory hybrid retriever."""

from __future__ import annotations

import json

import pytest
from program_fakes import scripted_lm
from route_fakes import FakeHybrid
from typer.testing import CliRunner

from disambig.cli import app
from disambig.programs import build_program
from disambig.programs.route import LinearModel, RoutePolicy

runner = CliRunner()
READINGS = ["Who wrote the 1851 novel Moby-Dick?", "Who wrote the 1956 film Moby Dick?"]


def rules() -> dict:
    return {
        "Decide why a question may be ambiguous": lambda _: {"reason": "book or film", "types": ["AmbObj"]},
        "Rewrite the ambiguous question": lambda _: {"sub_questions": READINGS},
        # closed-book knows only the whale; the RAG answer names an interpretation for every question
        "Without any": lambda user: {"long_answer": "Herman Melville wrote Moby-Dick." if "whale" in user
                                     else "I am not sure."},
        "Using only the numbered passages": lambda user: {"disambiguations": [
            {"question": "Which reading?", "answer": "1937" if "bridge" in user else "unknown", "passage": 1}]},
        "Write a long-form answer of at least three sentences": lambda user: {
            "long_answer": "The Golden Gate Bridge opened in 1937." if "bridge" in user else "It is unclear."},
    }


@pytest.fixture
def scripted(monkeypatch):
    lm, engine = scripted_lm(rules())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    hybrid = FakeHybrid()
    monkeypatch.setattr("disambig.retrieval.build_retriever", lambda *a, **kw: hybrid)
    return engine


def compile_route(asqa_file: str, tmp_path, *extra: str):
    result = runner.invoke(app, ["compile", "route", "--dataset", asqa_file, "--metric", "rouge-l", "--candidates",
                                 "closed-book,vanilla-rag", "--train", "3", "--val", "2", "--detector-train", "40",
                                 "--runs", str(tmp_path / "runs"), "--no-track", "--out", str(tmp_path / "art"),
                                 *extra])
    assert result.exit_code == 0, result.output
    state = tmp_path / "art" / "route" / "asqa-mini" / "policy.json"
    return result, state, json.loads((state.parent / "manifest.json").read_text())["policy"]


def test_compile_route_runs_the_candidates_then_saves_a_policy_that_predicts_and_evaluates(scripted, asqa_file,
                                                                                         tmp_path):
    result, state, manifest = compile_route(asqa_file, tmp_path)
    assert "held-out questions" in result.output and "oracle" in result.output
    # each candidate answered the 3 train and 2 dev questions once, into resumable eval folders
    for split, n in (("train", 3), ("dev", 2)):
        for program in ("closed-book", "vanilla-rag"):
            rows = (tmp_path / "runs" / f"asqa-mini-{split}" / program / "results.jsonl").read_text().splitlines()
            assert len(rows) == n
    assert manifest["knobs"]["candidates"] == ["closed-book", "vanilla-rag"]
    assert manifest["scores"]["train_size"] == 3 and manifest["scores"]["heldout_size"] == 2
    assert manifest["data"]["train"] != manifest["data"]["heldout"]
    saved = json.loads(state.read_text())
    assert saved["route_policy"]["detector"]["features"][-1] == "names_year"
    calls = len(scripted.calls)
    again, _, _ = compile_route(asqa_file, tmp_path)  # a second compile reuses every stored answer
    assert len(scripted.calls) == calls

    out = tmp_path / "decisions.jsonl"
    result = runner.invoke(app, ["route", "predict", "--artifact", str(state), "--dataset", asqa_file, "--out",
                                 str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and len(scripted.calls) == calls  # no answering program ran
    assert {r["action"] for r in rows} <= {"answer:closed-book", "answer:vanilla-rag"}
    assert all(0.0 <= r["p_ambiguous"] <= 1.0 for r in rows)

    result = runner.invoke(app, ["eval", "route", "--artifact", str(state), "--dataset", asqa_file, "--split", "dev",
                                 "--no-track", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    answered = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert len(answered) == 2 and all(r["prediction"]["action"].startswith("answer:") for r in answered)


def test_compile_route_refuses_a_bad_candidate_with_one_line(scripted, asqa_file, tmp_path):
    result = runner.invoke(app, ["compile", "route", "--dataset", asqa_file, "--candidates", "closed-book,dfa",
                                 "--no-track", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown route candidate 'dfa'" in result.output
    result = runner.invoke(app, ["compile", "vanilla-rag", "--dataset", asqa_file, "--candidates", "a,b",
                                 "--no-track", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "is for `disambig compile route`" in " ".join(result.output.split())


def test_ask_interactive_puts_the_readings_to_the_user_and_answers_the_chosen_one(scripted, tmp_path, monkeypatch):
    route = build_program("route", FakeHybrid(), candidates=["closed-book"], allow=["clarify"])
    actions = ("answer:closed-book", "clarify")
    route.policy_ = RoutePolicy("answer:closed-book", None, LinearModel(
        ("dense_gap",), actions, *[__import__("numpy").array(v) for v in ([0.0], [1.0], [[0.0]], [5.0])]))
    folder = tmp_path / "route" / "asqa"
    folder.mkdir(parents=True)
    from disambig.optimizers.artifact import save_artifact

    state = save_artifact(route, folder / "clarify.json", {"program": "route", "knobs": {
        "candidates": ["closed-book"], "allow": ["clarify"]}, "retriever": "hybrid:wiki-slice"})
    result = runner.invoke(app, ["ask", "Who wrote the white whale story?", "--program", "route", "--artifact",
                                 str(state), "--interactive"], input="2\n")
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert "2. Who wrote the 1956 film Moby Dick?" in shown and f"Answered as: {READINGS[1]}" in shown
    # closed-book was asked the chosen reading, not the original question
    asked = [user for phrase, user in scripted.calls if phrase == "Without any"]
    assert len(asked) == 1 and READINGS[1] in asked[0] and "white whale" not in asked[0]


def test_route_predict_reads_a_plain_question_table_without_gold(scripted, asqa_file, tmp_path):
    _, state, _ = compile_route(asqa_file, tmp_path)
    table = tmp_path / "new.csv"
    table.write_text("question\nWho wrote Moby Dick?\nWhen did the Golden Gate bridge open?\n", encoding="utf-8")
    calls = len(scripted.calls)
    out = tmp_path / "decisions.jsonl"
    result = runner.invoke(app, ["route", "predict", "--artifact", str(state), "--questions", str(table), "--out",
                                 str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["question"]) for r in rows] == [("0", "Who wrote Moby Dick?"),
                                                         ("1", "When did the Golden Gate bridge open?")]
    assert len(scripted.calls) == calls and all(r["action"].startswith("answer:") for r in rows)
    result = runner.invoke(app, ["route", "predict", "--artifact", str(state), "--questions", str(tmp_path / "no.csv"),
                                 "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code != 0 and not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--metric", "bogus"], "unknown metric 'bogus'; choose one of:"),
    (["--allow", "always"], "route cannot allow 'always'; optional actions: clarify, abstain"),
    (["--option", "closed-book.bogus=1"], "program 'closed-book' takes no option 'bogus'; its options:"),
    (["--option", "adf.style=asqa"], "--option adf.KEY=VALUE: 'adf' is not a candidate (closed-book, vanilla-rag)"),
    (["--cost-weight", "inf"], "cost weight inf must be a finite number of at least 0 (metric points one LM call "
                               "is worth)"),
    (["--name", "../../policy"], "--name '../../policy' must be a file name without folders, e.g. policy"),
    (["--out", "q.jsonl"], "--out 'q.jsonl' is a file, not a folder; give a folder to write"),
    (["--runs", "q.jsonl/runs"], "--runs 'q.jsonl/runs': 'q.jsonl' is a file, not a folder; write elsewhere"),
    (["--dataset", "missing.jsonl"], "no such file: missing.jsonl; the dataset is asqa, ambignq,"),
    (["--lm", "zzz"], "unknown LM spec 'zzz'; use 'local',"),
    (["--lm", "zzz/yy"], "LM spec 'zzz/yy': LiteLLM knows no provider 'zzz';"),
])
def test_compile_route_refuses_a_bad_job_before_the_lm_or_the_retriever(tmp_path, monkeypatch, asqa_file, extra,
                                                                       message):
    """Found by fuzzing the command line: each of these built the hybrid retriever over wiki-slice and the LM first
    (an unknown metric, a bad --out, --runs or --name and an unknown option after every candidate had answered)."""
    from dspy.clients.base_lm import BaseLM

    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(open(asqa_file, encoding="utf-8").read(), encoding="utf-8")
    monkeypatch.setattr("disambig.retrieval.build_retriever", lambda *a, **kw: pytest.fail("a retriever was built"))
    monkeypatch.setattr("disambig.lm.spec.local_file", lambda *a: pytest.fail("the embedded model was located"))
    monkeypatch.setattr(BaseLM, "__call__", lambda *a, **kw: pytest.fail("an LM was called"))
    given = dict(zip(extra[::2], extra[1::2], strict=True))
    args = {"--dataset": "q.jsonl", "--candidates": "closed-book,vanilla-rag", "--out": "art", **given}
    result = runner.invoke(app, ["compile", "route", "--no-track", *[p for pair in args.items() for p in pair]])
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert " ".join(result.output.split()).startswith(f"error: {message}"), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl"]
