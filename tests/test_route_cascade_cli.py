"""``disambig compile route --cascade``, ``route predict`` of a cascade (refused without the first candidate's
answers, read from ``--first-run``) and ``eval route --artifact`` of one, with a scripted LM and the in-memory hybrid
retriever."""

from __future__ import annotations

import json

import pytest
from test_route_cli import scripted  # noqa: F401 - the route CLI tests' scripted LM and retriever
from typer.testing import CliRunner

from disambig.cli import app

runner = CliRunner()


def compile_cascade(asqa_file: str, tmp_path, *extra: str):
    return runner.invoke(app, ["compile", "route", "--dataset", asqa_file, "--metric", "rouge-l", "--cascade",
                               "closed-book,vanilla-rag", "--train", "3", "--val", "2", "--runs",
                               str(tmp_path / "runs"), "--no-track", "--out", str(tmp_path / "art"), *extra])


def test_compile_a_cascade_then_predict_from_the_first_run_and_evaluate(scripted, asqa_file, tmp_path):  # noqa: F811
    result = compile_cascade(asqa_file, tmp_path)
    assert result.exit_code == 0, result.output
    assert "held-out questions" in result.output and "escalated" in result.output
    state = tmp_path / "art" / "route" / "asqa-mini" / "cascade.json"
    manifest = json.loads((state.parent / "manifest.json").read_text())["cascade"]
    assert manifest["optimizer"] == "route-cascade" and manifest["knobs"]["candidates"] == ["closed-book",
                                                                                            "vanilla-rag"]
    assert manifest["detector_features"] == 0 and "cascade_cv_worth" in manifest["fit"]
    saved = json.loads(state.read_text())["route_cascade"]
    assert (saved["first"], saved["escalate"]) == ("closed-book", "vanilla-rag")
    calls = len(scripted.calls)

    out = tmp_path / "decisions.jsonl"
    result = runner.invoke(app, ["route", "predict", "--artifact", str(state), "--dataset", asqa_file, "--split",
                                 "dev", "--out", str(out)])
    assert result.exit_code == 2 and not out.exists()
    shown = " ".join(result.output.split())
    assert "is a cascade (closed-book first, then vanilla-rag)" in shown and "--first-run" in shown

    first_run = tmp_path / "runs" / "asqa-mini-dev" / "closed-book"
    result = runner.invoke(app, ["route", "predict", "--artifact", str(state), "--dataset", asqa_file, "--split",
                                 "dev", "--out", str(out), "--first-run", str(first_run)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and len(scripted.calls) == calls  # no answering program ran
    assert all(r["program"] == ("vanilla-rag" if r["escalated"] else "closed-book") for r in rows)
    assert all("answer_cut" in r["features"] and "dense_top1" in r["features"] for r in rows)

    result = runner.invoke(app, ["route", "predict", "--artifact", str(state), "--dataset", asqa_file, "--split",
                                 "train", "--out", str(tmp_path / "t.jsonl"), "--first-run", str(first_run)])
    assert result.exit_code == 2 and "has no answer to 3 of 3 questions" in " ".join(result.output.split())

    result = runner.invoke(app, ["eval", "route", "--artifact", str(state), "--dataset", asqa_file, "--split", "dev",
                                 "--no-track", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    answered = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert len(answered) == 2
    assert all("cascade" in r["trace"]["notes"]["route"] for r in answered)


@pytest.mark.parametrize("extra, message", [
    (["--cascade", "closed-book"], "names 1 program(s); give two"),
    (["--cascade", "closed-book,vanilla-rag,adf"], "names 3 program(s)"),
    (["--cascade", "closed-book,vanilla-rag", "--candidates", "closed-book,adf"], "disagrees with --cascade"),
    (["--cascade", "closed-book,dfa"], "unknown route candidate 'dfa'"),
    (["--cascade", "closed-book,vanilla-rag", "--allow", "abstain"], "cannot also allow abstain"),
    (["--cascade-thresholds", "0.4,0.6", "--candidates", "closed-book,vanilla-rag"], "add --cascade"),
    (["--cascade", "closed-book,vanilla-rag", "--cascade-thresholds", "0.4,high"], "give comma-separated"),
    (["--cascade", "closed-book,vanilla-rag", "--cascade-thresholds", "0.5,1.5"], "give comma-separated"),
])
def test_a_bad_cascade_is_one_line(scripted, asqa_file, tmp_path, extra, message):  # noqa: F811
    result = runner.invoke(app, ["compile", "route", "--dataset", asqa_file, "--no-track", "--out", str(tmp_path),
                                 *extra])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    assert not scripted.calls


def test_cascade_is_refused_for_another_program(scripted, asqa_file, tmp_path):  # noqa: F811
    result = runner.invoke(app, ["compile", "vanilla-rag", "--dataset", asqa_file, "--cascade", "a,b", "--no-track",
                                 "--out", str(tmp_path)])
    shown = " ".join(result.output.split())
    assert result.exit_code == 2 and "--cascade and --cascade-thresholds are for" in shown and "'vanilla-rag'" in shown
