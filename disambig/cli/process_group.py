"""Run a server command as its own process group, so that stopping this process stops everything it started.

A server (``uvicorn``, ``mlflow models serve``) may start processes of its own. Signalled alone, the command would
leave them running (still bound to the port), so it runs in a new session, every stop signal this process receives
is passed to that whole group, and the group is terminated (then killed) when the command ends for any reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_SECONDS = 10.0  # how long the group may take to stop after SIGTERM before it is killed


def run_as_group(command: Sequence[str], env: Mapping[str, str], grace: float = GRACE_SECONDS) -> int:
    """Run ``command`` as the leader of a new process group and return its exit status (128 + N when signal N
    ended it, as a shell reports it).

    SIGTERM, SIGINT and SIGHUP sent to this process go to the whole group; when the command exits, whatever it
    left in the group gets SIGTERM, and SIGKILL after ``grace`` seconds.
    """
    child = subprocess.Popen(list(command), env=dict(env), start_new_session=True)

    def forward(signum: int, _frame: object) -> None:
        signal_group(child.pid, signum)

    previous = {s: signal.signal(s, forward) for s in STOP_SIGNALS}
    try:
        status = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        stop_group(child.pid, grace)
    return status if status >= 0 else 128 - status


def signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to process group ``group``; False when no process is left in it."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


def stop_group(group: int, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM every process left in ``group``, wait up to ``grace`` seconds for them to go, then SIGKILL."""
    if not signal_group(group, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not group_alive(group):
            return
        time.sleep(0.1)
    signal_group(group, signal.SIGKILL)


def group_alive(group: int) -> bool:
    """Whether a live (not zombie) process is left in process group ``group`` (read from Linux's ``/proc``)."""
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc: ask the kernel whether the group has any member at all
        return signal_group(group, 0)
    for entry in entries:
        if entry.isdigit() and _live_member(int(entry), group):
            return True
    return False


def _live_member(pid: int, group: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rpartition(")")[2].split()  # after the command name, which may hold spaces
    except OSError:
        return False
    return fields[0] != "Z" and int(fields[2]) == group  # state, ppid, pgrp
