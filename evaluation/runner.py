"""Run a program over examples in parallel, scoring each question and appending it to the result log."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from disambig.evaluation.records import QuestionResult, ResultLog

logger = logging.getLogger(__name__)

Metric = Callable[..., float]


def run_questions(
    program: Callable[..., Any],
    examples: list[Any],
    metrics: dict[str, Metric],
    log: ResultLog,
    threads: int = 1,
    on_result: Callable[[QuestionResult], None] | None = None,
) -> list[QuestionResult]:
    """Answer and score every example not already in ``log``; return all results in example order.

    A question whose program or metric raises is recorded as a failure (its message kept, every score 0)
    and the run goes on. Each worker runs in a copy of the caller's context, so ``dspy.context``
    settings made by the caller apply inside the threads too.
    """
    if threads < 1:
        raise ValueError(f"threads={threads} must be at least 1")
    done = {r.id: r for r in log.load()}
    todo = [ex for ex in examples if ex.id not in done]
    if len(done):
        logger.info("resuming: %d of %d questions already done", len(done), len(examples))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(contextvars.copy_context().run, answer_one, program, ex, metrics) for ex in todo]
        for future in as_completed(futures):
            result = future.result()
            log.append(result)
            done[result.id] = result
            if on_result is not None:
                on_result(result)
    return [done[ex.id] for ex in examples]


def answer_one(program: Callable[..., Any], example: Any, metrics: dict[str, Metric]) -> QuestionResult:
    """Run the program on one example and score it; any exception becomes a recorded failure."""
    try:
        prediction = program(**example.inputs())
        scores = {name: float(metric(example, prediction)) for name, metric in metrics.items()}
    except Exception as exc:  # noqa: BLE001 - one bad question must not stop the run; the error is kept
        return QuestionResult(
            id=example.id,
            question=example.question,
            prediction=None,
            scores=dict.fromkeys(metrics, 0.0),
            error=f"{type(exc).__name__}: {exc}",
        )
    return QuestionResult(
        id=example.id,
        question=example.question,
        prediction=_plain(prediction),
        scores=scores,
        trace=dict(getattr(prediction, "trace", {}) or {}),
    )


def _plain(prediction: Any) -> dict[str, Any]:
    keys: Iterable[str] = prediction.keys() if hasattr(prediction, "keys") else ()
    return {k: prediction[k] for k in keys if k != "trace"}
