"""A temporary file a writer killed at its rename left beside the target (``.NAME.XXXXXXXX.tmp``) is deleted by the
next write of that target once it is ``STALE_AFTER_S`` old; a recent one, one a writer still holds (its ``flock``),
and files named otherwise are left alone."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disambig.data.atomic import STALE_AFTER_S, copy_file, write_text

TESTS = Path(__file__).resolve().parent
KILLED_WRITE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from cli_scripted import kill_at_replace
from disambig.data.atomic import write_text
kill_at_replace(Path(sys.argv[2]).name)
write_text(Path(sys.argv[2]), "new\\n")
"""


def killed_write(target: Path) -> Path:
    """Write ``target`` in a process that SIGKILLs itself at the rename; returns the temporary file it left."""
    child = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(TESTS), str(target)], timeout=60)
    assert child.returncode == -signal.SIGKILL
    (left,) = [p for p in target.parent.iterdir() if p != target]
    return left


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_temporary_file_a_killed_write_left_is_removed_by_the_next_write_once_stale(tmp_path):
    target = write_text(tmp_path / "report.json", "old\n")
    left = killed_write(target)
    assert target.read_text() == "old\n" and re.fullmatch(r"\.report\.json\.[a-z0-9_]{8}\.tmp", left.name)
    write_text(target, "newer\n")
    assert left.exists()  # just left: as far as the next write can tell, another writer's, still at work
    age(left, STALE_AFTER_S + 1)
    write_text(target, "newest\n")
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"] and target.read_text() == "newest\n"


def test_copying_onto_the_target_removes_it_too(tmp_path):
    left = tmp_path / ".data.jsonl.abcd_123.tmp"
    left.write_text("half")
    age(left, STALE_AFTER_S + 1)
    copy_file(write_text(tmp_path / "source.jsonl", "{}\n"), tmp_path / "data.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl", "source.jsonl"]


@pytest.mark.parametrize("name", [".report.json.backup.tmp", ".report.json.abcdefghi.tmp", ".report.json.ABCDEFGH.tmp",
                                  ".report.json.abcdefgh.tmp.kept", "report.json.abcdefgh.tmp",
                                  ".other.json.abcdefgh.tmp", ".report.json.x.abcdefgh.tmp"])
def test_files_not_named_as_the_targets_temporary_files_stay(tmp_path, name):
    other = tmp_path / name
    other.write_text("someone else's")
    age(other, STALE_AFTER_S + 1)
    write_text(tmp_path / "report.json", "new\n")
    assert other.read_text() == "someone else's"


def test_an_old_temporary_file_a_writer_still_holds_stays(tmp_path):
    held = tmp_path / ".report.json.abcdefgh.tmp"
    held.write_text("being written")
    age(held, STALE_AFTER_S + 1)
    with held.open("rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # as write_bytes holds its own until the rename
        write_text(tmp_path / "report.json", "new\n")
        assert held.exists()
    write_text(tmp_path / "report.json", "newer\n")
    assert not held.exists()
