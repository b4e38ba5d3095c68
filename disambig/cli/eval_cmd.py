"""``disambig eval`` and ``disambig compare``: score programs on dataset splits, side by side."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from disambig.cli import batch_cmd, options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings


@user_errors
def evaluate(
    program: str = typer.Argument(..., help="Registered program (see `disambig programs`)."),
    dataset: str = typer.Option("asqa", "--dataset", "-d", help="asqa, ambignq, or a JSONL file in their format."),
    split: str | None = typer.Option(None, "--split", help="train, dev, test or all (default: dev of a named set, "
                                     "all of a file)."),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1, help="First N questions of the split."),
    skip: int = typer.Option(0, "--skip", min=0, help="Leave out the first K of them (questions K+1..N): a block "
                             "of the split answered on its own, e.g. a confirmation set."),
    metric: list[str] = typer.Option([], "--metric", "-m", help="Metric name (repeatable); default per dataset."),
    retriever: str | None = typer.Option(None, "--retriever", help="bm25, dense or hybrid (default hybrid if needed)."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus the retriever searches (default: a BEIR "
                                      "folder's own or the one its manifest names, else wiki-slice)."),
    lm: str | None = options.LM,
    api_base: str | None = options.API_BASE,
    parallel_calls: int | None = options.PARALLEL_CALLS,
    verifier_lm: str | None = options.VERIFIER_LM,
    decoding: str | None = options.DECODING,
    repetition_guard: str | None = options.REPETITION_GUARD,
    repeat_penalty: float | None = options.REPEAT_PENALTY,
    prompt_lookup: int | None = options.PROMPT_LOOKUP,
    passage_framing: str | None = options.PASSAGE_FRAMING,
    judge_lm: str | None = typer.Option(None, "--judge-lm", help="LM for judge metrics (env DISAMBIG_JUDGE_LM)."),
    proxy_top: int | None = options.PROXY_TOP,
    proxy_retriever: str = options.PROXY_RETRIEVER,
    proxy_corpus: str = typer.Option("wiki-slice", "--proxy-corpus", help="Corpus U_q is retrieved from."),
    threads: int | None = options.THREADS,
    out: Path | None = typer.Option(None, "--out", help="Run folder (default runs/PROGRAM-DATASET-SPLIT-N)."),
    track: bool = typer.Option(True, "--track/--no-track", help="Record the run in MLflow."),
    artifact: str = typer.Option("", "--artifact", help="Evaluate a compiled PROGRAM: state JSON path or models:/..."),
    allow_mixed_code: bool = typer.Option(False, "--allow-mixed-code",
                                          help="Resume a run folder whose answers came from other code."),
    cache: bool | None = options.CACHE,
    option: list[str] = options.PROGRAM_OPTION,
    engine: str = typer.Option("local", "--engine", help="local, or spark: answer through the program's MLflow "
                               "pyfunc as a Spark UDF (as `disambig batch`), then score here the same way."),
    master: str = batch_cmd.MASTER,
    partitions: int | None = batch_cmd.PARTITIONS,
) -> None:
    """Run PROGRAM on a dataset split: progress, per-question JSONL (resumable), report.json, plot, MLflow run."""
    from disambig.evaluation.session import EvalConfig, run_eval
    from disambig.programs.context import passage_framing as framing
    from disambig.run_setup import default_split, prepare_run
    from disambig.settings import generation_overrides

    split = split or default_split(dataset)
    program_options = options.parse_program_options(option, program, artifact)
    options.export_lm_roles(verifier_lm, decoding, repetition_guard, repeat_penalty, prompt_lookup, lm=lm,
                           threads=threads)
    settings = load_settings(lm=lm, judge_lm=judge_lm, threads=threads, lm_cache=cache)
    run = prepare_run(settings, program, dataset, split, limit, list(metric), retriever, corpus, artifact,
                      program_options, skip=skip)
    examples, proxy = with_proxy(run.examples, run.judge_lm, proxy_top, proxy_retriever, proxy_corpus, settings)
    config = EvalConfig(program=program, dataset=dataset, split=split, limit=limit, skip=skip, lm=settings.lm,
                        judge_lm=run.judge_lm, retriever=run.retriever_name,
                        metrics=tuple(run.metrics), artifact=artifact,
                        cache=settings.lm_cache,  # the report says whether LM responses came from the cache
                        options=run.options, proxy=proxy, generation=generation_overrides(settings))
    out_dir = out or config.default_out()
    if engine != "local":
        run.program = _batch_answers(engine, artifact, program, run, out_dir, settings, master, partitions)
    console = wide_console()
    with _progress(console) as progress, framing(settings.passage_framing):
        task = progress.add_task(f"{program} on {dataset}/{split}", total=len(run.examples))
        outcome = run_eval(config, run.program, examples, run.metrics, out_dir, threads=eval_workers(settings),
                           on_result=lambda _: progress.advance(task), track=track,
                           allow_mixed_code=allow_mixed_code)
    console.print(report_table([outcome.report]))
    console.print(f"results: {out_dir}/results.jsonl · report: {out_dir}/report.json · plot: {out_dir}/tradeoff.png")
    if outcome.mlflow_run_id:
        console.print(f"MLflow run {outcome.mlflow_run_id}")


def with_proxy(examples: list, judge_lm: str, top: int | None, retriever: str, corpus: str,
               settings: object) -> tuple[list, str]:
    """The examples with their shared U_q attached and its label, when ``top`` is given (the retriever of U_q is
    opened only then); else the examples as they are and ""."""
    if top is None:
        return examples, ""
    options.check_proxy(top, bool(judge_lm))
    from disambig.evaluation.proxy import ProxySource, open_proxy

    proxy = open_proxy(ProxySource(top, retriever, corpus), settings)
    return proxy.attach(examples), proxy.source.label


def _batch_answers(engine: str, artifact: str, name: str, run: object, out_dir: Path, settings: object, master: str,
                   partitions: int | None) -> object:
    """The run's answers computed up front by the batch path (``disambig.optimizers.batch``), as a program."""
    from contextlib import nullcontext

    from disambig.evaluation.session import RESULTS_FILE
    from disambig.optimizers.batch import answer_examples, program_state

    source = nullcontext(artifact) if artifact else program_state(name, run.program, run.retriever_name)
    with source as model:
        return answer_examples(model, run.examples, out_dir / RESULTS_FILE, engine, settings, master, partitions)


@user_errors
def compare(
    reports: list[Path] = typer.Argument(..., help="Run folders or report.json files."),
    reference: int = typer.Option(1, "--reference", "-r", min=1, help="Which run (1 = the first given) every "
                                  "other is compared with in the Δ column."),
    metric: str | None = typer.Option(None, "--metric", "-m", help="Metric of the Δ column (default: the reference "
                                      "run's dataset's primary metric, e.g. dr on ASQA, else its first metric)."),
) -> None:
    """Print the side-by-side table of several runs, each with its difference to a reference run on one metric: the
    95% paired-bootstrap interval over the questions both runs answered, and the verdict (better, worse or tie)."""
    from disambig.evaluation.report import read_report

    found = [read_report(path) for path in reports]
    if reference > len(found):
        raise ValueError(f"--reference {reference} names a run, but {len(found)} were given; pass 1 to {len(found)}")
    scores = [question_scores(path) for path in reports]
    chosen = metric or default_metric(found[reference - 1])
    if metric and scores[reference - 1]:  # an unknown name is an error that lists the scored ones
        from disambig.evaluation.paired import statistic_for

        statistic_for(metric, {name for by_metric in scores[reference - 1].values() for name in by_metric})
    column = [difference(scores[n], scores[reference - 1], chosen, n == reference - 1) for n in range(len(found))]
    head = f"Δ {chosen} vs run {reference} [95% CI]"
    wide_console().print(report_table(found, (head, column)))


def question_scores(path: Path) -> dict[str, dict[str, float]]:
    """Each question's scores by id from the run folder's ``results.jsonl`` (empty when there is none)."""
    from disambig.data.jsonl import read_jsonl

    rows = (path if path.is_dir() else path.parent) / "results.jsonl"
    return {str(row["id"]): dict(row.get("scores") or {}) for _, row in read_jsonl(rows)} if rows.is_file() else {}


def default_metric(report: dict) -> str:
    """The primary metric of the report's dataset (``disambig.metrics.PRIMARY_METRICS``) when the run scored it,
    else its first metric."""
    from disambig.data.loaders import dataset_format
    from disambig.metrics.defaults import PRIMARY_METRICS

    primary = PRIMARY_METRICS.get(dataset_format(str(report.get("params", {}).get("dataset", ""))) or "")
    names = list(report["metrics"])
    return primary if primary in names or not names else names[0]


def difference(scores: dict, reference: dict, metric: str, itself: bool) -> str:
    """A Δ cell: "reference" for the reference run, "-" when the two share no scored question (or the metric is not
    scored), else ``+0.012 [-0.020, +0.045] tie`` (with "on N" when fewer questions than the run holds)."""
    from disambig.evaluation.paired import format_difference, paired_metric
    from disambig.metrics.defaults import LOWER_IS_BETTER

    if itself:
        return "reference"
    try:
        result = paired_metric(scores, reference, metric, higher_is_better=metric not in LOWER_IS_BETTER)
    except ValueError:  # no shared question, or the metric (or a corpus metric's inputs) not scored
        return "-"
    cell = format_difference(result)
    return cell if result.n == len(scores) else f"{cell} on {result.n}"


def eval_workers(settings: object) -> int:
    """Questions answered at once (by ``eval`` and by ``compile``'s scoring and optimizers): 1 for the in-process
    model (its calls are serialised anyway, queueing would inflate per-question latency, and its prompt cache would
    depend on the interleaving), the thread setting for remote LMs (and for an LM a custom factory builds)."""
    from disambig.lm.spec import is_local_spec

    return 1 if is_local_spec(settings.lm) else settings.threads  # a name only a factory knows is not in-process


def wide_console() -> Console:
    """A console wide enough for the table even when output is piped."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def report_table(reports: list[dict], delta: tuple[str, list[str]] | None = None) -> Table:
    """Rows are runs; columns are every metric any run has, then ``delta`` (a header and one cell a run), then cost
    and latency."""
    from disambig.evaluation.plot import run_label

    metric_names = sorted({name for r in reports for name in r["metrics"]})
    cost = ["tokens_per_q", "lm_calls_per_q", "latency_p50_s", "latency_p95_s"]
    if any("cost_usd_per_q" in r.get("efficiency", {}) for r in reports):
        cost.append("cost_usd_per_q")
    table = Table(title="Evaluation")
    for column in ["run", "n", "fail", *metric_names, *([delta[0]] if delta else []), *cost]:
        table.add_column(column, justify="left" if column == "run" else "right")
    for n, r in enumerate(reports):
        eff = r.get("efficiency", {})
        table.add_row(
            f"{n + 1}. {run_label(r)}" if delta else run_label(r), str(r["questions"]), str(r["failures"]),
            *[f"{r['metrics'][m]:.3f}" if m in r["metrics"] else "-" for m in metric_names],
            *([delta[1][n]] if delta else []),
            *[(f"{eff[c]:.3g}" if c.startswith("cost") else f"{eff[c]:.1f}") if c in eff else "-" for c in cost],
        )
    return table


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)
