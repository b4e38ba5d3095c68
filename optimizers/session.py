"""Wire a compile from CLI choices: data splits, program and retriever, metric, LMs, tracking."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from disambig.optimizers.compile import CompileJob, CompileResult, compile_program
from disambig.optimizers.gold import with_gold_fields
from disambig.optimizers.metric_fit import check_metric_fits
from disambig.optimizers.recipes import Budget, check_teacher, teacher_spec
from disambig.settings import Settings


def run_compile(
    settings: Settings,
    program_name: str,
    dataset: str,
    metric_name: str,
    optimizer: str,
    budget: Budget,
    n_train: int,
    n_val: int,
    retriever_kind: str | None,
    corpus: str | None,
    name: str,
    out: Path,
    track: bool,
    register: bool,
    reflection_lm: str | None = None,
    knob_trials: int = 0,
    options: dict[str, Any] | None = None,
    register_anyway: bool = False,
    teacher_lm: str | None = None,
) -> tuple[CompileResult, dict[str, str]]:
    """Load the train and held-out splits, build everything, compile, and optionally log to MLflow.

    A compile whose outcome is not ``improved`` (``compile_outcome``: no gain on the held-out split, or no demo added)
    is saved and logged but registers no new model version unless ``register_anyway``.

    With ``knob_trials`` > 0 the program's numeric knobs are first searched with optuna, scored on the
    train split (the held-out split stays unseen until the before/after scores). ``options`` are constructor
    arguments fixed by the user (``--option``); they are not searched, and the manifest's knobs record them. The
    retriever searches ``corpus``, by default the dataset's (``disambig.data.loaders.default_corpus``). A metric that
    scores the gold answers of the first training questions at 0 is refused first (``metric_fit``).

    ``teacher_lm`` (a spec) answers the training questions whose passing traces become the demos of a bootstrapping
    recipe; the program keeps ``settings.lm``, which scores it before and after. A teacher naming the program's own
    model is no teacher.
    """
    from disambig.data import load_dataset
    from disambig.data.loaders import dataset_format, default_corpus
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.metrics import get_metric, is_judge_metric
    from disambig.programs import build_program
    from disambig.programs import retriever_kind as default_kind
    from disambig.programs.context import passage_framing
    from disambig.programs.registry import with_format_option

    teacher_lm = teacher_spec(teacher_lm, settings.lm)
    check_teacher(optimizer, teacher_lm)
    metric = None if is_judge_metric(metric_name) else get_metric(metric_name)  # unknown names fail before any work
    train_rows = load_dataset(dataset, split="train", limit=n_train)
    check_metric_fits(metric_name, dataset, train_rows)  # before the indexes and the LM are loaded
    trainset = [with_gold_fields(ex, program_name) for ex in train_rows]
    valset = load_dataset(dataset, split="dev", limit=n_val)
    kind = default_kind(program_name, retriever_kind)
    retriever = None
    if kind:
        from disambig.retrieval import build_retriever

        corpus = corpus or default_corpus(dataset)
        retriever = build_retriever(kind, corpus=corpus, settings=settings)
    lm = build_lm(settings)
    configure_dspy(lm)
    if metric is None:  # a judge metric asks the judge LM (the program LM unless --judge-lm / DISAMBIG_JUDGE_LM)
        metric = get_metric(metric_name, judge_lm=build_lm(settings, settings.judge_lm) if settings.judge_lm else lm)
    knobs = with_format_option(program_name, dataset_format(dataset), options or {})  # ADF's style follows the data
    with passage_framing(settings.passage_framing):  # after configure_dspy: a dspy.context holds the LM of its start
        trials_seen: list[dict[str, Any]] = []
        uncompiled = None  # the program as it is without compiling, when the knobs are tuned: the score before
        if knob_trials:
            uncompiled = build_program(program_name, retriever=retriever, **knobs)
            knobs = search_knobs(program_name, retriever, trainset, metric, budget, knob_trials, knobs, trials_seen)
        program = build_program(program_name, retriever=retriever, **knobs)
        lms = {"lm": lm, "reflection_lm": build_lm(settings, reflection_lm) if reflection_lm else lm,
               "teacher_lm": build_lm(settings, teacher_lm) if teacher_lm else None}
        job = CompileJob(program_name, dataset, metric_name, optimizer, budget, settings.lm,
                         f"{kind}:{corpus}" if kind else "", name, knobs, trials_seen, settings.passage_framing,
                         teacher_lm or "")
        hashes = {"train": ids_hash(trainset), "heldout": ids_hash(valset)}
        result = compile_program(job, program, trainset, valset, metric, out, hashes, lms, uncompiled)
    tracked: dict[str, str] = {}
    if track:
        from disambig.optimizers.tracking import log_compile_run

        tracked = log_compile_run(result, register=register and (result.outcome == "improved" or register_anyway))
    return result, tracked


def search_knobs(program_name: str, retriever: Any, trainset: list, metric: Any, budget: Budget,
                 trials: int, fixed: dict[str, Any] | None = None,
                 seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Best knob values for the uncompiled program, scored on the train split, with the ``fixed`` arguments.

    A program class with ``fit_gate(retriever, trainset) -> {knob: value}`` (ADF's ambiguity gate) first fits
    those knobs from the train split's labels; the search then covers the remaining knobs. A ``fixed`` argument
    is neither fitted nor searched; the result holds it too. Each trial's values and train-split score are
    appended to ``seen`` (the manifest's ``knob_trials``).
    """
    from disambig.optimizers.compile import score
    from disambig.optimizers.knobs import knob_space, tune_knobs
    from disambig.programs import build_program
    from disambig.programs.registry import program_class

    program_cls = program_class(program_name)
    fixed = fixed or {}
    fitted = program_cls.fit_gate(retriever, trainset) if hasattr(program_cls, "fit_gate") else {}
    fitted = {name: value for name, value in fitted.items() if name not in fixed}
    space = {name: knob for name, knob in knob_space(program_cls).items() if name not in fitted | fixed}
    best, _ = tune_knobs(lambda values: build_program(program_name, retriever=retriever, **fitted, **fixed,
                                                     **values), space,
                         lambda program: score(program, trainset, metric, budget.threads), trials, budget.seed,
                         record=seen)
    return fitted | best | fixed


def ids_hash(examples: list[Any]) -> str:
    return hashlib.sha256("\n".join(sorted(str(ex.id) for ex in examples)).encode()).hexdigest()[:16]
