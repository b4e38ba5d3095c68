"""How many CPU threads the embedded LM gets when the user sets none: the cores this process may use that other
processes are not already keeping busy.

llama.cpp's threads wait for each other at every layer, so one thread more than the free cores does not just share
a core: it stalls all the others (on a 2-core machine running another job, ``lm check`` took 5.4 s with 1 thread and
did not finish in 240 s with 2). The number of cores is what the process may run on (its CPU affinity, and a cgroup
CPU quota when there is one); the busy ones are the 1-minute load average, read before this process starts its own
work.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

MAX_AUTO_THREADS = 8  # decode is bound by memory bandwidth: more threads than this add little and cost others cores
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def choose_threads(usable_cores: int, busy: float, most: int = MAX_AUTO_THREADS) -> int:
    """``usable_cores`` minus the cores ``busy`` keeps occupied (rounded), clamped to ``1..min(usable_cores, most)``.

    >>> choose_threads(2, 0.0), choose_threads(2, 0.4), choose_threads(2, 0.6), choose_threads(2, 3.0)
    (2, 2, 1, 1)
    >>> choose_threads(64, 1.2)
    8
    """
    free = usable_cores - int(math.floor(busy + 0.5))  # round half up: a job at 0.5 of a core counts as one
    return max(1, min(free, usable_cores, most))


def free_threads() -> int:
    """``choose_threads`` for this machine now: its usable cores and its 1-minute load average."""
    return choose_threads(usable_cores(), load_average())


def usable_cores(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The cores this process may run on: its CPU affinity, lowered to a cgroup v2 CPU quota (``cpu.max``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_quota(cpu_max)
    return max(1, min(cores, math.ceil(quota)) if quota else cores)


def cgroup_quota(cpu_max: Path = CGROUP_CPU_MAX) -> float | None:
    """The cgroup v2 quota in cores (``"200000 100000"`` -> 2.0); None when unlimited or unreadable."""
    try:
        quota, _, period = cpu_max.read_text(encoding="ascii").partition(" ")
        return int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):  # no cgroup v2, or "max" (no limit)
        return None


def load_average() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def check_threads(threads: int, flag: str = "--threads") -> None:
    """Refuse more in-process LM threads than the cores this process may use (``usable_cores``), before a model
    loads: llama.cpp's threads wait for each other at every layer, so a thread without a core stalls the rest.

    Raises:
        ConfigurationError: one line naming the value, the cores and the fix.
    """
    from disambig.errors import ConfigurationError

    cores = usable_cores()
    if threads > cores:
        raise ConfigurationError(f"{flag} {threads} is more than the {cores} core(s) this process may use; the "
                                 f"in-process model stalls on threads without a core: give at most {cores}")


def memory_mb() -> int | None:
    """The machine's physical memory in MB (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (AttributeError, ValueError, OSError):
        return None
