"""``disambig search``: the top passages of one query from a built index, as a table."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import index_cmd, options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

SNIPPET = 200
RETRIEVERS = ("bm25, dense, hybrid, or a query expansion: amd-sparse, amd-dense, amd-rrf, q2d-sparse, q2d-dense, "
              "q2c-sparse, q2c-dense, genqr-ensemble, genqr-fusion (these call the LM; expansions are cached).")
TEMPERATURE = typer.Option(None, "--temperature", min=0.0, max=2.0,
                           help="Sampling temperature of query-expansion LM calls (default 0.5, AMD's poster).")
EXPANSION_STATE = typer.Option(None, "--expansion-state",
                               help="A compiled expansion program's JSON state for the query-expansion retrievers.")


@user_errors
def search(
    query: str = typer.Argument(..., help="The query text."),
    retriever: str = typer.Option("bm25", "--retriever", "-r", help=RETRIEVERS),
    k: int = typer.Option(5, "-k", "--top-k", help="Passages to show."),
    corpus: str = index_cmd.CORPUS,
    embedder: str = index_cmd.EMBEDDER,
    threads: int | None = options.THREADS,
    lm: str | None = options.LM,
    api_base: str | None = options.API_BASE,
    temperature: float | None = TEMPERATURE,
    expansion_state: str | None = EXPANSION_STATE,
) -> None:
    """Search CORPUS for QUERY and print rank, score, id, title and text (build the index first).

    A query-expansion retriever first prints the expansion (sub-questions, generated texts) and its LM cost.
    """
    from disambig.retrieval import build_retriever
    from disambig.retrieval.base import check_query
    from disambig.retrieval.factory import index_kinds

    check_query(query)
    settings = load_settings(threads=threads, lm=lm)
    encoder = index_cmd.make_embedder(embedder) if "dense" in index_kinds(retriever) else None
    searcher = build_retriever(retriever, corpus=corpus, settings=settings, embedder=encoder, auto_build=False,
                               **expansion_options(retriever, temperature, expansion_state))
    console = Console()
    if hasattr(searcher, "expand"):
        console.print(expansion_table(searcher.expand(query), searcher))
    hits = searcher.search(query, k)
    table = Table(title=f"{retriever} · {corpus} · {query}")
    for column in ("#", "score", "id", "title", "text"):
        table.add_column(column, justify="right" if column in ("#", "score") else "left")
    for hit in hits:
        text = hit.text if len(hit.text) <= SNIPPET else hit.text[: SNIPPET - 1] + "…"
        table.add_row(str(hit.rank), f"{hit.score:.4f}", hit.id, hit.title, text)
    console.print(table)


def expansion_options(retriever: str, temperature: float | None, state: str | None) -> dict[str, Any]:
    """The ``build_retriever`` options a query-expansion ``retriever`` gets from the command line."""
    from disambig.retrieval.factory import EXPANDED_KINDS

    if retriever not in EXPANDED_KINDS:
        if temperature is not None or state:
            raise ValueError(f"--temperature and --expansion-state apply to query-expansion retrievers, not "
                             f"{retriever!r}")
        return {}
    given = {"temperature": temperature, "state": state}
    return {name: value for name, value in given.items() if value is not None}


def expansion_table(expansion: Any, searcher: Any) -> Table:
    """The sub-questions and generated texts of one expansion, with what it cost (0 LM calls when cached)."""
    usage = searcher.usage
    cost = ("from the cache, no LM call" if usage.cached else
            f"{usage.lm_calls} LM calls, {usage.input_tokens} + {usage.output_tokens} tokens, {usage.seconds:.1f} s")
    table = Table(title=f"expansion · {cost}")
    table.add_column("part")
    table.add_column("text")
    for kind, question in zip(expansion.notes.get("kinds") or ["sub-question"] * 3, expansion.sub_questions,
                              strict=False):
        table.add_row(kind, question)
    for answer, kept in zip(expansion.notes.get("answers") or [], expansion.notes.get("kept") or [], strict=False):
        table.add_row("answer" if kept else "answer (discarded)", answer)
    for text in expansion.texts:
        table.add_row("refined" if "answers" in expansion.notes else "text", text)
    for failure in expansion.notes.get("failures") or []:
        table.add_row("unparsed", failure)
    return table
