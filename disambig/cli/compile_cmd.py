"""``disambig compile``: optimise a program's prompts and demos against a metric, save and track it."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.cli.eval_cmd import eval_workers
from disambig.settings import load_settings


@user_errors
def compile_(
    program: str = typer.Argument(..., help="Registered program (see `disambig programs`)."),
    dataset: str = typer.Option("asqa", "--dataset", "-d", help="asqa, ambignq, a JSONL file in their format, or "
                                 "a BEIR folder (dbpedia-entity-5k, or one `disambig data asqa-retrieval` built)."),
    metric: str | None = typer.Option(None, "--metric", "-m",
                                      help="Metric to optimise (e.g. dr, ambigqa-f1, mrecall@5; default: the "
                                           "dataset's primary metric, dr on ASQA, ambigqa-f1 on AmbigNQ, count-score "
                                           "on count questions, ndcg@10 on a BEIR folder). One that scores the "
                                           "dataset's own gold answers at 0 is refused."),
    optimizer: str = typer.Option("bootstrap", "--optimizer", "-o",
                                  help="labeled-fewshot, knn-fewshot, bootstrap, bootstrap-rs, mipro, gepa, simba, "
                                       "or none (keep the demos; with --tune-knobs only the numbers change)."),
    train: int = typer.Option(20, "--train", min=1, help="Questions from the train split."),
    val: int = typer.Option(20, "--val", min=1, help="Held-out questions from the dev split (scored before/after)."),
    retriever: str | None = typer.Option(None, "--retriever", help="bm25, dense or hybrid (default hybrid if needed)."),
    corpus: str | None = typer.Option(None, "--corpus",
                                      help="Corpus the retriever searches (default: a BEIR folder's own or the one "
                                           "its manifest names, else wiki-slice)."),
    name: str = typer.Option("", "--name", help="Artifact name (default: the optimizer's name; OPTIMIZER-teacher "
                                                "with --teacher-lm)."),
    demos: int = typer.Option(2, "--demos", min=0, help="Few-shot demos per predictor."),
    candidates: str = typer.Option("3", "--candidates",
                                   help="Candidate programs/instructions the optimizer tries (a number); for `compile "
                                        "route`, the programs it routes between, comma-separated (the first is the "
                                        "default), e.g. vanilla-rag,adf."),
    trials: int = typer.Option(4, "--trials", min=1, help="MIPROv2 trials / SIMBA steps."),
    metric_calls: int = typer.Option(40, "--metric-calls", min=1, help="GEPA budget of metric calls."),
    batch: int = typer.Option(8, "--batch", min=1, help="Minibatch size (MIPROv2, SIMBA)."),
    reflection_lm: str | None = typer.Option(None, "--reflection-lm", help="GEPA reflection LM (default: --lm)."),
    teacher_lm: str | None = typer.Option(None, "--teacher-lm",
                                          help="LM that answers the training questions whose passing traces become "
                                               "the demos (bootstrap, bootstrap-rs, mipro; default: --lm), e.g. "
                                               "local:qwen2.5-1.5b teaching --lm local:qwen2.5-0.5b. Steps on "
                                               "--verifier-lm, when given, run on it there too."),
    tune_knobs: int = typer.Option(0, "--tune-knobs", min=0,
                                   help="Optuna trials over the program's numeric knobs before compiling (0 = off)."),
    lm: str | None = options.LM,
    api_base: str | None = options.API_BASE,
    parallel_calls: int | None = options.PARALLEL_CALLS,
    verifier_lm: str | None = options.VERIFIER_LM,
    decoding: str | None = options.DECODING,
    repetition_guard: str | None = options.REPETITION_GUARD,
    repeat_penalty: float | None = options.REPEAT_PENALTY,
    prompt_lookup: int | None = options.PROMPT_LOOKUP,
    passage_framing: str | None = options.PASSAGE_FRAMING,
    threads: int | None = options.THREADS,
    out: Path = typer.Option(Path("artifacts"), "--out", help="Artifact root folder."),
    track: bool = typer.Option(True, "--track/--no-track", help="Record the compile in MLflow."),
    tracking_uri: str | None = options.TRACKING_URI,
    register: bool = typer.Option(True, "--register/--no-register",
                                  help="Register the pyfunc model in MLflow when the compile improved the held-out "
                                       "score."),
    register_anyway: bool = typer.Option(False, "--register-anyway",
                                         help="Register a new model version even when the compile did not improve the "
                                              "held-out score or added no demo."),
    cache: bool | None = options.CACHE,
    option: list[str] = options.PROGRAM_OPTION,
    cost_weight: float = typer.Option(0.0, "--cost-weight", min=0.0,
                                      help="route: metric points one LM call is worth giving up (lambda)."),
    allow: str = typer.Option("", "--allow", help="route: optional actions besides answering (abstain)."),
    runs: Path = typer.Option(Path("runs/route"), "--runs",
                              help="route: folder of the candidates' answer runs (DATASET-SPLIT/PROGRAM), resumed "
                                   "and reused."),
    detector_train: int | None = typer.Option(None, "--detector-train", min=10,
                                              help="route: AmbigNQ train questions the ambiguity detector learns "
                                                   "from (default: all)."),
    cascade: str = typer.Option("", "--cascade", help="route: FIRST,ESCALATE: a cascade that answers with FIRST and "
                                "escalates to ESCALATE when a logistic model on FIRST's answer and the retrieval "
                                "says so (the two are the candidates; --candidates is not needed)."),
    cascade_thresholds: str = typer.Option("", "--cascade-thresholds", help="route --cascade: thresholds on "
                                           "P(escalation better) that train cross-validation chooses from, "
                                           "comma-separated (default 0.5 alone)."),
) -> None:
    """Score PROGRAM on held-out questions, compile it on the train split, score again, save JSON + manifest."""
    from disambig.optimizers.metric_fit import GOLD_QUESTIONS, check_metric_fits, default_metric
    from disambig.optimizers.recipes import Budget
    from disambig.optimizers.session import run_compile

    if tracking_uri:  # the run's MLflow logging reads it (disambig.evaluation.tracking.tracking_uri), as serve's does
        os.environ["MLFLOW_TRACKING_URI"] = tracking_uri
    metric = metric or default_metric(dataset)
    if program == "route" and teacher_lm:
        raise typer.BadParameter("--teacher-lm is for programs with demos, not `disambig compile route`")
    if program == "route":
        from disambig.cli.route_cmd import compile_route
        from disambig.data import load_dataset

        check_metric_fits(metric, dataset, load_dataset(dataset, split="train", limit=GOLD_QUESTIONS))
        compile_route(dataset, metric, candidates, train, val, cost_weight, allow, runs, detector_train, name, out,
                      lm, threads, track, register, option, cascade, cascade_thresholds)
        return
    if cascade or cascade_thresholds:
        raise typer.BadParameter(f"--cascade and --cascade-thresholds are for `disambig compile route`, not "
                                 f"{program!r}")
    program_options = options.parse_program_options(option, program)
    options.export_lm_roles(verifier_lm, decoding, repetition_guard, repeat_penalty, prompt_lookup, lm=lm,
                           threads=threads)
    settings = load_settings(lm=lm, threads=threads, lm_cache=cache)
    budget = Budget(demos=demos, candidates=count_option(candidates), trials=trials, metric_calls=metric_calls,
                    batch=batch, threads=eval_workers(settings))  # questions at once: 1 on the in-process model
    result, tracked = run_compile(settings, program, dataset, metric, optimizer, budget, train, val, retriever,
                                  corpus, name, out, track, register, reflection_lm, tune_knobs,
                                  program_options, register_anyway, teacher_lm)
    console = Console()
    console.print(f"LM response cache: {options.cache_note(settings)}")
    console.print(f"{metric} on {result.manifest['scores']['heldout_size']} held-out questions: "
                  f"before {result.before:.4f} → after {result.after:.4f} ({result.after - result.before:+.4f})")
    if result.outcome != "improved":
        console.print(nothing_learned(result, registered="registered" in tracked, asked=track and register))
    if result.manifest["knobs"]:
        console.print(f"knobs: {result.manifest['knobs']}")
    console.print(f"saved {result.state_path} (+ manifest.json)")
    for key, value in tracked.items():
        console.print(f"MLflow {key}: {value}")


def nothing_learned(result: object, registered: bool, asked: bool) -> str:
    """The one line a compile that learned nothing prints: what happened and whether a model version was made."""
    why = ("no demo was added (no training trace passed the metric, or no training row fills the program's outputs)"
           if result.outcome == "no-demos" else "the held-out score did not improve")
    if registered:
        kept = "registered anyway (--register-anyway)"
    elif asked:
        kept = "saved, but no new MLflow model version registered (--register-anyway registers it)"
    else:
        kept = "saved"
    return f"nothing learned ({result.outcome}): {why}; {kept}"


def count_option(value: str) -> int:
    """``--candidates`` as the optimizer's count; a program list is for ``compile route`` only."""
    if not value.strip().isdigit() or int(value) < 1:
        raise typer.BadParameter(f"--candidates {value!r}: give a number of at least 1 (a list of programs is for "
                                 "`disambig compile route`)")
    return int(value)
