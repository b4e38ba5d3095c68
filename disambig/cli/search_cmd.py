"""``disambig search``: the top passages of one query from a built index, as a table."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import index_cmd, options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

SNIPPET = 200


@user_errors
def search(
    query: str = typer.Argument(..., help="The query text."),
    retriever: str = typer.Option("bm25", "--retriever", "-r", help="bm25, dense or hybrid."),
    k: int = typer.Option(5, "-k", "--top-k", help="Passages to show."),
    corpus: str = index_cmd.CORPUS,
    embedder: str = index_cmd.EMBEDDER,
    threads: int | None = options.THREADS,
) -> None:
    """Search CORPUS for QUERY and print rank, score, id, title and text (build the index first)."""
    from disambig.retrieval import build_retriever
    from disambig.retrieval.base import check_query

    check_query(query)
    settings = load_settings(threads=threads)
    encoder = index_cmd.make_embedder(embedder) if retriever in ("dense", "hybrid") else None
    searcher = build_retriever(retriever, corpus=corpus, settings=settings, embedder=encoder, auto_build=False)
    hits = searcher.search(query, k)
    table = Table(title=f"{retriever} · {corpus} · {query}")
    for column in ("#", "score", "id", "title", "text"):
        table.add_column(column, justify="right" if column in ("#", "score") else "left")
    for hit in hits:
        text = hit.text if len(hit.text) <= SNIPPET else hit.text[: SNIPPET - 1] + "…"
        table.add_row(str(hit.rank), f"{hit.score:.4f}", hit.id, hit.title, text)
    Console().print(table)
