"""``disambig eval-retrieval``: nDCG@10, Recall@100 and MRR@10 of retrievers on a BEIR test collection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import index_cmd, options, search_cmd
from disambig.cli.errors import user_errors
from disambig.settings import load_settings


@user_errors
def eval_retrieval(
    dataset: str = typer.Option(
        "dbpedia-entity-5k", "--dataset", "-d",
        help="dbpedia-entity-5k or a BEIR folder (queries.jsonl, qrels/, and corpus.jsonl or a manifest.json naming "
             "its corpus, as `disambig data asqa-retrieval` writes)."),
    retriever: list[str] = typer.Option(["bm25"], "--retriever", "-r", help=f"Repeatable: {search_cmd.RETRIEVERS}"),
    split: str = typer.Option("test", "--split", help="Judgments qrels/SPLIT.tsv: test for dbpedia-entity-5k; train "
                                                      "or dev for an asqa-retrieval folder."),
    embedder: str = index_cmd.EMBEDDER,
    threads: int | None = options.THREADS,
    lm: str | None = options.LM,
    api_base: str | None = options.API_BASE,
    temperature: float | None = search_cmd.TEMPERATURE,
    expansion_state: str | None = search_cmd.EXPANSION_STATE,
    out: Path | None = typer.Option(None, "--out", help="Also write the scores as JSON to this file."),
) -> None:
    """Search every judged query of DATASET with each retriever and report nDCG@10, Recall@100 and MRR@10.

    The corpus searched is the folder's own corpus.jsonl, else the corpus its manifest names (wiki-slice for
    `disambig data asqa-retrieval`). Missing indexes of that corpus are built first (cached for later runs).
    Query-expansion retrievers also report what making their expansions cost per query (LM calls, tokens and
    seconds; for an expansion read from the cache, what its entry recorded when it was made) and how many came
    from the cache.
    """
    from disambig.data.corpus import load_beir_qrels
    from disambig.data.loaders import beir_folder, default_corpus
    from disambig.data.root import looks_like_path
    from disambig.evaluation.retrieval import evaluate_retriever
    from disambig.paths import expanded
    from disambig.retrieval import build_retriever
    from disambig.retrieval.factory import EXPANDED_KINDS, KINDS, index_kinds

    unknown = [r for r in retriever if r not in KINDS]
    if unknown:
        raise ValueError(f"unknown retriever {unknown[0]!r}; choose one of {', '.join(KINDS)}")
    if (temperature is not None or expansion_state) and not set(retriever) & set(EXPANDED_KINDS):
        raise ValueError("--temperature and --expansion-state apply to query-expansion retrievers (amd-sparse, ...), "
                         f"not {', '.join(retriever)}")
    settings = load_settings(threads=threads, lm=lm)
    if beir_folder(dataset) is None:
        if looks_like_path(dataset) and not expanded(dataset).exists():
            raise ValueError(f"no such file: {dataset}; pass dbpedia-entity-5k or a folder built by "
                             "`disambig data asqa-retrieval`")
        raise ValueError(f"dataset {dataset!r} is not a BEIR folder (queries.jsonl and qrels/); pass "
                         "dbpedia-entity-5k or a folder built by `disambig data asqa-retrieval`")
    load_beir_qrels(dataset, split)  # a split the folder does not judge fails before any index is built
    corpus = default_corpus(dataset)
    console = Console()
    encoder = index_cmd.make_embedder(embedder)
    needed = {part for kind in retriever for part in index_kinds(kind)}
    for kind in sorted(needed):
        index_cmd.build_with_progress(console, kind, corpus, settings, encoder)
    reports, costs, temperatures, reflections = [], [], [], []
    for kind in retriever:
        extra = search_cmd.expansion_options(kind, temperature, expansion_state) if kind in EXPANDED_KINDS else {}
        # search seconds are measured: never answer a plain retriever's queries from the --cache rankings
        plain = settings if kind in EXPANDED_KINDS else settings.with_overrides(lm_cache=False)
        searcher = build_retriever(kind, corpus=corpus, settings=plain, embedder=encoder, auto_build=False, **extra)
        with console.status(f"searching with {kind}"):
            reports.append(evaluate_retriever(searcher, dataset, split))
        costs.append(expansion_cost(searcher, reports[-1].queries))
        temperatures.append(getattr(getattr(searcher, "expander", None), "temperature", None))  # the one it used
        tally = getattr(getattr(searcher, "usage", None), "reflection", None)  # AMD's agents, for the table's note
        reflections.append({"reflection": tally} if tally else {})
    over = "" if corpus == dataset else f" over {corpus}"
    console.print(report_table(reports, f"Retrieval on {dataset}{over} ({split}, {reports[0].queries} queries)",
                               costs))
    if out:
        from disambig.evaluation.code_version import code_stamp
        from disambig.evaluation.session import lm_model

        run = {"split": split, "corpus": corpus, "code": code_stamp()}  # which code and data made each row
        expanded = {"lm": lm_model(settings.lm), "expansion_state": expansion_state}
        rows = [r.to_dict() | run | ({"expansion": c, "temperature": t, **expanded} if c else {}) | tally
                for r, c, t, tally in zip(reports, costs, temperatures, reflections, strict=True)]
        from disambig.data.atomic import write_json

        write_json(out, rows, ensure_ascii=True)
        console.print(f"scores: {out}")


def expansion_cost(searcher: Any, queries: int) -> dict[str, Any] | None:
    """LM calls, tokens and expansion seconds per judged query of a query-expansion retriever (None for others),
    and how many expansions were read from the cache."""
    usage = getattr(searcher, "usage", None)
    if usage is None or not hasattr(usage, "per_query"):
        return None
    return {**usage.per_query(queries), "from_cache": min(usage.cached, queries)}


def report_table(reports: list, title: str, costs: list[dict[str, Any] | None] | None = None) -> Table:
    """One row per retriever: its metrics and the seconds its queries took; LM calls and tokens per query for the
    query-expansion retrievers."""
    metrics = list(reports[0].metrics)
    costs = costs or [None] * len(reports)
    expanded = any(costs)
    table = Table(title=title)
    columns = ("retriever", *metrics, "seconds",
               *(("LM calls/q", "tokens/q in+out", "expansion s/q", "cached") if expanded else ()))
    for column in columns:
        table.add_column(column, justify="left" if column == "retriever" else "right")
    for report, cost in zip(reports, costs, strict=True):
        row = [report.retriever, *[f"{report.metrics[m]:.4f}" for m in metrics], f"{report.seconds:.1f}"]
        if expanded:
            tokens = f"{cost['made_input_tokens']:.0f}+{cost['made_output_tokens']:.0f}" if cost else "-"
            row += ([f"{cost['made_lm_calls']:.1f}", tokens, f"{cost['made_seconds']:.1f}", str(cost["from_cache"])]
                    if cost else ["-"] * 4)
        table.add_row(*row)
    return table
