"""``disambig index build``: build the BM25 and dense indexes of a corpus in the cache directory."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

app = typer.Typer(no_args_is_help=True, help="Build retrieval indexes (cached by corpus content and encoder).")

CORPUS = typer.Option("wiki-slice", "--corpus", "-c",
                      help="wiki-slice, dbpedia-entity-5k, a JSONL file of {id, title, text}, a BEIR folder, "
                           "or prebuilt:NAME (a pyserini prebuilt index; `disambig index fetch NAME [--dense]` "
                           "downloads it once; wikipedia-dpr is short for prebuilt:wikipedia-dpr-100w).")
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
    faiss_factory: str | None = typer.Option(
        None, "--faiss-factory",
        help="Dense index as a faiss.index_factory string (e.g. IVF4096,SQ8 or OPQ64,IVF4096,PQ64); default: exact "
             "Flat up to 100k passages, IVF(4*sqrt(n)),SQ8 above. An index of another factory is rebuilt from its "
             "stored vectors (nothing is encoded again)."),
    nprobe: int | None = typer.Option(None, "--nprobe", min=1,
                                      help="IVF cells searched per query, stored with the dense index "
                                           "(default max(64, nlist/64); changing it needs no rebuild)."),
    ef_search: int | None = typer.Option(None, "--ef-search", min=1,
                                         help="HNSW efSearch, stored with the dense index (default 128)."),
    shard_size: int = typer.Option(10_240, "--shard-size", min=1,
                                   help="Passages read at a time; a dense build keeps each encoded shard, so an "
                                        "interrupted build resumes (rerun the same command; --force starts over)."),
    engine: str = typer.Option("local", "--engine",
                               help="Where dense shards are encoded: local (this process) or spark (one shard a "
                                    "Spark task; docs/spark.md)."),
    master: str | None = typer.Option(None, "--master",
                                      help="Spark master for --engine spark: local[N] or a cluster URL "
                                           "(default local[2])."),
) -> None:
    """Index CORPUS for BM25 (Lucene) and/or dense search (FAISS); an up-to-date index is kept unless --force."""
    from disambig.retrieval.faiss_index import SearchParams

    if kind not in ("bm25", "dense", "all"):
        raise ValueError(f"unknown index kind {kind!r}; choose bm25, dense or all")
    dense = DenseOptions(faiss_factory, SearchParams(nprobe, ef_search), shard_size,
                         spark_encoding(engine, master, embedder, kind))
    settings = load_settings(threads=threads)
    console = Console()
    table = Table(title=f"Indexes of {corpus}")
    for column in ("kind", "status", "passages", "build s", "folder"):
        table.add_column(column, justify="right" if column in ("passages", "build s") else "left")
    for name in ("bm25", "dense") if kind == "all" else (kind,):
        encoder = make_embedder(embedder) if name == "dense" else None
        folder, built = build_with_progress(console, name, corpus, settings, encoder, force, dense)
        manifest = _manifest(folder)
        table.add_row(name, "built" if built else "up to date", str(manifest.get("passages", "-")),
                      str(manifest.get("build_seconds", "-")), str(folder))
    console.print(table)


@dataclass(frozen=True)
class DenseOptions:
    """What ``index build`` asks of a dense index: its FAISS factory (None: by size) and stored search parameters."""

    faiss_factory: str | None = None
    search: Any = None
    shard_size: int = 10_240
    encode: Any = None


def spark_encoding(engine: str, master: str | None, embedder: str, kind: str) -> Any:
    """The Spark encoding ``--engine spark`` asks for (None for ``local``).

    Raises:
        ValueError: an unknown engine, ``--master`` without ``--engine spark``, or a Spark build without dense.
    """
    if engine not in ("local", "spark"):
        raise ValueError(f"unknown --engine {engine!r}; choose local or spark")
    if engine == "local":
        if master is not None:
            raise ValueError(f"--master {master!r} applies to --engine spark only; add --engine spark or drop it")
        return None
    if kind == "bm25":
        raise ValueError("--engine spark encodes dense shards, and --kind bm25 has none; use --kind dense or all")
    from disambig.retrieval.spark_encode import SparkEncoding

    return SparkEncoding(embedder, master or "local[2]")


def build_with_progress(console: Console, kind: str, corpus: str, settings: Any, encoder: Any = None,
                        force: bool = False, dense: DenseOptions = DenseOptions()) -> tuple[Path, bool]:
    """Build one index (unless up to date) behind a progress bar; return its folder and whether it was built.

    Raises:
        IndexCorruptError: the index exists but is damaged (``verify_index``: one line naming the file and the
            rebuild command), rather than calling it up to date.
    """
    from disambig.retrieval.bm25 import PREBUILT
    from disambig.retrieval.factory import ensure_index, needs_build, verify_index
    from disambig.retrieval.prebuilt import corpus_name

    corpus = corpus_name(corpus)
    if not corpus.startswith(PREBUILT) and not force and not needs_build(kind, corpus, settings.cache_dir, encoder,
                                                                          dense.faiss_factory):
        folder = ensure_index(kind, corpus, settings.cache_dir, encoder, search=dense.search)
        verify_index(kind, corpus, folder)
        return folder, False
    build = {"force": force, "threads": settings.threads, "faiss_factory": dense.faiss_factory, "search": dense.search,
             "shard_size": dense.shard_size, "encode": dense.encode}
    if not console.is_terminal:  # a bar would only show once done; the build logs its progress lines instead
        return ensure_index(kind, corpus, settings.cache_dir, encoder, **build), True
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=console) as progress:
        task = progress.add_task(f"{kind} index of {corpus}", total=None)
        folder = ensure_index(kind, corpus, settings.cache_dir, encoder, **build,
                              progress=lambda done, total: progress.update(task, completed=done, total=total))
    return folder, True


@app.command("fetch")
@user_errors
def fetch(
    name: str = typer.Argument(..., help="A pyserini prebuilt BM25 index, e.g. wikipedia-dpr-100w."),
    dense: bool = typer.Option(False, "--dense",
                               help="Also fetch the dense index paired with NAME (wikipedia-dpr-100w: pyserini's "
                                    "wikipedia-dpr-100w.dpr-multi FAISS index, ~60 GB) and the query encoder it was "
                                    "built for (facebook/dpr-question_encoder-multiset-base)."),
) -> None:
    """Download pyserini's prebuilt index NAME once (needs network); then `--corpus prebuilt:NAME` searches it
    offline with --retriever bm25, and after --dense with dense and hybrid too."""
    from disambig.retrieval import prebuilt
    from disambig.retrieval.bm25 import PREBUILT, BM25Retriever

    if dense:
        prebuilt.dense_index(name)  # an unpaired name is refused before any download
    retriever = BM25Retriever.prebuilt(name)
    table = Table(title=f"Prebuilt index {name}")
    for column in ("corpus", "kind", "passages", "folder"):
        table.add_column(column, justify="right" if column == "passages" else "left")
    table.add_row(f"{PREBUILT}{name}", "bm25", f"{retriever.size:,}", str(retriever.folder))
    if dense:
        from disambig.retrieval.prebuilt_dense import PrebuiltDenseRetriever, download_query_encoder

        searcher = PrebuiltDenseRetriever.prebuilt(name, retriever)
        table.add_row(f"{PREBUILT}{name}", f"dense ({download_query_encoder(name)})", f"{searcher.size:,}",
                      str(searcher.folder))
    Console().print(table)


def make_embedder(model: str) -> Any:
    from disambig.retrieval.embedder import Embedder

    return Embedder(model)


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
