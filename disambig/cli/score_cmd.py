"""``disambig score``: score stored predictions, from our programs or any other system, on a question set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli.errors import user_errors


@user_errors
def score(
    predictions: Path = typer.Argument(..., help="JSONL: question (and id), plus long_answer / answers / "
                                       "interpretations / passages; or an eval run's results.jsonl.",
                                       exists=True, dir_okay=False),
    dataset: str = typer.Option(..., "--dataset", "-d", help="asqa, ambignq, or a JSONL file in their format."),
    metric: list[str] = typer.Option([], "--metric", "-m", help="Metric name (repeatable); default per dataset."),
    out: Path | None = typer.Option(None, "--out", help="Write {questions, metrics, per_question} JSON here."),
    reader: Path | None = typer.Option(None, "--reader", help="Local Hugging Face QA model folder, for "
                                       "disambig-f1 and ADF's ASQA D-F1 (nothing is downloaded).", file_okay=False),
    judge_lm: str | None = typer.Option(None, "--judge-lm", help="LM spec for judge metrics (env DISAMBIG_JUDGE_LM)."),
) -> None:
    """Score PREDICTIONS against DATASET with each metric; print the table, optionally write JSON."""
    from disambig.evaluation.scoring import score_predictions

    rows = read_predictions(predictions)
    examples, kind = load_questions(dataset)
    metrics = build_metrics(list(metric), kind, reader, judge_lm)
    result = score_predictions(rows, examples, metrics)
    Console(width=200).print(score_table(result.metrics, result.questions, predictions.name))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False), encoding="utf-8")
        typer.echo(f"scores: {out}")


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """The JSON object on each non-blank line of ``path``; a bad line is an error naming it."""
    from disambig.data.jsonl import read_jsonl

    return [flatten_result(row) for _, row in read_jsonl(path)]


def flatten_result(row: dict[str, Any]) -> dict[str, Any]:
    """A ``disambig eval`` results row (answer under ``prediction``; ``null`` for a failure, scored as an empty
    answer) as a prediction row; any other row as it is."""
    if "prediction" not in row:
        return row
    return {**(row["prediction"] or {}), "id": row.get("id"), "question": row.get("question")}


def load_questions(dataset: str) -> tuple[list[Any], str]:
    """Every question of the dataset (split ``all``) and its kind (``asqa`` or ``ambignq``), told by its rows."""
    from disambig.data import load_dataset
    from disambig.data.loaders import dataset_format

    examples = load_dataset(dataset, split="all")
    if not examples:
        raise ValueError(f"dataset {dataset!r} has no questions")
    has_long_answers = any(getattr(ex, "long_answers", None) for ex in examples)
    kind = dataset_format(dataset) or ("asqa" if has_long_answers else "ambignq")
    return examples, kind


def build_metrics(names: list[str], kind: str, reader: Path | None, judge_lm: str | None) -> dict[str, Any]:
    """Metric callables for ``names`` (default: the kind's defaults) plus the inputs of corpus metrics."""
    from disambig.metrics import QAReader, default_metrics, get_metric, is_judge_metric, with_inputs

    names = with_inputs(names, reader=reader is not None) if names else default_metrics(kind, reader is not None)
    qa_reader = QAReader(reader) if reader is not None else None
    judge = _judge(judge_lm) if any(is_judge_metric(n) for n in names) else None
    return {name: get_metric(name, judge_lm=judge, reader=qa_reader) for name in names}


def _judge(spec: str | None) -> Any:
    from disambig.lm.runtime import build_lm
    from disambig.metrics import Judge
    from disambig.settings import load_settings

    settings = load_settings(judge_lm=spec)
    return Judge(build_lm(settings, spec=settings.judge_lm or settings.lm))


def score_table(metrics: dict[str, float], questions: int, title: str) -> Table:
    """One row per metric with its corpus value."""
    table = Table(title=f"{title}: {questions} questions")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in metrics.items():
        table.add_row(name, f"{value:.4f}")
    return table
