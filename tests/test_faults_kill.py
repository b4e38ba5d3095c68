"""``eval``, ``batch`` and ``compile`` killed with SIGKILL (the real command line in a subprocess, a scripted LM slow
enough to be caught mid-run), then run again: the rows of the finished run equal an uninterrupted run's, none lost,
none twice, and no half-written file is left where a reader would load it.

Two kill moments: part-way through the questions (the parent sends SIGKILL once some rows are on disk), and at the
rename that publishes a report, manifest or table (the child kills itself there, ``tests/cli_scripted.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from batch_fakes import FACTORY

from disambig.optimizers.artifact import save_artifact
from disambig.programs import build_program

pytestmark = pytest.mark.slow  # whole commands in subprocesses, each run three or four times

CLI = Path(__file__).with_name("cli_scripted.py")
DELAY_S = 0.3
N_ROWS = 16  # 4 rows before the kill leave the others ~2 s: a kill the machine's load delays still comes first
KILLED = -signal.SIGKILL


def asqa_rows(n: int) -> list[dict]:
    return [{"id": f"q{i:02d}", "question": f"Who won prize number {i}?",
             "qa_pairs": [{"question": f"Who won prize number {i}?", "short_answers": [f"winner {i}"]}],
             "annotations": [{"long_answer": f"The winner was winner {i}.", "knowledge": []}]} for i in range(n)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    """The whole rows of a JSONL file (a line being written, or torn by a kill, is skipped as the readers skip it)."""
    rows = []
    for line in path.read_bytes().split(b"\n") if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def env(tmp_path: Path, log: str, delay: float = DELAY_S, **extra: str) -> dict[str, str]:
    return {**os.environ, "DISAMBIG_LM_FACTORY": FACTORY, "DISAMBIG_SCRIPTED_DELAY": str(delay),
            "DISAMBIG_SCRIPTED_LOG": str(tmp_path / f"{log}.calls"), "DISAMBIG_CACHE_DIR": str(tmp_path / "cache"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "HF_HUB_OFFLINE": "1",
            "OMP_WAIT_POLICY": "PASSIVE", "DISAMBIG_THREADS": "1", **extra}


def run(args: list[str], environment: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CLI), *args], env=environment, cwd=cwd, capture_output=True, text=True,
                          timeout=180)


def run_killed(args: list[str], environment: dict[str, str], cwd: Path, when: Callable[[], bool]) -> None:
    """Start the command, SIGKILL it as soon as ``when()`` holds (it must not finish before)."""
    child = subprocess.Popen([sys.executable, str(CLI), *args], env=environment, cwd=cwd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not when():
        assert child.poll() is None, f"finished before the kill point: {child.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "the kill point never came"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == KILLED


def calls(tmp_path: Path, log: str) -> int:
    path = tmp_path / f"{log}.calls"
    return len(path.read_text().splitlines()) if path.exists() else 0


def ids(rows: list[dict]) -> list[str]:
    return sorted(str(r["id"]) for r in rows)


# ---- eval ---------------------------------------------------------------------------------------------------------


def eval_args(dataset: Path, out: Path) -> list[str]:
    """The eval; ``--allow-mixed-code`` because a shared checkout may change between a kill and its rerun (refusing
    answers from other code is tested in ``test_cli_eval_compile``)."""
    return ["eval", "closed-book", "--dataset", str(dataset), "--lm", "scripted/echo", "--threads", "2", "--no-track",
            "--allow-mixed-code", "--out", str(out)]


def test_eval_killed_mid_run_then_while_publishing_its_report_resumes_with_no_row_lost_or_repeated(tmp_path):
    dataset = write_jsonl(tmp_path / "q.jsonl", asqa_rows(N_ROWS))
    full = run(eval_args(dataset, tmp_path / "full"), env(tmp_path, "full", delay=0), tmp_path)
    assert full.returncode == 0, full.stderr
    results, report = tmp_path / "run" / "results.jsonl", tmp_path / "run" / "report.json"
    run_killed(eval_args(dataset, tmp_path / "run"), env(tmp_path, "run"), tmp_path,
               lambda: len(read_jsonl(results)) >= 4)
    kept = ids(read_jsonl(results))
    assert 4 <= len(kept) < N_ROWS and not report.exists()
    asked_before = calls(tmp_path, "run")
    killed = run(eval_args(dataset, tmp_path / "run"), env(tmp_path, "run", KILL_AT_REPLACE="report.json"), tmp_path)
    assert killed.returncode == KILLED and f"resuming: {len(kept)} of {N_ROWS}" in killed.stderr
    assert not report.exists()  # killed at the rename: no half-written report
    assert calls(tmp_path, "run") - asked_before == N_ROWS - len(kept)  # only the missing rows were asked again
    again = run(eval_args(dataset, tmp_path / "run"), env(tmp_path, "run"), tmp_path)
    assert again.returncode == 0, again.stderr
    assert calls(tmp_path, "run") - asked_before == N_ROWS - len(kept)  # the last run asked nothing
    assert ids(read_jsonl(results)) == ids(read_jsonl(tmp_path / "full" / "results.jsonl"))  # none lost or twice
    reports = [json.loads((tmp_path / d / "report.json").read_text()) for d in ("full", "run")]
    assert reports[0]["metrics"] == reports[1]["metrics"] and reports[1]["questions"] == N_ROWS


# ---- batch --------------------------------------------------------------------------------------------------------


@pytest.fixture
def state(tmp_path) -> str:
    return str(save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                             {"program": "closed-book", "optimizer": "none"}))


def batch_args(state: str, source: Path, out: Path) -> list[str]:
    return ["batch", state, "-i", str(source), "-o", str(out), "--threads", "1"]


def batch_rows(out: Path) -> list[dict]:
    """What a reader of the batch finds: its table, and the rows journalled since the table's last write."""
    return read_jsonl(out) + [r for r in read_jsonl(out.with_name(f".{out.name}.rows.jsonl"))]


def test_batch_killed_mid_run_then_while_publishing_its_table_resumes_with_no_row_lost_or_repeated(tmp_path, state):
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": r["id"], "question": r["question"]} for r in asqa_rows(N_ROWS)])
    full = run(batch_args(state, source, tmp_path / "full.jsonl"), env(tmp_path, "full", delay=0), tmp_path)
    assert full.returncode == 0, full.stderr
    out = tmp_path / "out.jsonl"
    run_killed(batch_args(state, source, out), env(tmp_path, "run"), tmp_path, lambda: len(batch_rows(out)) >= 4)
    kept = ids(batch_rows(out))
    assert 4 <= len(kept) < N_ROWS
    asked_before = calls(tmp_path, "run")
    # the rerun first publishes the table with the journalled rows folded in: killed at that rename, it keeps them
    killed = run(batch_args(state, source, out), env(tmp_path, "run", KILL_AT_REPLACE=out.name), tmp_path)
    assert killed.returncode == KILLED and ids(batch_rows(out)) == kept and calls(tmp_path, "run") == asked_before
    again = run(batch_args(state, source, out), env(tmp_path, "run"), tmp_path)
    assert again.returncode == 0, again.stderr
    assert calls(tmp_path, "run") - asked_before == N_ROWS - len(kept)  # only the missing rows were asked again
    rows = read_jsonl(out)
    assert ids(rows) == ids(read_jsonl(tmp_path / "full.jsonl"))  # nothing lost, nothing twice
    answers = {r["id"]: r["long_answer"] for r in read_jsonl(tmp_path / "full.jsonl")}
    assert {r["id"]: r["long_answer"] for r in rows} == answers
    assert not out.with_name(f".{out.name}.rows.jsonl").exists()


# ---- compile ------------------------------------------------------------------------------------------------------


def compile_args(dataset: Path, out: Path, *extra: str) -> list[str]:
    return ["compile", "closed-book", "--dataset", str(dataset), "--metric", "rouge-l", "--optimizer",
            "labeled-fewshot", "--train", "4", "--val", "6", "--threads", "1", "--no-track", "--out", str(out), *extra]


def compiled(out: Path, dataset: Path) -> Path:
    return out / "closed-book" / dataset.stem


def test_compile_killed_mid_run_then_while_publishing_its_manifest_keeps_the_folder_and_matches_an_uninterrupted_one(
        tmp_path):
    dataset = write_jsonl(tmp_path / "q.jsonl", asqa_rows(40))
    full = run(compile_args(dataset, tmp_path / "full"), env(tmp_path, "full", delay=0), tmp_path)
    assert full.returncode == 0, full.stderr
    out = tmp_path / "art"
    assert run(compile_args(dataset, out, "--name", "earlier"), env(tmp_path, "earlier", delay=0),
               tmp_path).returncode == 0
    folder = compiled(out, dataset)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    run_killed(compile_args(dataset, out), env(tmp_path, "run"), tmp_path, lambda: calls(tmp_path, "run") >= 3)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # the earlier compile is untouched
    killed = run(compile_args(dataset, out), env(tmp_path, "run", delay=0, KILL_AT_REPLACE="manifest.json"), tmp_path)
    assert killed.returncode == KILLED and (folder / "manifest.json").read_bytes() == before["manifest.json"]
    asked = run(["ask", "Who won?", "--artifact", str(folder / "labeled-fewshot.json"), "--program", "closed-book"],
                env(tmp_path, "ask", delay=0), tmp_path)
    assert asked.returncode == 2 and "has no entry for 'labeled-fewshot.json'" in asked.stderr  # never loaded
    again = run(compile_args(dataset, out), env(tmp_path, "run", delay=0), tmp_path)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    reference = json.loads((compiled(tmp_path / "full", dataset) / "manifest.json").read_text())["labeled-fewshot"]
    assert sorted(manifest) == ["earlier", "labeled-fewshot"]  # one entry each: nothing lost, nothing twice
    for key in ("scores", "fingerprint", "data", "state_file"):
        assert manifest["labeled-fewshot"][key] == reference[key]
    assert (folder / "labeled-fewshot.json").read_text() == (
        compiled(tmp_path / "full", dataset) / "labeled-fewshot.json").read_text()
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".tmp")) == [
        "earlier.json", "labeled-fewshot.json", "manifest.json"]
