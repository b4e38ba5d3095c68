"""An API key never lands in a file: ``ask``, ``eval`` (tracked, response cache on), ``compile`` (labeled-fewshot,
tracked and registered) and ``batch`` run as the real command line against a remote LM (``openai/echo`` at a scripted
OpenAI-compatible server on loopback, ``tests/openai_fakes.py``) with a sentinel key in ``OPENAI_API_KEY``; then every
file under the run's home, working, cache and MLflow folders, and the commands' output, is searched for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openai_fakes import MODEL, FakeOpenAI

SENTINEL = "sk-SENTINEL-7f3a9c2e51d04b8b"
CLI = ["-c", "from disambig.cli.app import main; main()"]


@pytest.fixture
def server():
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def asqa_rows(n: int) -> list[dict]:
    return [{"id": f"q{i:02d}", "question": f"Who won prize number {i}?",
             "qa_pairs": [{"question": f"Who won prize number {i}?", "short_answers": [f"winner {i}"]}],
             "annotations": [{"long_answer": f"The winner was winner {i}.", "knowledge": []}]} for i in range(n)]


def files_holding(root: Path, secret: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and secret in p.read_bytes())


def test_no_file_a_run_writes_holds_the_api_key(tmp_path, server):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    dataset = work / "q.jsonl"
    rows = asqa_rows(30)
    rows[1]["question"] += " BROKEN"  # the server answers HTTP 500 (retried once): an error message is stored too
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISAMBIG_", "MLFLOW_")) and "API_KEY" not in k}
    env |= {"OPENAI_API_KEY": SENTINEL, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
            "DISAMBIG_CACHE_DIR": str(home / ".cache" / "disambig"), "DISAMBIG_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}", "DISAMBIG_LM_RETRIES": "1"}
    remote = ["--lm", f"openai/{MODEL}", "--api-base", server.base]
    commands = [
        ["ask", "Who won prize number 3?", "--program", "closed-book", *remote],
        ["eval", "closed-book", "--dataset", str(dataset), "--limit", "4", "--cache", "--out", "runs/eval", *remote],
        ["compile", "closed-book", "--dataset", str(dataset), "--metric", "rouge-l", "--optimizer", "labeled-fewshot",
         "--train", "3", "--val", "2", "--out", "artifacts", *remote],
        ["batch", "artifacts/closed-book/q/labeled-fewshot.json", "-i", str(dataset), "-o", "answers.jsonl", *remote],
    ]
    for n, args in enumerate(commands):
        done = subprocess.run([sys.executable, *CLI, *args], env=env, cwd=work, capture_output=True, timeout=300)
        (work / f"command-{n}.log").write_bytes(done.stdout + done.stderr)
        assert done.returncode == 0, (args[0], done.stderr.decode()[-3000:])

    assert server.auth and all(a == f"Bearer {SENTINEL}" for a in server.auth)  # the key was really in use
    assert len(json.loads((work / "artifacts" / "closed-book" / "q" / "manifest.json").read_text())) == 1
    results = [json.loads(line) for line in (work / "runs" / "eval" / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in results if r["error"]] == ["q01"] and (work / "mlartifacts").is_dir()
    assert len((work / "answers.jsonl").read_text().splitlines()) == 30
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 20  # results, params, reports, plots, manifests, states, MLflow store and artifacts, logs
    assert files_holding(tmp_path, SENTINEL.encode()) == []
    assert files_holding(tmp_path, SENTINEL.removeprefix("sk-").encode()) == []
