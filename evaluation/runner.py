"""Run a program over examples in parallel, scoring each question and appending it to the result log."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from typing import Any

from disambig.errors import ConfigurationError
from disambig.evaluation.code_version import code_stamp, describe
from disambig.evaluation.records import QuestionResult, ResultLog
from disambig.lm.usage import measured

logger = logging.getLogger(__name__)

Metric = Callable[..., float]


def run_questions(
    program: Callable[..., Any],
    examples: list[Any],
    metrics: dict[str, Metric],
    log: ResultLog,
    threads: int = 1,
    on_result: Callable[[QuestionResult], None] | None = None,
    allow_mixed_code: bool = False,
) -> list[QuestionResult]:
    """Answer and score every example not already in ``log``; return all results in example order.

    A question whose program or metric raises is recorded as a failure (its message kept, scored as an empty
    answer: 0 on quality metrics, the error of a count of 0 on ACE/NACE)
    and the run goes on. A re-run asks the questions not in ``log`` and those that failed (a server that was down,
    a timeout): their failed rows are dropped from the log first, so it never holds two rows of one question. Each
    worker runs in a copy of the caller's context, so ``dspy.context`` settings made by the caller apply inside the
    threads too. Every row is stamped with the code that produced it; resuming a log written by other code is
    refused unless ``allow_mixed_code``.
    """
    if threads < 1:
        raise ValueError(f"threads={threads} must be at least 1")
    stored = log.load()
    done = {r.id: r for r in stored if not r.failed}
    failed = {r.id for r in stored if r.failed}
    if not allow_mixed_code:
        refuse_other_code(done.values(), log)  # failed rows are asked again by this code
    if failed:
        log.drop(failed)
    todo = [ex for ex in examples if ex.id not in done]
    if stored:
        logger.info("resuming: %d of %d questions already answered; %d that failed are asked again", len(done),
                    len(examples), len(failed))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(contextvars.copy_context().run, answer_one, program, ex, metrics) for ex in todo]
        for future in as_completed(futures):
            result = future.result()
            log.append(result)
            done[result.id] = result
            if on_result is not None:
                on_result(result)
    return [done[ex.id] for ex in examples]


def refuse_other_code(results: Iterable[QuestionResult], log: ResultLog) -> None:
    """Raise when any stored result came from code other than this process's (or carries no stamp)."""
    current = code_stamp()
    other = [r for r in results if r.code != current]
    if other:
        seen = sorted({describe(r.code) for r in other})
        raise ConfigurationError(
            f"{str(log.path)!r} holds {len(other)} answers from other code ({', '.join(seen[:3])}) than this run "
            f"({describe(current)}); pass --allow-mixed-code to resume anyway, or another --out to start afresh"
        )


def answer_one(program: Callable[..., Any], example: Any, metrics: dict[str, Metric]) -> QuestionResult:
    """Run the program on one example and score it; any exception becomes a recorded failure.

    A failure keeps what the attempt cost (wall time, LM calls and tokens up to the error) as its trace, so
    costs and latency can count failed questions too.
    """
    with measured() as attempt:
        try:
            prediction = program(**example.inputs())
            scores = {name: float(metric(example, prediction)) for name, metric in metrics.items()}
            error = None
        except Exception as exc:  # noqa: BLE001 - one bad question must not stop the run; the error is kept
            error = f"{type(exc).__name__}: {exc}"
    if error is not None:
        return QuestionResult(id=example.id, question=example.question, prediction=None,
                              scores=score_empty_answer(example, metrics), error=error, trace=asdict(attempt),
                              code=code_stamp())
    return QuestionResult(id=example.id, question=example.question, prediction=_plain(prediction), scores=scores,
                          trace=dict(getattr(prediction, "trace", {}) or {}), code=code_stamp())


def score_empty_answer(example: Any, metrics: dict[str, Metric]) -> dict[str, float]:
    """A failed question's scores: each metric on an empty answer (no long answer, interpretations, passages or
    count), so an error metric (ACE, NACE) charges the failure instead of reading it as perfect. A metric that
    cannot score an empty answer gives 0."""
    import dspy

    empty = dspy.Prediction(long_answer="", answers=[], interpretations=[], passages=[])
    scores = {}
    for name, metric in metrics.items():
        try:
            scores[name] = float(metric(example, empty))
        except Exception:  # noqa: BLE001 - the question already failed; its score falls back to 0
            scores[name] = 0.0
    return scores


def _plain(prediction: Any) -> dict[str, Any]:
    keys: Iterable[str] = prediction.keys() if hasattr(prediction, "keys") else ()
    return {k: prediction[k] for k in keys if k != "trace"}
