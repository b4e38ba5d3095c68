"""What a run costs: wall time, LM calls and tokens, read from ``dspy.track_usage`` (the in-process engine's own
counts, or the ``usage`` a remote server reports with each reply), dollars where the model's price is known
(``disambig.lm.cost``), and the LM replies that were cut short (stopped by the repetition guard or by the token cap),
counted by the in-process engine.

``isolated`` and ``merge`` let independent calls run on worker threads (``disambig.lm.parallel``): each records
apart, and the records are merged in the calls' order, so a trace does not depend on which call finished first."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import dspy
from dspy.utils.usage_tracker import UsageTracker

from disambig.lm.cost import COST_SETTING, CostTally


@dataclass
class Trace:
    """What a question cost: LM calls and tokens (filled by ``measured``), retrieval calls, and extras.

    ``reused_prompt_tokens`` counts input tokens the in-process engine did not prefill because their KV state was
    reused from an earlier call (a shared prompt prefix); the prefill work was ``input_tokens`` minus that.
    ``cut_by_repetition`` and ``cut_by_length`` count the replies the in-process engine cut to their last whole
    sentence because they started looping (the repetition guard) or reached the token cap.
    ``cost_usd`` is the dollars of the ``priced_calls`` whose model has a known price (None when no call had one).
    """

    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused_prompt_tokens: int = 0
    retrieval_calls: int = 0
    cut_by_repetition: int = 0
    cut_by_length: int = 0
    cost_usd: float | None = None
    priced_calls: int = 0
    seconds: float = 0.0
    notes: dict[str, object] = field(default_factory=dict)


@contextmanager
def measured() -> Iterator[Trace]:
    """Yield a ``Trace``; on exit it holds the wall time and the LM usage recorded inside the block.

    Usage recorded here also rolls up into any enclosing ``dspy.track_usage`` block, and cut replies and costs into
    any enclosing ``measured`` block.
    """
    trace = Trace()
    start = time.perf_counter()
    ledger = Ledger()
    try:
        with isolated(ledger):
            try:
                yield trace
            finally:
                trace.seconds = time.perf_counter() - start
                fill(trace, ledger)
    finally:
        merge(ledger)


@dataclass
class Ledger:
    """What a block recorded apart from its enclosing blocks: LM usage, cut replies and call costs."""

    usage: UsageTracker = field(default_factory=UsageTracker)
    cuts: CutTally = field(default_factory=lambda: CutTally())
    costs: CostTally = field(default_factory=CostTally)


@contextmanager
def isolated(ledger: Ledger | None = None) -> Iterator[Ledger]:
    """Record the block's LM usage, cut replies and call costs in ``ledger`` (default a fresh one), not in the
    enclosing blocks; ``merge`` adds it to them afterwards."""
    ledger = ledger if ledger is not None else Ledger()
    with dspy.context(usage_tracker=ledger.usage, **{CUTS_SETTING: ledger.cuts, COST_SETTING: ledger.costs}):
        yield ledger


def merge(ledger: Ledger) -> None:
    """Add ``ledger`` to the current block's usage tracker and tallies (those of the calling thread's context)."""
    parent_usage = dspy.settings.usage_tracker
    if parent_usage is not None:
        for lm, entries in ledger.usage.usage_data.items():
            parent_usage.usage_data[lm].extend(entries)
    cuts, costs = dspy.settings.get(CUTS_SETTING), dspy.settings.get(COST_SETTING)
    if cuts is not None:
        cuts.add(*ledger.cuts.counts())
    if costs is not None:
        costs.add(*ledger.costs.totals())


def fill(trace: Trace, ledger: Ledger) -> None:
    """Add the LM calls, tokens, cut replies and costs of ``ledger`` to ``trace``."""
    trace.cut_by_repetition, trace.cut_by_length = ledger.cuts.counts()
    usd, priced = ledger.costs.totals()
    if priced:
        trace.cost_usd, trace.priced_calls = usd, priced
    for entries in ledger.usage.usage_data.values():
        trace.lm_calls += len(entries)
        trace.input_tokens += sum(_count(e, "prompt_tokens", "input_tokens") for e in entries)
        trace.output_tokens += sum(_count(e, "completion_tokens", "output_tokens") for e in entries)
        trace.reused_prompt_tokens += sum(_count(e.get("prompt_tokens_details") or {}, "cached_tokens")
                                          for e in entries)


CUTS_SETTING = "disambig_cut_replies"  # the innermost ``measured`` block's CutTally, a DSPy setting so threads see it
CutReason = Literal["repetition", "length"]


class CutTally:
    """Replies cut by the repetition guard and by the token cap, counted from any thread."""

    def __init__(self) -> None:
        self._repetition = self._length = 0
        self._lock = threading.Lock()

    def add(self, repetition: int = 0, length: int = 0) -> None:
        with self._lock:
            self._repetition += repetition
            self._length += length

    def counts(self) -> tuple[int, int]:
        """(replies cut by the repetition guard, replies cut by the token cap)."""
        with self._lock:
            return self._repetition, self._length


def record_cut(reason: CutReason) -> None:
    """Count one LM reply cut for ``reason`` in the innermost enclosing ``measured`` block (none: nothing)."""
    tally = dspy.settings.get(CUTS_SETTING)
    if tally is not None:
        tally.add(repetition=int(reason == "repetition"), length=int(reason == "length"))


def _count(entry: dict[str, object], *keys: str) -> int:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, int):
            return value
    return 0
