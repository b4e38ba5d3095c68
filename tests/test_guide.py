"""``docs/guide.md`` as a user runs it: every command of its ```bash blocks, in order, then the guide's claims about
what those commands leave behind (the files in the working folder, the MLflow experiments, the registered model).

The commands start in a folder holding a copy of ``examples/`` (the checkout, as the guide says) and follow its
``cd``. A scripted OpenAI-compatible LM (``schema_openai``) is every command's default LM (``DISAMBIG_LM``,
``DISAMBIG_API_BASE``), so no model answers the programs, through the real remote-LM path. ``disambig ...`` runs
in-process (Typer's runner on the console app); a command ending in ``&`` starts as its own process group and is
waited for until its port answers, and all of them are stopped at the end; anything else (``mkdir``, ``cp``, ``cd``,
``curl``, ``mlflow ui``) runs in bash. Each port the guide names is mapped to a free one. ``disambig lm serve --model
local:smollm2`` loads the real SmolLM2-135M (that is the command), and the guide's ``ask --lm openai/smollm2`` is
answered by it. The indexes are built with the real Lucene and MiniLM into the test's cache folder.

``mlflow ui`` runs without MLflow's job runner (``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``), which serves the
GenAI scoring jobs the guide never starts: by default ``mlflow ui`` also starts it, eight more interpreters
importing MLflow (~50 s of CPU while the guide's next commands and ``serve`` start, and polling after), and its
parent then takes ~25 s to stop. The tracking server the guide opens is the same.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from disambig.cli import app

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide.md"
SHELL_OPERATORS = {"&&", "||", "|", ";", ">", ">>", "<"}
READY_TIMEOUT_S = 600  # a server's start on a loaded machine: `serve` took 206 s at a load average of 11


def guide_commands(text: str) -> list[str]:
    """The commands of the ```bash blocks of ``text``, in order: comment lines dropped, ``\\`` continuations joined."""
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        pending = ""
        for line in block.splitlines():
            line = pending + line.strip()
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1].rstrip() + " "
            elif line and not line.startswith("#"):
                commands.append(line)
    return commands


def test_guide_commands_are_read_from_its_bash_blocks():
    text = "x\n```bash\ncp a b  # copy\n# a comment\ndisambig ask \\\n  \"q?\" &\n```\n```python\nno\n```\n"
    assert guide_commands(text) == ["cp a b  # copy", 'disambig ask "q?" &']


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Session:
    """The user's shell: the working folder a ``cd`` moves, the guide's ports mapped to free ones, and the servers
    started in the background."""

    cwd: Path
    env: dict[str, str]
    logs: Path
    ports: dict[str, str] = field(default_factory=dict)
    background: list[tuple[str, subprocess.Popen, Path]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)

    def local(self, command: str) -> str:
        """``command`` with each port the guide names (``--port N``, ``127.0.0.1:N``) replaced by a free port."""
        def mapped(match: re.Match) -> str:
            port = self.ports.setdefault(match.group(2), str(free_port()))
            return match.group(1) + port

        return re.sub(r"(--port |127\.0\.0\.1:|localhost:)(\d+)", mapped, command)

    def run(self, command: str, monkeypatch: pytest.MonkeyPatch) -> None:
        command = self.local(command)
        words = shlex.split(command, comments=True)
        if words[-1] == "&":
            self.start(command.rsplit("&", 1)[0].strip())
        elif words[0] == "disambig" and not SHELL_OPERATORS & set(words):
            monkeypatch.chdir(self.cwd)
            result = CliRunner().invoke(app, words[1:])
            assert result.exit_code == 0, f"{command}\n{result.output}"
            self.outputs.append((command, result.output))
        else:
            self.bash(command)

    def bash(self, command: str) -> None:
        where = self.logs / "pwd"
        script = f"{command}\nstatus=$?\npwd > {shlex.quote(str(where))}\nexit $status\n"
        done = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        self.cwd = Path(where.read_text().strip())
        self.outputs.append((command, done.stdout))

    def start(self, command: str) -> None:
        """Start ``command`` as its own process group, then wait until its ``--port`` answers HTTP."""
        log = self.logs / f"background-{len(self.background)}.log"
        with log.open("w") as handle:
            process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.cwd, env=self.env, stdout=handle,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append((command, process, log))
        port = re.search(r"--port (\d+)", command)
        assert port, f"a background command without --port: {command}"
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            assert process.poll() is None, f"{command} exited with {process.returncode}:\n{log.read_text()}"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/", timeout=5).close()
                return
            except urllib.error.HTTPError:
                return  # it answered
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"{command} did not answer within {READY_TIMEOUT_S} s:\n{log.read_text()}")

    def stop(self) -> None:
        for _, process, _ in self.background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for _, process, _ in self.background:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def scripted_server():
    from schema_openai import SchemaOpenAI

    server = SchemaOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def mlflow_state():
    """MLflow keeps the stores it opened by URI, and the guide's ``sqlite:///mlflow.db`` is relative: forget them
    after the test, so no later test in the process writes to this test's folder."""
    import mlflow
    from mlflow.tracking._model_registry.registry import ModelRegistryStoreRegistry
    from mlflow.tracking._tracking_service.registry import TrackingStoreRegistry

    previous = mlflow.get_tracking_uri()
    yield
    TrackingStoreRegistry._get_store_with_resolved_uri.cache_clear()
    ModelRegistryStoreRegistry._get_store_with_resolved_uri.cache_clear()
    mlflow.set_tracking_uri(previous)


@pytest.mark.slow
def test_every_command_of_the_guide_runs_and_leaves_what_it_says(tmp_path, monkeypatch, scripted_server,
                                                                   mlflow_state):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    subprocess.run(["cp", "-r", str(ROOT / "examples"), str(checkout)], check=True)
    for name in ("MLFLOW_TRACKING_URI", "DISAMBIG_JUDGE_LM", "DISAMBIG_LM_CACHE", "DISAMBIG_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings = {"DISAMBIG_LM": "openai/scripted", "DISAMBIG_API_BASE": scripted_server.base,
                "DISAMBIG_CACHE_DIR": str(tmp_path / "cache"), "DISAMBIG_THREADS": "1", "HF_HUB_OFFLINE": "1",
                "OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "true",
                "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # `mlflow ui` without its job runner (module docstring)
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    logs = tmp_path / "logs"
    logs.mkdir()
    session = Session(checkout, dict(os.environ), logs)
    commands = guide_commands(GUIDE.read_text(encoding="utf-8"))
    try:
        for command in commands:
            session.run(command, monkeypatch)
        for command, process, log in session.background:
            assert process.poll() is None, f"{command} stopped early:\n{log.read_text()}"
        ui = f"http://127.0.0.1:{session.ports['5000']}/api/2.0/mlflow/experiments/search?max_results=10"
        with urllib.request.urlopen(ui, timeout=60) as reply:  # what `mlflow ui` shows
            shown = {e["name"] for e in json.loads(reply.read())["experiments"]}
        assert {"disambig-eval", "disambig-compile"} <= shown
    finally:
        session.stop()

    work = session.cwd
    assert work == tmp_path / "keldmouth"
    assert not {"mlflow.db", "mlartifacts", "artifacts", "runs"} & {p.name for p in checkout.iterdir()}
    state = work / "artifacts" / "diva" / "questions" / "calibrated.json"
    manifest = json.loads((state.parent / "manifest.json").read_text())["calibrated"]
    assert state.is_file() and manifest["retriever"] == "hybrid:examples/corpus.jsonl" and manifest["metric"] == "dr"
    for run in ("diva-questions-all-all", "diva-questions-all-all-calibrated"):
        assert {"results.jsonl", "report.json", "tradeoff.png"} <= {p.name for p in (work / "runs" / run).iterdir()}
    answers = [json.loads(line) for line in (work / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 5 and not any(row.get("error") for row in answers)
    compile_run = assert_tracked(work)
    assert (manifest["mlflow_run_id"], manifest["mlflow_model"]) == (compile_run, "models:/disambig-diva-questions/1")
    replies = dict(session.outputs)
    assert any('"predictions"' in out for cmd, out in replies.items() if "/invocations" in cmd)
    assert any('"lm": "openai/scripted"' in out for cmd, out in replies.items() if cmd.endswith("/ping"))
    assert scripted_server.completions > 0


def assert_tracked(work: Path) -> str:
    """The guide's MLflow section: both experiments in the working folder's ``mlflow.db`` with their artifacts in its
    ``mlartifacts/``, the compile's run named ``diva-questions-calibrated``, and the registered model
    ``disambig-diva-questions`` version 1. Returns the compile's run id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{work / 'mlflow.db'}")
    runs = {}
    for name in ("disambig-eval", "disambig-compile"):
        experiment = client.get_experiment_by_name(name)
        assert experiment.artifact_location == (work / "mlartifacts").as_uri()
        runs[name] = client.search_runs([experiment.experiment_id])
    assert len(runs["disambig-eval"]) == 2 and len(runs["disambig-compile"]) == 1
    assert runs["disambig-compile"][0].info.run_name == "diva-questions-calibrated"
    assert [int(v.version) for v in client.search_model_versions("name='disambig-diva-questions'")] == [1]
    return runs["disambig-compile"][0].info.run_id
