"""Whole runs against a real model server on loopback (`disambig lm serve` with the embedded SmolLM2, one thread):
questions at once give the answers of one at a time, VerDICt's feedback calls at once give the answers of serial
calls, a server stopped in the middle of an eval leaves failed rows that a re-run, once a server is back, answers
without asking the others again, a compile's saved program answers through the server, and `score` judges there.

One server serves the module (a test that compares answers warms it first, so what earlier tests asked does not
matter); the test that stops a server mid-eval starts and kills its own. The warm-up runs run in this process
(Typer's runner): the same command, so the same requests, without a new interpreter's imports. Every server is
stopped, also when a test fails."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from test_lm_server import DISAMBIG, Server, child_env, served

pytestmark = pytest.mark.slow

PROMPT_WARMUP = "What is it?"
"""Asked first, closed-book, so that every compared question's prompt starts from a warm server cache: the server
reuses the prompt prefix it shares with the previous request, and the compared questions all differ from each other
and from this one at their first word (Who / When / How), so that shared prefix is the same whatever the order."""


def disambig(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
             ) -> subprocess.CompletedProcess:
    return subprocess.run([*DISAMBIG, *args], capture_output=True, text=True, timeout=timeout,
                          env={**child_env(tmp_path), **(env or {})})


def warm_up(tmp_path: Path, *args: str) -> None:
    """``disambig ARGS`` run in this process (Typer's runner, as tests/test_guide.py runs the guide), only to warm the
    server: the same command as in a subprocess, so the same requests, without a new interpreter importing DSPy (and
    torch and MiniLM for a dense retriever) again. The environment is the subprocesses' and is restored after, with
    what the command exports (``--api-base``, ``--parallel-calls``)."""
    from typer.testing import CliRunner

    from disambig.cli import app

    with mock.patch.dict(os.environ, child_env(tmp_path)):
        result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"


def remote(url: str) -> list[str]:
    return ["--lm", "openai/smollm2", "--api-base", url]


def eval_args(url: str, out: Path, dataset: str, *extra: str) -> list[str]:
    return ["eval", "closed-book", "--dataset", dataset, "--metric", "rouge-l", "--no-track", "--out", str(out),
            *remote(url), *extra]


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def written(out: Path) -> int:
    path = out / "results.jsonl"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def answers(out: Path) -> dict[str, tuple]:
    return {r["id"]: (r["prediction"]["long_answer"], r["trace"]["input_tokens"], r["trace"]["output_tokens"])
            for r in rows(out)}


@pytest.fixture(scope="module")
def module_server(tmp_path_factory) -> Iterator[tuple[Server, Path]]:
    """`disambig lm serve` (SmolLM2, one thread), started once for the module's tests and stopped after them; with
    its log."""
    folder = tmp_path_factory.mktemp("lm-server")
    with served(folder, "server") as server:
        yield server, folder / "server.out"


@pytest.fixture
def lm_server(module_server) -> Server:
    """The module's server, checked to be still running (a test before may have made it exit)."""
    server, log = module_server
    assert server.process.poll() is None, f"the module's server exited: {log.read_text()}"
    return server


def test_eval_with_two_questions_at_once_answers_as_one_at_a_time(lm_server, tmp_path, asqa_file):
    warm_up(tmp_path, "ask", PROMPT_WARMUP, "--program", "closed-book", *remote(lm_server.url))
    one = disambig(tmp_path, *eval_args(lm_server.url, tmp_path / "one", asqa_file, "--limit", "3", "--threads", "1"))
    assert one.returncode == 0, one.stderr
    two = disambig(tmp_path, *eval_args(lm_server.url, tmp_path / "two", asqa_file, "--limit", "3", "--threads", "2"))
    assert two.returncode == 0, two.stderr
    assert answers(tmp_path / "two") == answers(tmp_path / "one")  # answers and token counts
    assert len(answers(tmp_path / "one")) == 3 and all(not r["error"] for r in rows(tmp_path / "two"))
    assert all(into > 0 and out > 0 for _, into, out in answers(tmp_path / "two").values())  # the server's usage


def test_verdict_with_four_feedback_calls_at_once_answers_as_serial_calls(lm_server, tmp_path):
    from retrieval_fakes import PASSAGES, write_corpus

    corpus = write_corpus(tmp_path / "two.jsonl", PASSAGES[:2])  # two feedback calls (short replies keep it quick)

    def args(calls: str) -> list[str]:
        return ["ask", "What does the aardvark eat?", "--program", "verdict", "--retriever", "dense", "--corpus",
                corpus, "--option", "relax=false", "--option", "long_answer=list", "--parallel-calls", calls,
                *remote(lm_server.url)]

    def ask(calls: str) -> str:
        done = disambig(tmp_path, *args(calls))
        assert done.returncode == 0, done.stderr
        return re.sub(r"\d+\.\d+ s", "S s", done.stdout)  # everything but the wall time

    # warms the server's cache (and builds the dense index): each compared run follows the same last request, a
    # feedback call
    warm_up(tmp_path, *args("1"))
    serial, parallel = ask("1"), ask("4")
    assert parallel == serial  # readings, answers, cited passages, LM calls and tokens
    assert "LM calls 2" in serial  # one feedback call per passage


def test_a_server_stopped_mid_eval_leaves_failures_that_a_rerun_answers_alone(lm_server, tmp_path, asqa_file):
    """The server killed is the test's own; the re-run asks the module's server."""
    out = tmp_path / "run"
    args = ["--limit", "4", "--threads", "1"]
    fast_failure = {"DISAMBIG_LM_RETRIES": "0"}
    with served(tmp_path, "first") as first:
        running = subprocess.Popen([*DISAMBIG, *eval_args(first.url, out, asqa_file, *args)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env={**child_env(tmp_path), **fast_failure})
        try:
            deadline = time.monotonic() + 120
            while written(out) < 1:
                assert running.poll() is None, running.communicate()
                assert time.monotonic() < deadline, "no answer within 120 s"
                time.sleep(0.05)
            os.killpg(first.process.pid, signal.SIGKILL)  # the server dies while the second question is asked
            first.process.wait()
            _, stderr = running.communicate(timeout=120)
        finally:
            if running.poll() is None:
                running.kill()
    assert running.returncode == 0, stderr
    before = rows(out)
    assert len(before) == 4 and len({r["id"] for r in before}) == 4
    answered = {r["id"]: r for r in before if not r["error"]}
    failed = [r for r in before if r["error"]]
    assert answered and failed
    assert all(re.search(r"(?i)connect", r["error"]) for r in failed), failed  # reset, refused

    # --allow-mixed-code: the shared checkout may be edited between the two runs (its dirty stamp changes)
    again = disambig(tmp_path, *eval_args(lm_server.url, out, asqa_file, *args, "--allow-mixed-code"))
    assert again.returncode == 0, again.stderr
    after = rows(out)
    assert sorted(r["id"] for r in after) == sorted(r["id"] for r in before)  # one row per question, none lost
    assert all(not r["error"] for r in after)
    assert {r["id"]: r for r in after if r["id"] in answered} == answered  # not asked again (same times, stamps)


def test_a_compile_against_the_server_saves_a_program_that_then_answers_through_it(lm_server, tmp_path, asqa_file):
    compiled = disambig(tmp_path, "compile", "closed-book", "--dataset", asqa_file, "--metric", "rouge-l",
                        "--optimizer", "labeled-fewshot", "--train", "2", "--val", "2", "--threads", "2", "--no-track",
                        "--no-register", "--out", str(tmp_path / "art"), *remote(lm_server.url))
    assert compiled.returncode == 0, compiled.stderr
    state = tmp_path / "art" / "closed-book" / Path(asqa_file).stem / "labeled-fewshot.json"
    assert state.is_file() and "api_base" not in state.read_text() and lm_server.url not in state.read_text()
    answered = disambig(tmp_path, "ask", "Who painted the famous portrait?", "--program", "closed-book",
                        "--artifact", str(state), *remote(lm_server.url))
    assert answered.returncode == 0, answered.stderr
    assert "A: " in answered.stdout and "LM calls 1" in answered.stdout


def test_score_with_a_judge_on_the_server(lm_server, tmp_path, asqa_file):
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text(json.dumps({
        "id": "mini-1", "question": "Who wrote the novel about the white whale?",
        "long_answer": "Herman Melville wrote Moby-Dick in 1851.",
        "interpretations": [{"question": "Who wrote the 1851 novel Moby-Dick?", "answer": "Herman Melville",
                             "passage_ids": ["m"]}],
        "passages": [{"id": "m", "title": "Moby-Dick", "text": "Moby-Dick is an 1851 novel by Herman Melville."}],
    }) + "\n")
    scored = disambig(tmp_path, "score", str(answers_file), "--dataset", asqa_file, "-m", "g-precision",
                      "--judge-lm", "openai/smollm2", "--api-base", lm_server.url, "--out", str(tmp_path / "g.json"))
    assert scored.returncode == 0, scored.stderr
    result = json.loads((tmp_path / "g.json").read_text())
    assert 0.0 <= result["metrics"]["g-precision"] <= 1.0 and result["judge"]["judge_calls"] == 1
