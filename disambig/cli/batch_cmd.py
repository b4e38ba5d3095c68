"""``disambig batch``: answer a file of questions with a registered or compiled program, locally or on Spark."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

ENGINE = typer.Option("local", "--engine", help="local (this process) or spark (an MLflow Spark UDF).")
MASTER = typer.Option("local[2]", "--master", help="Spark master: local[N] or a cluster URL (--engine spark).")
PARTITIONS = typer.Option(None, "--partitions", min=1,
                          help="Spark partitions (default: the master's parallelism; --engine spark).")


@user_errors
def batch(
    model: str = typer.Argument(..., help="models:/NAME/VERSION, runs:/ID/program, or a compiled state JSON."),
    input_path: Path = typer.Option(..., "--input", "-i", help="JSONL, CSV or Parquet with a 'question' column."),
    output_path: Path = typer.Option(..., "--output", "-o", help="JSONL, CSV or Parquet; a re-run resumes it."),
    engine: str = ENGINE,
    master: str = MASTER,
    partitions: int | None = PARTITIONS,
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
    cache: bool | None = options.CACHE,
    tracking_uri: str | None = options.TRACKING_URI,
) -> None:
    """Answer every question of --input not yet answered in --output: answer, interpretations, cited passage ids,
    trace (LM calls, tokens, seconds) and an error column; a failed row never stops the others."""
    import mlflow

    from disambig.evaluation.tracking import tracking_uri as resolve_uri
    from disambig.lm.runtime import check_remote_lm
    from disambig.optimizers.batch import check_engine, run_batch

    check_engine(engine, partitions)
    options.export_lm_roles(verifier_lm, decoding, repetition_guard, repeat_penalty, prompt_lookup, lm=lm,
                           threads=threads)
    settings = load_settings(lm=lm, threads=threads, lm_cache=cache)
    check_remote_lm(settings)  # a remote LM's endpoint, once, before any row is read or written
    mlflow.set_tracking_uri(resolve_uri(tracking_uri))
    console = Console(stderr=True)
    with _progress(console) as progress:
        task = progress.add_task(f"{engine} batch", total=None)
        result = run_batch(model, input_path, output_path, engine=engine, settings=settings, master=master,
                           partitions=partitions, on_progress=lambda done, total: progress.update(
                               task, completed=done, total=total))
    Console().print(f"answered {result.answered} ({result.failed} failed), skipped {result.skipped} already "
                    f"answered, {result.rows_per_second:.2f} rows/s -> {result.output}")


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)
