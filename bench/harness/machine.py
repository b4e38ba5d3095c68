"""What a measurement records of the machine beside its figures: the load when it ran and the CPU; and a free
loopback port for a server it starts. (The code a row was made with is ``disambig.evaluation.code_version``.)"""

from __future__ import annotations

import os
import socket
from pathlib import Path


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


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
