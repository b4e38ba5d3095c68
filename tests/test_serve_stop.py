"""Stopping ``disambig serve`` stops the server it started: its process group is signalled, waited for, and killed.

The group logic is checked on a tiny stand-in server (a shell that starts a sleeping grandchild); the slow test runs
the real command on a closed-book compile logged to an MLflow store in the test's folder, with the scripted LM of
``batch_fakes`` (no model loads), and stops it by its PID as a user would.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from disambig.cli.process_group import run_as_group


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, their children...), read from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_a_command_that_exits_leaves_nothing_of_its_group_behind(tmp_path):
    """The command exits at once but leaves a grandchild behind (as a server's worker would): it is stopped too."""
    marker = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {marker}; exit 3"
    assert run_as_group(["sh", "-c", script], os.environ, grace=5) == 3
    grandchild = int(marker.read_text())
    assert wait_until(lambda: not alive(grandchild), 5)


def test_sigterm_to_the_runner_reaches_the_whole_group(tmp_path):
    """A runner (as ``disambig serve`` runs it) is sent SIGTERM: its command and the command's child both stop."""
    marker = tmp_path / "grandchild.pid"
    code = ("import os, sys; from disambig.cli.process_group import run_as_group; "
            f"sys.exit(run_as_group(['sh', '-c', 'sleep 300 & echo $! > {marker}; wait'], os.environ))")
    runner = subprocess.Popen([sys.executable, "-c", code])
    assert wait_until(lambda: marker.exists() and marker.read_text().strip(), 30)
    below = descendants(runner.pid)
    assert len(below) >= 2  # the shell and its sleep
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) == 128 + signal.SIGTERM
    assert wait_until(lambda: not any(alive(pid) for pid in below), 15), [p for p in below if alive(p)]


@pytest.mark.slow
def test_sigterm_to_disambig_serve_stops_the_server_and_frees_the_port(tmp_path):
    import dspy
    from batch_fakes import FACTORY
    from dspy.utils import DummyLM

    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.optimizers.compile import CompileJob, compile_program
    from disambig.optimizers.recipes import Budget
    from disambig.optimizers.tracking import log_compile_run
    from disambig.programs import build_program

    dspy.configure(lm=DummyLM([{"long_answer": "Person X won it."}] * 20, adapter=CompactJSONAdapter()),
                   adapter=CompactJSONAdapter())
    examples = [dspy.Example(question=f"Who won prize {i}?", long_answer=f"Person {i} won it.").with_inputs("question")
                for i in range(3)]
    job = CompileJob("closed-book", "toy", "mentions", "labeled-fewshot", Budget(demos=1))
    compiled = compile_program(job, build_program("closed-book"), examples, examples[:1], lambda e, p, t=None: 1.0,
                               tmp_path / "artifacts", {"train": "x", "heldout": "y"})
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    model_uri = log_compile_run(compiled, uri=store, register=False)["model_uri"]

    port = free_port()
    env = {**os.environ, "DISAMBIG_LM_FACTORY": FACTORY, "DISAMBIG_CACHE_DIR": str(tmp_path / "cache")}
    command = [str(Path(sys.executable).with_name("disambig")), "serve", model_uri, "--port", str(port),
               "--tracking-uri", store]
    server = subprocess.Popen(command, env=env, cwd=tmp_path)
    try:
        assert wait_until(lambda: _pings(port), 240), "the server never answered /ping"
        assert _post(port, b'{"inputs": ["Who won prize 1?"]}')[0] == 200
        assert _post(port, b'{"inputs": [123]}')[0] == 400  # the served app refuses, as test_serving_requests shows
        assert _post(port, b'{"inputs": ["' + b"x" * 1_000_001 + b'"]}')[0] == 413  # the default 1 MB limit
        below = descendants(server.pid)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        assert wait_until(lambda: not any(alive(pid) for pid in below), 30), [p for p in below if alive(p)]
        assert not port_open(port)
    finally:
        if server.poll() is None:
            server.kill()


def _post(port: int, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _pings(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
