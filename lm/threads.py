"""How many CPU threads the embedded LM gets when the user sets none: the cores this process may use that other
processes are not already keeping busy.

llama.cpp's threads wait for each other at every layer, so one thread more than the free cores does not just share
a core: it stalls all the others (on a 2-core machine running another job, ``lm check`` took 5.4 s with 1 thread and
did not finish in 240 s with 2). The number of cores is what the process may run on (its CPU affinity, and a cgroup
CPU quota when there is one); the busy ones are what the machine's CPU time says for the last fraction of a second
(``/proc/stat``), or where that cannot be read the 1-minute load average. The load average trails by about a
minute: right after a test suite it still counted two busy cores on an idle machine, and ``make demo`` answered on
one thread.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

MAX_AUTO_THREADS = 8  # decode is bound by memory bandwidth: more threads than this add little and cost others cores
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
PROC_STAT = Path("/proc/stat")
SAMPLE_S = 0.1  # how long the CPU counters are watched: 10 clock ticks a core, enough to see a core kept busy
REUSE_S = 10.0  # a process asks more than once as it starts (settings, the LM, the verifier): one reading serves
_LAST: list[tuple[float, float]] = []  # (monotonic time, busy cores) of this process's last reading


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
    """``choose_threads`` for this machine now: its usable cores and the cores busy now (``busy_cores``), or its
    1-minute load average where the CPU counters cannot be read."""
    now = time.monotonic()
    if not _LAST or now - _LAST[0][0] >= REUSE_S:
        busy = busy_cores()
        _LAST[:] = [(now, load_average() if busy is None else busy)]
    return choose_threads(usable_cores(), _LAST[0][1])


def busy_cores(window_s: float = SAMPLE_S, stat: Path = PROC_STAT, cpus: set[int] | None = None) -> float | None:
    """Cores' worth of CPU time the CPUs this process may run on (``cpus``, default its affinity) spent busy (not
    idle or waiting on I/O) over the next ``window_s`` seconds, this process's own share taken off; None where
    ``/proc/stat`` cannot be read (not Linux)."""
    if cpus is None:
        try:
            cpus = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return None
    first = cpu_counters(stat, cpus)
    if first is None:
        return None
    own = os.times()
    time.sleep(window_s)
    second = cpu_counters(stat, cpus)
    if second is None:
        return None
    (busy0, total0, cores), (busy1, total1, _) = first, second
    if total1 <= total0:
        return None
    spent = os.times()
    own_s = (spent.user - own.user) + (spent.system - own.system)
    wall_s = (total1 - total0) / cores / os.sysconf("SC_CLK_TCK")
    busy = (busy1 - busy0) / (total1 - total0) * cores - (own_s / wall_s if wall_s > 0 else 0.0)
    return max(0.0, busy)


def cpu_counters(stat: Path, cpus: set[int]) -> tuple[int, int, int] | None:
    """``(busy ticks, all ticks, cpus counted)`` summed over the ``cpuN`` lines of ``/proc/stat`` whose N is in
    ``cpus``; None when none of them can be read."""
    try:
        lines = stat.read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    busy = total = counted = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
            continue
        try:
            fields = [int(v) for v in rest.split()]
        except ValueError:
            return None
        if len(fields) < 5:
            return None
        all_ticks = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest time is inside user)
        busy, total, counted = busy + all_ticks - fields[3] - fields[4], total + all_ticks, counted + 1
    return (busy, total, counted) if counted else None


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
