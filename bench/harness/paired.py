"""The Δ column of a table: a row's difference to a reference on the same questions, with its 95% paired-bootstrap
interval and verdict (``disambig.evaluation.paired``; nothing is re-implemented here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Scores = Mapping[str, Mapping[str, float]]
"""Each question's scores by metric name, keyed by question id."""

DELTA_NOTE = ("Δ: the row's primary metric minus the reference run's, on the question ids both runs hold (\"on N\" "
              "when fewer than the row's; a failed question counts as its empty answer), with its 95% paired-bootstrap "
              "interval (questions resampled together; scipy, percentile, 9,999 resamples, fixed seed); \"tie\" when "
              "the interval spans 0.")


def difference_cell(scores: Scores, reference: Scores | None, metric: str | None, higher_is_better: bool = True,
                    digits: int = 3, scale: float = 1.0) -> str:
    """"reference" for the reference's own scores, "–" without a reference or metric, else ``+0.012 [-0.020, +0.045]
    tie`` on the shared questions ("... on N" when they are fewer than the row's)."""
    from disambig.evaluation.paired import format_difference, paired_metric

    if reference is None or metric is None:
        return "–"
    if reference is scores:
        return "reference"
    result = paired_metric(scores, reference, metric, higher_is_better=higher_is_better)
    cell = format_difference(result, digits, scale)
    return cell if result.n == len(scores) else f"{cell} on {result.n}"


def delta_head(metrics: Sequence[str], reference: str) -> str:
    """The Δ column's header, naming the metric(s) and the reference."""
    return f"Δ {' / '.join(dict.fromkeys(metrics)) or 'primary'} vs {reference} [95% CI]"


def rate(values: Sequence[float]) -> str:
    """``0.433 [0.267, 0.600]``: the mean of 0/1 outcomes with its 95% percentile-bootstrap interval (the paired
    bootstrap against all zeros, so one resampling scheme serves every cell)."""
    from disambig.evaluation.paired import paired_difference

    result = paired_difference(values, [0.0] * len(values))
    return f"{result.difference:.3f} [{result.low:.3f}, {result.high:.3f}]"
