"""Report-level metrics computed from other metrics' means, not by averaging a per-question value.

    dr                 = sqrt(mean Disambig-F1 * mean ROUGE-L)          ASQA ``ovscore``; Disambig-F1 is the
                         reader-based ``disambig-f1`` when it was scored, else the ``d-f1`` proxy
    g-f1               = 2 * mean G-P * mean G-R / (mean G-P + mean G-R)  VerDICt Table 2
    g-precision-micro  = mean grounded / mean judged interpretations      = total grounded / total judged

Each per-question value of the same name (``dr``: sqrt(D-F1 x ROUGE-L) of that question; ``g-f1``: that
question's harmonic mean) is what an optimiser sees, and it is kept in per-question results. A report
replaces its mean by the corpus value; when an input was not scored, the report shows the plain mean
under ``NAME-per-question`` instead and no value under NAME.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass


def geometric_mean(a: float, b: float) -> float:
    return math.sqrt(max(a, 0.0) * max(b, 0.0))


def harmonic_mean(a: float, b: float) -> float:
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


@dataclass(frozen=True)
class CorpusMetric:
    """A report value ``combine(mean(input_1), mean(input_2))``; each input lists alternatives by preference."""

    inputs: tuple[tuple[str, ...], tuple[str, ...]]
    combine: Callable[[float, float], float]

    def choose(self, available: Iterable[str]) -> tuple[str, str] | None:
        """The input names to use among ``available``, or None when one input is missing."""
        names = set(available)
        picked = [next((n for n in options if n in names), None) for options in self.inputs]
        return None if None in picked else (picked[0], picked[1])  # type: ignore[return-value]


CORPUS_METRICS: dict[str, CorpusMetric] = {
    "dr": CorpusMetric((("disambig-f1", "d-f1"), ("rouge-l",)), geometric_mean),
    "g-f1": CorpusMetric((("g-precision",), ("g-recall",)), harmonic_mean),
    "g-precision-micro": CorpusMetric((("grounded-interpretations",), ("judged-interpretations",)), ratio),
}


def with_inputs(names: Iterable[str], reader: bool = False) -> list[str]:
    """``names`` plus the per-question metrics their corpus values need, inputs first, without repeats.

    Args:
        names: metric names as asked for.
        reader: a QA reader is available, so ``dr`` takes ``disambig-f1`` rather than the ``d-f1`` proxy.
    """
    out: list[str] = []
    for name in names:
        corpus = CORPUS_METRICS.get(name)
        for options in corpus.inputs if corpus else ():
            if not any(o in names or o in out for o in options):
                out.append(options[0] if reader or options[0] != "disambig-f1" else options[1])
        out.append(name)
    return list(dict.fromkeys(out))


def corpus_means(means: dict[str, float]) -> dict[str, float]:
    """Replace the mean of every corpus metric in ``means`` by its corpus value (see the module docstring)."""
    out = dict(means)
    for name, metric in CORPUS_METRICS.items():
        if name not in means:
            continue
        chosen = metric.choose(means)
        if chosen is None:
            out[f"{name}-per-question"] = out.pop(name)
        else:
            out[name] = metric.combine(means[chosen[0]], means[chosen[1]])
    return out
