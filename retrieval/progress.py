"""Progress of a long index build as plain log lines, so it shows even when output is not a terminal."""

from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)

EVERY_SECONDS = 10.0


class LoggedProgress:
    """A ``progress(done, total)`` callback that logs ``label: done/total unit (pct), elapsed, rate, ~left`` at INFO.

    The first call, the last (``done == total``) and at most one call every ``every`` seconds in between are
    logged; nothing is printed directly, so the application decides where the lines go. The rate counts from the
    first call's ``done``, so a resumed build's kept shards do not inflate it.

    Args:
        label: what is being built, for example ``"dense index of wiki-slice"``.
        unit: what is counted, for example ``"passages"``.
        every: minimum seconds between two lines.
    """

    def __init__(self, label: str, unit: str = "passages", every: float = EVERY_SECONDS) -> None:
        self.label = label
        self.unit = unit
        self.every = every
        self._start = time.perf_counter()
        self._last: float | None = None
        self._first: int | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if self._first is None:
            self._first = done
        if self._last is not None and done < total and now - self._last < self.every:
            return
        self._last = now
        logger.info("%s", progress_line(self.label, self.unit, done, total, now - self._start, self._first))


def progress_line(label: str, unit: str, done: int, total: int, elapsed: float, first: int = 0) -> str:
    """``dense index of wiki-slice: 2,048/8,840 passages (23%), 27 s, 76/s, ~90 s left``: the rate and time left
    count from ``first`` (what was done before this run: a resumed build's kept shards)."""
    share = done / total if total else 1.0
    rate = (done - first) / elapsed if elapsed > 0 else 0.0
    speed = f", {rate:,.0f}/s" if rate > 0 else ""
    left = f", ~{(total - done) / rate:.0f} s left" if rate > 0 and 0 < share < 1 else ""
    return f"{label}: {done:,}/{total:,} {unit} ({share:.0%}), {elapsed:.0f} s{speed}{left}"
