"""Two ``disambig index build`` processes on one index do not interleave: the lock file
``{cache}/index-locks/{index}.lock`` (fcntl, with the holder's PID) makes the second wait, saying which PID it waits
for, then keep what the first built; a lock left by a killed process is taken over. Real subprocesses over the
four-passage corpus, BM25 (a JVM each, no encoder)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disambig.retrieval.build_lock import build_lock, holder, lock_path
from disambig.retrieval.factory import index_path
from disambig.retrieval.store import read_index, work_dir

DISAMBIG = [sys.executable, "-c", "from disambig.cli import main; main()"]
HOLD = """
import sys, time
from pathlib import Path
from disambig.retrieval.build_lock import build_lock
with build_lock(Path(sys.argv[1])):
    print("held", flush=True)
    while not Path(sys.argv[2]).exists():
        time.sleep(0.05)
"""


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def lock(corpus, cache) -> Path:
    return lock_path(work_dir(cache, corpus, "bm25", {}))


def build(corpus: str, cache: Path, log: Path) -> subprocess.Popen:
    """``disambig index build --kind bm25`` in a subprocess, its log lines (stderr) written to ``log``."""
    env = {**os.environ, "DISAMBIG_CACHE_DIR": str(cache), "COLUMNS": "300"}
    with log.open("w") as err:
        return subprocess.Popen([*DISAMBIG, "index", "build", "--corpus", corpus, "--kind", "bm25"], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, text=True)


def hold(lock: Path, release: Path) -> subprocess.Popen:
    """A process holding ``lock`` until ``release`` exists, as a first build still running would."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), str(release)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
def test_two_builds_of_one_index_wait_their_turn_and_it_is_built_once(corpus, cache, lock, tmp_path):
    first_build = hold(lock, tmp_path / "release")
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    builds = [build(corpus, cache, log) for log in logs]
    waiting = f"another index build (PID {first_build.pid}) holds {lock}; waiting"
    wait_for(lambda: all(waiting in log.read_text() for log in logs))  # both reached the lock and wait at it
    assert [b.poll() for b in builds] == [None, None] and not index_path("bm25", corpus, cache).exists()

    (tmp_path / "release").touch()
    first_build.wait(timeout=30)
    assert [b.wait(timeout=300) for b in builds] == [0, 0], [log.read_text() for log in logs]
    built = [log for log in logs if "building the bm25 index" in log.read_text()]
    assert len(built) == 1  # the second to get the lock found the index finished and kept it
    manifest, passages = read_index(index_path("bm25", corpus, cache), corpus, "bm25")
    assert manifest["passages"] == len(passages) == 4
    assert holder(lock) == ""  # released: no PID left in the lock file


@pytest.mark.slow
def test_a_lock_left_by_a_killed_build_is_taken_over(corpus, cache, lock, tmp_path):
    killed = hold(lock, tmp_path / "never")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=30)
    assert holder(lock) == str(killed.pid)  # its PID stays in the file, but the kernel dropped its lock

    process = build(corpus, cache, tmp_path / "build.log")
    assert process.wait(timeout=300) == 0
    log = (tmp_path / "build.log").read_text()
    assert f"taking over {lock} from PID {killed.pid}" in log and "waiting" not in log, log
    assert read_index(index_path("bm25", corpus, cache), corpus, "bm25")[0]["passages"] == 4


def test_the_lock_holds_the_pid_while_held_and_nothing_after(tmp_path):
    path = tmp_path / "x.lock"
    for _ in range(2):
        with build_lock(path):
            assert holder(path) == str(os.getpid())
        assert holder(path) == ""
