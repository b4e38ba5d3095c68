"""``disambig eval-retrieval``: nDCG@10, Recall@100 and MRR@10 of retrievers on a BEIR test collection."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import index_cmd, options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings


@user_errors
def eval_retrieval(
    dataset: str = typer.Option("dbpedia-entity-5k", "--dataset", "-d",
                                help="dbpedia-entity-5k or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)."),
    retriever: list[str] = typer.Option(["bm25"], "--retriever", "-r", help="bm25, dense or hybrid (repeatable)."),
    split: str = typer.Option("test", "--split", help="Qrels file qrels/SPLIT.tsv."),
    embedder: str = index_cmd.EMBEDDER,
    threads: int | None = options.THREADS,
    out: Path | None = typer.Option(None, "--out", help="Also write the scores as JSON to this file."),
) -> None:
    """Search every judged query of DATASET with each retriever and report nDCG@10, Recall@100 and MRR@10.

    Missing indexes of the dataset's corpus are built first (cached for later runs).
    """
    from disambig.retrieval import build_retriever
    from disambig.evaluation.retrieval import evaluate_retriever
    from disambig.retrieval.factory import KINDS

    unknown = [r for r in retriever if r not in KINDS]
    if unknown:
        raise ValueError(f"unknown retriever {unknown[0]!r}; choose one of {', '.join(KINDS)}")
    settings = load_settings(threads=threads)
    console = Console()
    encoder = index_cmd.make_embedder(embedder)
    needed = {part for kind in retriever for part in (("bm25", "dense") if kind == "hybrid" else (kind,))}
    for kind in sorted(needed):
        index_cmd.build_with_progress(console, kind, dataset, settings, encoder)
    reports = []
    for kind in retriever:
        searcher = build_retriever(kind, corpus=dataset, settings=settings, embedder=encoder, auto_build=False)
        with console.status(f"searching with {kind}"):
            reports.append(evaluate_retriever(searcher, dataset, split))
    console.print(report_table(reports, f"Retrieval on {dataset} ({split}, {reports[0].queries} queries)"))
    if out:
        out.write_text(json.dumps([r.to_dict() for r in reports], indent=2), encoding="utf-8")
        console.print(f"scores: {out}")


def report_table(reports: list, title: str) -> Table:
    """One row per retriever: its metrics and the seconds its queries took."""
    metrics = list(reports[0].metrics)
    table = Table(title=title)
    for column in ("retriever", *metrics, "seconds"):
        table.add_column(column, justify="left" if column == "retriever" else "right")
    for report in reports:
        table.add_row(report.retriever, *[f"{report.metrics[m]:.4f}" for m in metrics], f"{report.seconds:.1f}")
    return table
