"""Independent LM calls of a program run at once on a remote LM: an ordered map over a thread pool.

VerDICt's feedback calls, AMD's agents, DIVA's verifications, DFA's judge batches and map-count's per-chunk calls
do not read each other's replies, so a server that takes several requests at a time can answer them together.
``ordered_map`` runs them on up to ``call_workers()`` threads and returns what a plain loop would: results in input
order, the first failure (in input order) raised, and the LM usage, cut replies and costs of the calls merged into
the caller's trace in input order (``disambig.lm.usage.isolated``), so traces do not depend on the number of threads.
Each worker runs in a copy of the caller's context, so ``dspy.context`` settings (the LM, the adapter, the passage
framing) reach it, as in ``dspy.Parallel``.

How many at once: the in-process engine gets 1 (its calls queue, and its prompt cache depends on their order) unless
it batches calls (``LlamaEngine(batch_calls=True)``, the run's ``--parallel-calls`` above 1): then the calls run on
as many threads, marked as one group (``disambig.lm.call_batcher.IN_GROUP``), and the engine decodes them together,
up to ``MAX_SEQUENCES`` at once. Otherwise a program's own argument (VerDICt's ``parallel``), else a
``dspy.context(disambig_parallel_calls=N)``, else the run's setting (``--parallel-calls``,
``DISAMBIG_PARALLEL_CALLS``), else ``REMOTE_CALLS`` for an LM that calls a provider over HTTP and 1 for any other
engine (a test's scripted engine, a custom factory's), whose thread safety is unknown.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import dspy

from disambig.lm.batch_decode import MAX_SEQUENCES
from disambig.lm.usage import Ledger, isolated, merge

PARALLEL_SETTING = "disambig_parallel_calls"
PARALLEL_CALLS_ENV = "DISAMBIG_PARALLEL_CALLS"
"""Read by ``load_settings`` as ``Settings.parallel_calls`` (0 or unset: decide from the LM)."""
REMOTE_CALLS = 8
"""Calls in flight at once on a remote LM when nothing says otherwise (VerDICt's authors run 8 threads)."""

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass
class _Outcome:
    ledger: Ledger
    value: Any = None
    error: BaseException | None = None


def ordered_map(fn: Callable[[Item], Result], items: Iterable[Item], workers: int | None = None) -> list[Result]:
    """``[fn(item) for item in items]`` on up to ``workers`` threads (default ``call_workers()``).

    Results come in input order; the LM usage, cut replies and costs of every call are merged into the caller's
    ``measured`` block in input order; if calls raise, the first failing item's exception is raised (after the
    calls already running have ended, their usage merged; calls not yet started are not made).
    """
    items = list(items)
    workers = min(call_workers() if workers is None else workers, len(items))
    if workers <= 1:
        outcomes = []
        for item in items:
            outcomes.append(_run(fn, item))
            if outcomes[-1].error is not None:
                break
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="disambig-call") as pool:
            futures = [pool.submit(contextvars.copy_context().run, _run_in_group, fn, item) for item in items]
            outcomes = []
            for future in futures:
                outcomes.append(future.result())
                if outcomes[-1].error is not None:
                    for later in futures:
                        later.cancel()
                    outcomes += [f.result() for f in futures[len(outcomes):] if not f.cancelled()]
                    break
    for outcome in outcomes:
        merge(outcome.ledger)
    failed = next((o.error for o in outcomes if o.error is not None), None)
    if failed is not None:
        raise failed
    return [o.value for o in outcomes]


def _run(fn: Callable[[Any], Any], item: Any) -> _Outcome:
    with isolated() as ledger:
        try:
            return _Outcome(ledger, fn(item))
        except Exception as exc:  # noqa: BLE001 - re-raised by ordered_map, after the other calls' usage is merged
            return _Outcome(ledger, error=exc)


def _run_in_group(fn: Callable[[Any], Any], item: Any) -> _Outcome:
    from disambig.lm.call_batcher import IN_GROUP

    IN_GROUP.set(True)  # this worker's own context copy
    return _run(fn, item)


def call_workers(requested: int | None = None) -> int:
    """How many independent calls run at once under the current LM (see the module docstring for the order)."""
    lm = dspy.settings.lm
    if serialised(lm) and not lm.engine.batch_calls:
        return 1
    for value in (requested, dspy.settings.get(PARALLEL_SETTING), configured_calls()):
        if value:
            return min(check_calls(value), MAX_SEQUENCES) if serialised(lm) else check_calls(value)
    if serialised(lm):
        return MAX_SEQUENCES
    return REMOTE_CALLS if over_http(lm) else 1


def question_workers(lm: Any, threads: int) -> int:
    """Questions answered at once with ``lm``: 1 on the in-process engine (its calls would only queue, each
    question's latency inflated), else ``threads``."""
    return 1 if serialised(lm) else max(1, threads)


def configured_calls() -> int | None:
    """``DISAMBIG_PARALLEL_CALLS`` as a number (None when unset or 0)."""
    raw = os.environ.get(PARALLEL_CALLS_ENV, "").strip()
    if not raw:
        return None
    try:
        return check_calls(int(raw)) or None
    except ValueError:
        raise ValueError(f"{PARALLEL_CALLS_ENV}={raw!r} is not a number of calls; use a positive integer, or 0 to "
                         "decide from the LM") from None


def check_calls(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"parallel calls {value!r} must be a positive integer (0: decide from the LM)")
    return value


def serialised(lm: Any) -> bool:
    """Is ``lm`` the project's in-process engine, which answers one call at a time?"""
    from disambig.lm.llama_engine import LlamaEngine

    return isinstance(getattr(lm, "engine", None), LlamaEngine)


def over_http(lm: Any) -> bool:
    """Does ``lm`` send its calls to a provider (a ``dspy.LM`` with no custom engine)?"""
    return isinstance(lm, dspy.LM) and isinstance(getattr(lm, "engine", None), str)
