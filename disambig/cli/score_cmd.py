"""``disambig score``: score stored predictions, from our programs or any other system, on a question set.

Judge metrics are scored through a per-question log beside ``--out`` (``NAME.judged.jsonl``), so an interrupted
judged scoring resumes and a re-run with the same judge, metrics and U_q costs no judge call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.cli.paths import check_output_file

if TYPE_CHECKING:
    from disambig.evaluation.judging import JudgedScoring
    from disambig.evaluation.proxy import SharedProxy
    from disambig.metrics import Judge


@user_errors
def score(
    predictions: Path = typer.Argument(..., help="JSONL: question (and id), plus long_answer / answers / "
                                       "interpretations / passages; or an eval run's results.jsonl.",
                                       exists=True, dir_okay=False),
    dataset: str = typer.Option(..., "--dataset", "-d", help="asqa, ambignq, or a JSONL file in their format."),
    metric: list[str] = typer.Option([], "--metric", "-m", help="Metric name (repeatable); default per dataset."),
    out: Path | None = typer.Option(None, "--out", help="Write {questions, metrics, judge, per_question, proxy} "
                                        "JSON here; judge metrics also go to NAME.judged.jsonl beside it, per "
                                        "question, so a re-run resumes."),
    reader: Path | None = typer.Option(None, "--reader", help="Local Hugging Face QA model folder, for "
                                       "disambig-f1 and ADF's ASQA D-F1 (nothing is downloaded).", file_okay=False),
    judge_lm: str | None = typer.Option(None, "--judge-lm", help="LM spec for judge metrics (env DISAMBIG_JUDGE_LM)."),
    api_base: str | None = options.API_BASE,
    proxy_top: int | None = options.PROXY_TOP,
    proxy_retriever: str = options.PROXY_RETRIEVER,
    corpus: str = typer.Option("wiki-slice", "--corpus", "--proxy-corpus", help="Corpus U_q is retrieved from."),
) -> None:
    """Score PREDICTIONS against DATASET with each metric; print the table, optionally write JSON.

    Judge metrics (g-precision, g-recall, u-recall, ...) are logged per question beside --out and reused on a
    re-run with the same judge LM, metrics and U_q; --proxy-top gives every answer the same U_q.
    """
    from disambig.evaluation.proxy import ProxySource, open_proxy
    from disambig.evaluation.scoring import score_predictions
    from disambig.metrics import is_judge_metric

    if out is not None:
        check_output_file(out, "--out", {"predictions": predictions, "question": Path(dataset)})
    rows = read_predictions(predictions)
    examples, kind = load_questions(dataset)
    names = metric_list(list(metric), kind, reader is not None)
    spec = judge_lm_spec(judge_lm) if any(is_judge_metric(n) for n in names) else ""
    options.check_proxy(proxy_top, bool(spec))
    judge = make_judge(spec) if spec else None
    metrics = build_metrics(names, kind, reader, judge)
    proxy = None
    if proxy_top is not None:
        shared = open_proxy(ProxySource(proxy_top, proxy_retriever, corpus))
        examples, proxy = shared_proxy_examples(rows, examples, shared)
    judged = judged_scoring(metrics, judge, spec, proxy, judged_log(out)) if judge is not None else None
    with judging_progress(enabled=judged is not None) as advance:
        result = score_predictions(rows, examples, metrics, judged, on_row=advance)
    console = Console(width=200)
    console.print(score_table(result.metrics, result.questions, predictions.name))
    if result.judge is not None:
        console.print(judge_line(result.judge, proxy))
    if out is not None:
        from disambig.data.atomic import write_json

        write_json(out, result.to_json() | {"proxy": proxy})
        typer.echo(f"scores: {out}")


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """The JSON object on each non-blank line of ``path``; a bad line is an error naming it."""
    from disambig.data.jsonl import read_jsonl

    return [flatten_result(row, f"{path}:{number}") for number, row in read_jsonl(path)]


def flatten_result(row: dict[str, Any], where: str = "a results row") -> dict[str, Any]:
    """A ``disambig eval`` results row (answer under ``prediction``; ``null`` for a failure, scored as an empty
    answer) as a prediction row; any other row as it is. A ``prediction`` that is neither is an error naming
    ``where`` (``FILE:LINE``)."""
    if "prediction" not in row:
        return row
    prediction = row["prediction"]
    if not isinstance(prediction, dict | None):
        raise ValueError(f"{where}: 'prediction' must be an object (or null for a failed question), got "
                         f"{type(prediction).__name__}")
    return {**(prediction or {}), "id": row.get("id"), "question": row.get("question")}


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


def metric_list(names: list[str], kind: str, reader: bool) -> list[str]:
    """``names`` with the inputs of their corpus metrics, or the dataset kind's defaults when none are given."""
    from disambig.metrics import default_metrics, with_inputs

    return with_inputs(names, reader=reader) if names else default_metrics(kind, reader)


def build_metrics(names: list[str], kind: str, reader: Path | None, judge_lm: Judge | str | None) -> dict[str, Any]:
    """Metric callables for ``names`` (default: the kind's defaults) plus the inputs of corpus metrics.

    ``judge_lm`` is a ``Judge`` the judge metrics share, or an LM spec (None: the settings' judge LM) to build
    one from; it is used only when a judge metric is among the names.
    """
    from disambig.metrics import Judge, QAReader, get_metric, is_judge_metric

    names = metric_list(names, kind, reader is not None)
    qa_reader = QAReader(reader) if reader is not None else None
    judge = None
    if any(is_judge_metric(n) for n in names):
        judge = judge_lm if isinstance(judge_lm, Judge) else make_judge(judge_lm_spec(judge_lm))
    return {name: get_metric(name, judge_lm=judge, reader=qa_reader) for name in names}


def judge_lm_spec(spec: str | None) -> str:
    """The judge's LM spec: ``spec``, else ``DISAMBIG_JUDGE_LM``, else the program LM's (``DISAMBIG_LM``)."""
    from disambig.settings import load_settings

    settings = load_settings(judge_lm=spec)
    return settings.judge_lm or settings.lm


def make_judge(spec: str) -> Judge:
    """A ``Judge`` asking the LM ``spec`` names."""
    from disambig.lm.runtime import build_lm
    from disambig.metrics import Judge
    from disambig.settings import load_settings

    return Judge(build_lm(load_settings(judge_lm=spec), spec=spec))


def shared_proxy_examples(rows: list[dict[str, Any]], examples: list[Any],
                          proxy: SharedProxy) -> tuple[list[Any], dict[str, Any]]:
    """The examples ``rows`` answer, each with its U_q from ``proxy`` attached, and the record of that U_q."""
    from disambig.evaluation.scoring import answered_examples

    attached = proxy.attach(answered_examples(rows, examples))
    return attached, proxy.describe(attached)


def judged_scoring(metrics: dict[str, Any], judge: Judge, spec: str, proxy: dict[str, Any] | None,
                   log: Path | None) -> JudgedScoring:
    """A ``JudgedScoring`` of the judge metrics among ``metrics``, logged to ``log`` (None: not kept)."""
    from disambig.evaluation.judging import JudgedScoring
    from disambig.metrics import is_judge_metric

    judge_metrics = {name: fn for name, fn in metrics.items() if is_judge_metric(name)}
    return JudgedScoring(judge_metrics, judge, spec, proxy["label"] if proxy else "", log)


def judged_log(out: Path | None) -> Path | None:
    """The per-question judged-score log beside ``out`` (``scores.json`` -> ``scores.judged.jsonl``)."""
    return out.with_name(f"{out.stem}.judged.jsonl") if out is not None else None


def judge_line(summary: dict[str, Any], proxy: dict[str, Any] | None) -> str:
    """One line on the judged scoring: judge, calls, parse failures, reused questions and U_q."""
    evidence = (f"U_q {proxy['label']} (fingerprint {proxy['fingerprint']})" if proxy
                else "U_q: each answer's own passages")
    kept = f"log {summary['log']}" if summary["log"] else "no log (pass --out to resume a judged scoring)"
    return (f"judge {summary['judge_lm']}: {summary['judge_calls']} calls, {summary['parse_failures']} "
            f"unparsable replies; {summary['reused']} of {summary['questions']} questions reused; {evidence}; {kept}")


@contextmanager
def judging_progress(label: str = "judging", enabled: bool = True) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr for a judged scoring, as ``advance(done, total)``; None when not enabled."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=None)
        yield lambda done, total: progress.update(task, completed=done, total=total)


def score_table(metrics: dict[str, float], questions: int, title: str) -> Table:
    """One row per metric with its corpus value."""
    table = Table(title=f"{title}: {questions} questions")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in metrics.items():
        table.add_row(name, f"{value:.4f}")
    return table
