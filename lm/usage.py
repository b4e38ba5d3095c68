"""What a run costs: wall time, LM calls and tokens, read from ``dspy.track_usage``, and the LM replies that were
cut short (stopped by the repetition guard or by the token cap), counted by the in-process engine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import dspy


@dataclass
class Trace:
    """What a question cost: LM calls and tokens (filled by ``measured``), retrieval calls, and extras.

    ``reused_prompt_tokens`` counts input tokens the in-process engine did not prefill because their KV state was
    reused from an earlier call (a shared prompt prefix); the prefill work was ``input_tokens`` minus that.
    ``cut_by_repetition`` and ``cut_by_length`` count the replies the in-process engine cut to their last whole
    sentence because they started looping (the repetition guard) or reached the token cap.
    """

    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused_prompt_tokens: int = 0
    retrieval_calls: int = 0
    cut_by_repetition: int = 0
    cut_by_length: int = 0
    seconds: float = 0.0
    notes: dict[str, object] = field(default_factory=dict)


@contextmanager
def measured() -> Iterator[Trace]:
    """Yield a ``Trace``; on exit it holds the wall time and the LM usage recorded inside the block.

    Usage recorded here also rolls up into any enclosing ``dspy.track_usage`` block, and cut replies into any
    enclosing ``measured`` block.
    """
    trace = Trace()
    cuts, parent = CutTally(), dspy.settings.get(CUTS_SETTING)
    start = time.perf_counter()
    with dspy.track_usage() as usage, dspy.context(**{CUTS_SETTING: cuts}):
        try:
            yield trace
        finally:
            trace.seconds = time.perf_counter() - start
            trace.cut_by_repetition, trace.cut_by_length = cuts.counts()
            if parent is not None:
                parent.add(*cuts.counts())
            for entries in usage.usage_data.values():
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
