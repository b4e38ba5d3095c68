"""Turn CLI choices into the pieces of a run: examples, program (with its retriever), metrics, LM."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from disambig.errors import ConfigurationError
from disambig.settings import Settings

RETRIEVAL_METRICS = ("mrecall@5",)


@dataclass
class PreparedRun:
    program: Any
    examples: list[Any]
    metrics: dict[str, Callable[..., float]]
    retriever_name: str
    judge_lm: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # the program's constructor arguments, as built


def prepare_run(
    settings: Settings,
    program: str,
    dataset: str,
    split: str,
    limit: int | None,
    metric_names: list[str],
    retriever_kind: str | None,
    corpus: str | None = None,
    artifact: str = "",
    options: dict[str, Any] | None = None,
    skip: int = 0,
) -> PreparedRun:
    """Load the split, build the program with its constructor ``options`` and its retriever (or load a compiled
    ``artifact`` of ``program``), resolve metrics, and configure the LM.

    The retriever searches ``corpus``, by default the dataset's (``disambig.data.loaders.default_corpus``); ``skip``
    leaves out the first questions of the ``limit`` (a block of the split).
    """
    from disambig.data import load_dataset
    from disambig.data.loaders import dataset_format, default_corpus
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.metrics import with_inputs
    from disambig.programs import PROGRAMS, build_program
    from disambig.programs import retriever_kind as default_kind
    from disambig.programs.registry import with_format_option

    info = PROGRAMS.get(program)
    if info is None:
        from disambig.programs.registry import unknown_program

        raise unknown_program(program)
    if artifact:
        check_compiled(artifact, program)  # before the data, the indexes or the LM are loaded
    examples = load_dataset(dataset, split=split, limit=limit)
    if not examples:
        raise ValueError(f"dataset {dataset!r} split {split!r} has no questions; try --split all")
    if skip and skip >= len(examples):
        capped = limit is not None and limit <= len(examples)  # else the split ends before the limit
        held = f"the first {limit} questions" if capped else f"the {len(examples)} questions"
        raise ConfigurationError(f"--skip {skip} leaves none of {held} of {dataset!r} split {split!r}; skip fewer"
                                 + (" or raise --limit" if capped else ""))
    examples = examples[skip:]
    kind = default_kind(program, retriever_kind)
    retriever = None
    if kind:
        from disambig.retrieval import build_retriever

        corpus = corpus or default_corpus(dataset)
        retriever = build_retriever(kind, corpus=corpus, settings=settings)
    options = {} if artifact else with_format_option(program, dataset_format(dataset), options or {})
    if artifact:
        from disambig.optimizers.loading import load

        module = load(artifact, retriever=retriever, settings=settings)
    else:
        module = build_program(program, retriever, **options)
    names = with_inputs(metric_names) if metric_names else default_metrics(dataset_format(dataset), bool(kind))
    lm = build_lm(settings)
    metrics = resolve_metrics(names, settings, program_lm=lm)
    configure_dspy(lm)
    return PreparedRun(module, examples, metrics, f"{kind}:{corpus}" if kind else "", judge_spec(names, settings),
                       options)


def check_compiled(artifact: str, program: str) -> None:
    """Refuse ``artifact`` unless it is a compile of ``program`` (``eval`` and ``ask`` run a compiled program only
    under its own name)."""
    compiled = compiled_for(artifact)
    if compiled != program:
        raise ConfigurationError(f"artifact {artifact!r} is a compiled {compiled!r}, not {program!r}; name "
                                 f"{compiled!r} as the program or give another artifact")


def compiled_for(artifact: str) -> str:
    """The registered name of the program ``artifact`` is a compile of (its manifest's ``program``)."""
    from disambig.optimizers.artifact import read_manifest
    from disambig.optimizers.loading import resolve_state_path

    return str(read_manifest(resolve_state_path(artifact)).get("program"))


def default_split(dataset: str) -> str:
    """``dev`` for a named benchmark set, ``all`` for a user's own file (it is evaluated whole)."""
    from disambig.data.loaders import DATASETS

    return "dev" if dataset in DATASETS else "all"


def default_metrics(data_format: str, with_retrieval: bool) -> list[str]:
    """The metrics a dataset of ``data_format`` (``asqa``, ``ambignq``) reports when none are asked for: the
    format's defaults (``disambig.metrics.default_metrics``), plus MRecall@5 for a program that retrieves."""
    from disambig.metrics import default_metrics as format_defaults

    names = format_defaults(data_format)
    return names + list(RETRIEVAL_METRICS) if with_retrieval else names


def judge_spec(names: list[str], settings: Settings) -> str:
    """The LM spec the judge metrics among ``names`` use (``settings.judge_lm``, else the program LM); "" if none."""
    from disambig.metrics import is_judge_metric

    return (settings.judge_lm or settings.lm) if any(is_judge_metric(n) for n in names) else ""


def resolve_metrics(
    names: list[str], settings: Settings, program_lm: Any = None
) -> dict[str, Callable[..., float]]:
    """Metric callables by name; judge metrics get the judge LM (``settings.judge_lm``, else the program LM).

    The judge LM is built only when a judge metric is asked for, and all judge metrics share one ``Judge`` (so
    G-Precision, G-Recall and G-F1 ask each question once). When the judge spec is the program's own spec and
    ``program_lm`` is given, that LM object is reused instead of loading the model twice.
    """
    from disambig.metrics import Judge, get_metric

    spec = judge_spec(names, settings)
    judge = None
    if spec:
        from disambig.lm.runtime import build_lm

        same_lm = program_lm is not None and spec == settings.lm
        judge = Judge(program_lm if same_lm else build_lm(settings, spec=spec))
    return {name: get_metric(name, judge_lm=judge) for name in names}
