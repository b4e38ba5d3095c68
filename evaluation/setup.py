"""Turn CLI choices into the pieces of a run: examples, program (with its retriever), metrics, LM."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from disambig.errors import ConfigurationError
from disambig.settings import Settings

DEFAULT_METRICS = {
    "asqa": ("d-f1", "rouge-l", "dr", "answer-f1"),
    "ambignq": ("d-f1", "answer-f1"),
}
RETRIEVAL_METRICS = ("mrecall@5",)
FALLBACK_METRICS = ("d-f1", "answer-f1")


@dataclass
class PreparedRun:
    program: Any
    examples: list[Any]
    metrics: dict[str, Callable[..., float]]
    retriever_name: str


def prepare_run(
    settings: Settings,
    program: str,
    dataset: str,
    split: str,
    limit: int | None,
    metric_names: list[str],
    retriever_kind: str | None,
    corpus: str,
) -> PreparedRun:
    """Load the split, build the program and its retriever, resolve metrics, and configure the LM."""
    from disambig.data import load_dataset
    from disambig.programs import PROGRAMS, build_program
    from disambig.runtime import build_lm, configure_dspy

    info = PROGRAMS.get(program)
    if info is None:
        raise ConfigurationError(f"unknown program {program!r}; registered programs: {', '.join(sorted(PROGRAMS))}")
    examples = load_dataset(dataset, split=split, limit=limit)
    if not examples:
        raise ValueError(f"dataset {dataset!r} split {split!r} has no questions; try --split all")
    kind = retriever_kind or ("hybrid" if info.needs_retriever else "")
    retriever = None
    if kind:
        from disambig.retrieval import build_retriever

        retriever = build_retriever(kind, corpus=corpus, settings=settings)
    module = build_program(program, retriever=retriever)
    names = metric_names or default_metrics(dataset, with_retrieval=bool(kind))
    metrics = resolve_metrics(names, settings)
    configure_dspy(build_lm(settings))
    return PreparedRun(module, examples, metrics, f"{kind}:{corpus}" if kind else "")


def default_metrics(dataset: str, with_retrieval: bool) -> list[str]:
    names = list(DEFAULT_METRICS.get(dataset, FALLBACK_METRICS))
    return names + list(RETRIEVAL_METRICS) if with_retrieval else names


def resolve_metrics(names: list[str], settings: Settings) -> dict[str, Callable[..., float]]:
    """Metric callables by name; judge metrics get the judge LM (``settings.judge_lm``, else the program LM)."""
    from disambig.metrics import get_metric

    return {name: get_metric(name) for name in names}
