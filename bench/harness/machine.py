"""What a measurement records of the machine beside its figures: the load when it ran and the CPU, also as a line
a run folder keeps per sitting (``record_sitting``, since a run resumed later may finish on another machine); and a
free loopback port for a server it starts. (The code a row was made with is ``disambig.evaluation.code_version``.)"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from disambig.data.jsonl import append_line, appended_lines

SITTINGS = "machine.jsonl"  # a run folder's sittings: one line each time a runner starts or ends it


def load1() -> float:
    """The 1-minute load average now, to two decimals."""
    return round(os.getloadavg()[0], 2)


def cpu_name() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` ("unknown" elsewhere)."""
    info = Path("/proc/cpuinfo")
    for line in info.read_text().splitlines() if info.exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def record_sitting(folder: Path, **fields: object) -> None:
    """Append one line to ``folder``'s sittings: the time, the CPU, the load and the rows answered so far, and
    ``fields`` (the event, the commit)."""
    results = folder / "results.jsonl"
    rows = sum(1 for line in appended_lines(results) if line and line.strip()) if results.exists() else 0
    line = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpu": cpu_name(), "cores": os.cpu_count(),
            "load1": load1(), "rows": rows, **fields}
    folder.mkdir(parents=True, exist_ok=True)
    append_line(folder / SITTINGS, json.dumps(line))


def sitting_cpus(folder: Path) -> list[str]:
    """The CPUs of the sittings that answered questions in a run folder (an end line holding more rows than the
    sitting's start), in first-seen order; empty when the folder records none. A cut or damaged line is skipped."""
    path = folder / SITTINGS
    cpus, started = [], None
    for line in appended_lines(path) if path.exists() else []:
        try:
            sitting = json.loads(line or "")
        except json.JSONDecodeError:
            continue
        if sitting.get("event") == "start":
            started = sitting.get("rows", 0)
        elif sitting.get("event") == "end" and started is not None and sitting.get("rows", 0) > started:
            cpus.append(sitting.get("cpu", "unknown"))
            started = None
    return list(dict.fromkeys(cpus))


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
