"""``disambig index build``: build the BM25 and dense indexes of a corpus in the cache directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

app = typer.Typer(no_args_is_help=True, help="Build retrieval indexes (cached by corpus content and encoder).")

CORPUS = typer.Option("wiki-slice", "--corpus", "-c",
                      help="wiki-slice, dbpedia-entity-5k, a JSONL file of {id, title, text}, a BEIR folder, "
                           "or prebuilt:NAME (pyserini BM25 index, needs network once).")
EMBEDDER = typer.Option("all-MiniLM-L6-v2", "--embedder",
                        help="Dense encoder: all-MiniLM-L6-v2 or a local sentence-transformers folder.")


@app.command("build")
@user_errors
def build(
    corpus: str = CORPUS,
    kind: str = typer.Option("all", "--kind", help="bm25, dense or all."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if an up-to-date index exists."),
    embedder: str = EMBEDDER,
    threads: int | None = options.THREADS,
) -> None:
    """Index CORPUS for BM25 (Lucene) and/or dense search (FAISS); an up-to-date index is kept unless --force."""
    if kind not in ("bm25", "dense", "all"):
        raise ValueError(f"unknown index kind {kind!r}; choose bm25, dense or all")
    settings = load_settings(threads=threads)
    console = Console()
    table = Table(title=f"Indexes of {corpus}")
    for column in ("kind", "status", "passages", "build s", "folder"):
        table.add_column(column, justify="right" if column in ("passages", "build s") else "left")
    for name in ("bm25", "dense") if kind == "all" else (kind,):
        encoder = make_embedder(embedder) if name == "dense" else None
        folder, built = build_with_progress(console, name, corpus, settings, encoder, force)
        manifest = _manifest(folder)
        table.add_row(name, "built" if built else "up to date", str(manifest.get("passages", "-")),
                      str(manifest.get("build_seconds", "-")), str(folder))
    console.print(table)


def build_with_progress(console: Console, kind: str, corpus: str, settings: Any, encoder: Any = None,
                        force: bool = False) -> tuple[Path, bool]:
    """Build one index (unless up to date) behind a progress bar; return its folder and whether it was built."""
    from disambig.retrieval.bm25 import PREBUILT
    from disambig.retrieval.factory import ensure_index, index_path

    if not corpus.startswith(PREBUILT) and not force:
        folder = index_path(kind, corpus, settings.cache_dir, encoder)
        if folder.is_dir():
            return folder, False
    if not console.is_terminal:  # a bar would only show once done; the build logs its progress lines instead
        return ensure_index(kind, corpus, settings.cache_dir, encoder, force=True, threads=settings.threads), True
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        task = progress.add_task(f"{kind} index of {corpus}", total=None)
        folder = ensure_index(kind, corpus, settings.cache_dir, encoder, force=True, threads=settings.threads,
                              progress=lambda done, total: progress.update(task, completed=done, total=total))
    return folder, True


def make_embedder(model: str) -> Any:
    from disambig.retrieval.embedder import Embedder

    return Embedder(model)


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
