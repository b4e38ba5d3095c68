"""Paired-bootstrap confidence intervals of one program's difference to a reference program on the same questions.

    difference = statistic(program's scores) - statistic(reference's scores)

Both programs' per-question scores are resampled together (each resample draws question indices once and takes
both programs' scores at them), through ``scipy.stats.bootstrap(..., paired=True)``. The statistic is a mean for a
per-question metric, or a corpus metric computed from its inputs' means (``dr`` = sqrt(mean D-F1 x mean ROUGE-L),
``g-f1``; ``disambig.metrics.CORPUS_METRICS``), so a corpus metric's interval is of the corpus value itself, not of
a mean of per-question values. The verdict is "tie" when the 95% interval spans 0.

    >>> result = paired_difference([0.5, 0.7, 0.9], [0.4, 0.6, 0.8])
    >>> format_difference(result)
    '+0.100 [+0.100, +0.100] better'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Verdict = Literal["better", "worse", "tie"]
Statistic = Callable[..., Any]
"""``statistic(*inputs, axis=-1)``: one value per resample from per-question arrays (numpy broadcasting)."""

CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 0
DEGENERATE = 1e-12
"""A bootstrap distribution whose spread is at most this (relative to the observed difference) is constant: every
resample gives the observed difference, up to rounding."""


@dataclass(frozen=True)
class PairedDifference:
    """The observed difference (program - reference), its confidence interval, the questions compared and the
    verdict: "better" / "worse" when the interval lies on one side of 0 (in the metric's good direction), else
    "tie"."""

    difference: float
    low: float
    high: float
    n: int
    verdict: Verdict


def mean_statistic(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean of a per-question metric."""
    return np.mean(scores, axis=axis)


def corpus_statistic(name: str) -> Statistic:
    """The corpus metric ``name`` as a statistic of its two inputs' per-question arrays: ``combine(mean, mean)``.

    Args:
        name: a key of ``disambig.metrics.CORPUS_METRICS`` (``dr``, ``g-f1``, ``g-precision-micro``).
    """
    from disambig.metrics.corpus import CORPUS_METRICS

    if name not in CORPUS_METRICS:
        raise ValueError(f"{name!r} is not a corpus metric; choose one of {', '.join(CORPUS_METRICS)}, or use "
                         "mean_statistic for a per-question metric")
    combine = np.vectorize(CORPUS_METRICS[name].combine, otypes=[float])

    def statistic(first: np.ndarray, second: np.ndarray, axis: int = -1) -> np.ndarray:
        return combine(np.mean(first, axis=axis), np.mean(second, axis=axis))

    return statistic


def statistic_for(metric: str, available: Iterable[str]) -> tuple[tuple[str, ...], Statistic]:
    """The per-question metrics ``metric``'s statistic reads, and the statistic.

    Args:
        metric: a per-question metric (its mean) or a corpus metric (computed from its inputs' means).
        available: the names the per-question scores hold (a corpus metric picks its inputs among them, as the
            report does: ``dr`` takes ``disambig-f1`` when scored, else the ``d-f1`` proxy).
    """
    from disambig.metrics.corpus import CORPUS_METRICS

    names = set(available)
    corpus = CORPUS_METRICS.get(metric)
    if corpus is None:
        if metric not in names:
            raise ValueError(f"no per-question {metric!r} in the scores (they hold {', '.join(sorted(names))})")
        return (metric,), mean_statistic
    chosen = corpus.choose(names)
    if chosen is None:
        raise ValueError(f"{metric!r} is computed from {' and '.join('/'.join(o) for o in corpus.inputs)}, which the "
                         f"scores do not all hold ({', '.join(sorted(names))}); score its inputs too")
    return chosen, corpus_statistic(metric)


def paired_scores(program: Mapping[str, Mapping[str, float]], reference: Mapping[str, Mapping[str, float]],
                  names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Both programs' scores on the question ids they share, as arrays of shape ``(len(names), shared questions)``.

    Args:
        program: each question's scores by metric name, keyed by question id.
        reference: the same for the reference program.
        names: the metrics to take, in the statistic's order; a question without a score counts 0, as in the
            report's means.
    """
    shared = sorted(set(program) & set(reference))
    if not shared:
        raise ValueError(f"the program ({len(program)} questions) and the reference ({len(reference)}) share no "
                         "question id; compare runs of the same question set")

    def stack(scores: Mapping[str, Mapping[str, float]]) -> np.ndarray:
        return np.array([[float(scores[q].get(name, 0.0)) for q in shared] for name in names], dtype=float)

    return stack(program), stack(reference)


def paired_difference(program: Any, reference: Any, statistic: Statistic = mean_statistic, *,
                      higher_is_better: bool = True, confidence: float = CONFIDENCE, n_resamples: int = RESAMPLES,
                      seed: int = SEED) -> PairedDifference:
    """The difference ``statistic(program) - statistic(reference)`` with its paired-bootstrap interval.

    The interval is scipy's percentile interval (``method="percentile"``), not BCa: BCa's acceleration is undefined
    when the jackknife values are all equal, which 0/1 scores on a few dozen questions often make them, and then
    scipy returns NaN; the percentile interval is always defined. The generator is seeded, so a table regenerates
    byte-identically. When every resample gives the same difference (e.g. a program better by the same amount on
    every question, or a single question) the interval is the observed difference itself, zero wide.

    Args:
        program: the program's per-question scores, aligned by question with ``reference``: one array for a
            per-question metric, or one array per input of ``statistic`` (``dr``: D-F1, then ROUGE-L).
        reference: the reference program's, in the same shape and question order.
        statistic: ``statistic(*inputs, axis=-1)``; ``mean_statistic`` or ``corpus_statistic(name)``.
        higher_is_better: False for an error metric (NACE): "better" then means a lower value.
        confidence: the interval's confidence level.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling generator.
    """
    ours, theirs = _inputs(program, "program"), _inputs(reference, "reference")
    if ours.shape != theirs.shape:
        raise ValueError(f"program scores have shape {ours.shape} (inputs x questions) and reference scores "
                         f"{theirs.shape}; give both the same inputs over the same questions, aligned by question id "
                         "(paired_scores does this)")
    n = ours.shape[1]
    if n == 0:
        raise ValueError("no questions to compare; both score arrays are empty")

    def difference(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        half = len(samples) // 2
        return statistic(*samples[:half], axis=axis) - statistic(*samples[half:], axis=axis)

    observed = float(difference(*ours, *theirs))
    low, high = _interval(difference, [*ours, *theirs], observed, confidence, n_resamples, seed)
    if low == high and abs(observed) <= DEGENERATE:
        observed = low = high = 0.0
    return PairedDifference(observed, low, high, n, _verdict(low, high, higher_is_better))


def paired_metric(program: Mapping[str, Mapping[str, float]], reference: Mapping[str, Mapping[str, float]],
                  metric: str, *, higher_is_better: bool = True) -> PairedDifference:
    """``metric``'s difference between two runs on the question ids both hold, with its paired-bootstrap interval.

    Args:
        program: each question's scores by metric name, keyed by question id (a run's ``results.jsonl`` rows).
        reference: the same for the reference run.
        metric: a per-question metric (its mean) or a corpus metric (from its inputs' means; ``statistic_for``).
        higher_is_better: False for an error metric (NACE).
    """
    names, statistic = statistic_for(metric, {name for scores in program.values() for name in scores})
    return paired_difference(*paired_scores(program, reference, names), statistic, higher_is_better=higher_is_better)


def format_difference(result: PairedDifference, digits: int = 3, scale: float = 1.0) -> str:
    """A table cell: ``+0.012 [-0.020, +0.045] tie``; ``scale`` = 100 shows a fraction in percentage points."""

    def signed(value: float) -> str:
        shown = round(scale * value, digits)
        return f"{shown + 0.0:+.{digits}f}"  # + 0.0 turns -0.0 into 0.0

    return f"{signed(result.difference)} [{signed(result.low)}, {signed(result.high)}] {result.verdict}"


def _inputs(scores: Any, role: str) -> np.ndarray:
    array = np.asarray(scores, dtype=float)
    array = array[np.newaxis, :] if array.ndim == 1 else array
    if array.ndim != 2:
        raise ValueError(f"{role} scores must be one array of per-question values or a list of such arrays; "
                         f"got {array.ndim} dimensions")
    return array


def _interval(difference: Statistic, samples: list[np.ndarray], observed: float, confidence: float,
              n_resamples: int, seed: int) -> tuple[float, float]:
    from scipy.stats import bootstrap

    if samples[0].size < 2:  # one question: every resample is that question
        return observed, observed
    result = bootstrap(samples, difference, n_resamples=n_resamples, paired=True, vectorized=True,
                       confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    if np.ptp(result.bootstrap_distribution) <= DEGENERATE * max(1.0, abs(observed)):
        return observed, observed
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _verdict(low: float, high: float, higher_is_better: bool) -> Verdict:
    if low > 0:
        return "better" if higher_is_better else "worse"
    if high < 0:
        return "worse" if higher_is_better else "better"
    return "tie"
