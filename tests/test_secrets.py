"""An API key never lands in a file: ``ask``, ``eval`` (tracked, response cache on), ``compile`` (labeled-fewshot,
tracked and registered), ``batch`` and ``serve`` (of the registered compile, asked over HTTP) run as the real command
line against a remote LM (``openai/echo`` at a scripted OpenAI-compatible server on loopback,
``tests/openai_fakes.py``) with a sentinel key in ``OPENAI_API_KEY``; then every file under the run's home, working,
cache, temporary and MLflow folders, the commands' output and the server's replies, is searched for it. ``ask`` runs
in the second test, in the same environment (plus ``LITELLM_LOG=DEBUG``, which leaves DSPy's own engine carrying
the call), and again with LiteLLM carrying the call and its debug loggers on; the first test runs the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openai_fakes import MODEL, FakeOpenAI
from test_serve_stop import _post

pytestmark = pytest.mark.slow  # whole commands in subprocesses, and `serve`

SENTINEL = "sk-SENTINEL-7f3a9c2e51d04b8b"
CLI = ["-c", "from disambig.cli.app import main; main()"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def server():
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def bench_load(monkeypatch):
    """``bench/reliability/load.py``, whose ``served`` starts and stops ``disambig serve`` as a user would."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.reliability import load

    return load


def asqa_rows(n: int) -> list[dict]:
    return [{"id": f"q{i:02d}", "question": f"Who won prize number {i}?",
             "qa_pairs": [{"question": f"Who won prize number {i}?", "short_answers": [f"winner {i}"]}],
             "annotations": [{"long_answer": f"The winner was winner {i}.", "knowledge": []}]} for i in range(n)]


def files_holding(root: Path, secret: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and secret in p.read_bytes())


def assert_no_file_holds_the_key(root: Path) -> None:
    assert files_holding(root, SENTINEL.encode()) == []
    assert files_holding(root, SENTINEL.removeprefix("sk-").encode()) == []


def run_env(tmp_path: Path) -> dict[str, str]:
    """The commands' environment: the sentinel as the only key; HOME, caches, temporary files and the MLflow store
    (in the working folder) under ``tmp_path``."""
    home, work = tmp_path / "home", tmp_path / "work"
    for folder in (home, work, tmp_path / "tmp"):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISAMBIG_", "MLFLOW_", "LITELLM_"))
           and "API_KEY" not in k and k not in ("OPENAI_BASE_URL", "OPENAI_API_BASE")}
    return env | {"OPENAI_API_KEY": SENTINEL, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                  "TMPDIR": str(tmp_path / "tmp"), "DISAMBIG_CACHE_DIR": str(home / ".cache" / "disambig"),
                  "DISAMBIG_THREADS": "1", "HF_HUB_OFFLINE": "1", "DISAMBIG_LM_RETRIES": "1",
                  "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}"}


def run(args: list[str], env: dict[str, str], work: Path, log: str, cli: list[str] = CLI) -> str:
    """``disambig ARGS`` run in ``work``; its stdout and stderr are kept in ``work / log`` and returned."""
    done = subprocess.run([sys.executable, *cli, *args], env=env, cwd=work, capture_output=True, timeout=300)
    (work / log).write_bytes(done.stdout + done.stderr)
    assert done.returncode == 0, (args[0], done.stderr.decode()[-3000:])
    return (done.stdout + done.stderr).decode(errors="replace")


def test_no_file_a_run_writes_holds_the_api_key(tmp_path, server, bench_load, monkeypatch):
    env, work = run_env(tmp_path), tmp_path / "work"
    dataset = work / "q.jsonl"
    rows = asqa_rows(30)
    rows[1]["question"] += " BROKEN"  # the server answers HTTP 500 (retried once): an error message is stored too
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    remote = ["--lm", f"openai/{MODEL}", "--api-base", server.base]
    commands = [  # `ask`: the second test
        ["eval", "closed-book", "--dataset", str(dataset), "--limit", "4", "--cache", "--out", "runs/eval", *remote],
        ["compile", "closed-book", "--dataset", str(dataset), "--metric", "rouge-l", "--optimizer", "labeled-fewshot",
         "--train", "3", "--val", "2", "--out", "artifacts", "--register-anyway", *remote],  # served below, gain or not
        ["batch", "artifacts/closed-book/q/labeled-fewshot.json", "-i", str(dataset), "-o", "answers.jsonl", *remote],
    ]
    for n, args in enumerate(commands):
        run(args, env, work, f"command-{n}.log")

    # `serve` of the compile registered above (`serve` takes its LM from DISAMBIG_LM), started in the working folder
    # (whatever it writes there is searched too; its copy of the model goes to TMPDIR) and stopped by SIGTERM to
    # `disambig serve`; one question answered, one whose LM call fails (HTTP 500, retried once), one body not JSON.
    monkeypatch.chdir(work)
    sent_before = len(server.auth)
    bodies = [b'{"inputs": ["Who won the served prize?"]}', b'{"inputs": ["Who won the served prize? BROKEN"]}',
              b'{"inputs": ["unclosed']
    with bench_load.served("models:/disambig-closed-book-q/1", env["MLFLOW_TRACKING_URI"],
                           env | {"DISAMBIG_LM": f"openai/{MODEL}"}, ["--api-base", server.base],
                           work / "serve.log") as (port, _):
        replies = [_post(port, body) for body in bodies]
        downloaded = [p.name for p in (tmp_path / "tmp").rglob("*") if p.is_file()]  # the served copy of the model
        assert_no_file_holds_the_key(tmp_path)
    (work / "serve-replies.json").write_text(json.dumps(replies), encoding="utf-8")
    (answered, _), (failed, _), (refused, _) = replies
    assert (answered, failed, refused) == (200, 200, 400), replies
    answer, error = (json.loads(replies[i][1])["predictions"][0] for i in (0, 1))
    assert answer["long_answer"] == "Scripted answer to Who won the served prize?" and not answer["error"]
    assert "scripted server error" in error["error"]
    assert "labeled-fewshot.json" in downloaded and len(server.auth) > sent_before

    assert server.auth and all(a == f"Bearer {SENTINEL}" for a in server.auth)  # the key was really in use
    assert len(json.loads((work / "artifacts" / "closed-book" / "q" / "manifest.json").read_text())) == 1
    results = [json.loads(line) for line in (work / "runs" / "eval" / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in results if r["error"]] == ["q01"] and (work / "mlartifacts").is_dir()
    assert len((work / "answers.jsonl").read_text().splitlines()) == 30
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 20  # results, params, reports, plots, manifests, states, MLflow store and artifacts, logs
    assert_no_file_holds_the_key(tmp_path)


def test_litellms_debug_log_does_not_print_the_api_key(tmp_path, server):
    """``ask`` with ``LITELLM_LOG=DEBUG``, as run (DSPy's own engine carries ``openai/*`` to an api_base; LiteLLM is
    not loaded), then with ``OPENAI_BASE_URL`` set, which makes DSPy hand the call to LiteLLM, and LiteLLM's debug
    loggers turned on (``LITELLM_LOG`` sets only its handler's level; its loggers stay at the root logger's WARNING):
    LiteLLM's debug lines, the request it sends among them, are printed, without the key."""
    env, work = run_env(tmp_path), tmp_path / "work"
    env |= {"LITELLM_LOG": "DEBUG"}
    ask = ["ask", "Who won prize number 3?", "--program", "closed-book", "--lm", f"openai/{MODEL}",
           "--api-base", server.base]
    run(ask, env, work, "ask-litellm-log.log")
    debug_cli = ["-c", "import litellm; litellm.turn_on_debug(); from disambig.cli.app import main; main()"]
    gateway = env | {"OPENAI_BASE_URL": server.base, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    logged = run(ask, gateway, work, "ask-litellm-debug.log", cli=debug_cli)

    assert "LiteLLM:DEBUG" in logged and "POST Request Sent from LiteLLM" in logged  # the debug log was on
    assert len(server.auth) == 4 and all(a == f"Bearer {SENTINEL}" for a in server.auth)  # 2 × (GET /models, call)
    assert_no_file_holds_the_key(tmp_path)
