"""A server a benchmark measures: started on a free loopback port in a session of its own, waited for until it
answers, and stopped with every process group it made, however the measurement ends."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from bench.harness.machine import free_port

Ready = TypeVar("Ready")


@contextmanager
def serving(command: Callable[[int], list[str]], ready: Callable[[int], Ready | None], log: Path,
            env: Mapping[str, str] | None = None, timeout: float = 240.0) -> Iterator[tuple[int, int, Ready]]:
    """``command(port)`` until the block ends: yields (port, server PID, what ``ready(port)`` returned once it
    returned something). The server is stopped as a user would (SIGTERM); whatever of it is left after 30 s is
    killed, process group by process group (``disambig.cli.process_group.stop_group``)."""
    from disambig.cli.process_group import stop_group

    port = free_port()
    with open(log, "a", encoding="utf-8") as out:
        server = subprocess.Popen(command(port), env=None if env is None else dict(env), stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    groups = {server.pid}
    try:
        deadline = time.monotonic() + timeout
        while (answer := ready(port)) is None:
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
                raise RuntimeError(f"the server did not come up (exit {server.poll()}); its log ends:\n{tail}")
            time.sleep(0.2)
        groups |= {os.getpgid(pid) for pid in family(server.pid) if Path(f"/proc/{pid}").exists()}
        yield port, server.pid, answer
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        for group in groups:
            stop_group(group, grace=5)


def family(pid: int) -> set[int]:
    """``pid`` and every live process below it, read from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split() if entry.isdigit() else []
        except OSError:
            continue
        if fields and fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found, frontier = {pid}, {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found
