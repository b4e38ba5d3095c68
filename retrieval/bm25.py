"""BM25 on a Lucene index built and searched through pyserini (JVM started on first use)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from disambig.retrieval.base import Progress, SharedIndex, check_k, check_queries, check_query
from disambig.retrieval.passage import Passage
from disambig.retrieval.passage_store import Passages, as_passages
from disambig.retrieval.store import CorpusShards, IndexCorruptError, package_version, rebuild_hint

LUCENE_DIR = "lucene"
BATCH = 2000
PREBUILT = "prebuilt:"


def write_lucene(folder: Path, shards: CorpusShards, progress: Progress | None = None,
                 threads: int = 1) -> dict[str, Any]:
    """Index ``title + text`` as the Lucene ``contents`` field (Anserini's English analyzer), raw JSON stored,
    shard by shard. A resumed build indexes every shard again (Lucene's half-written index is not kept)."""
    _, index_lucene = _pyserini()
    shutil.rmtree(folder / LUCENE_DIR, ignore_errors=True)
    indexer = index_lucene.LuceneIndexer(args=["-index", str(folder / LUCENE_DIR), "-storeRaw"], threads=threads)
    done = 0
    for _, passages in shards:
        for start in range(0, len(passages), BATCH):
            batch = passages[start : start + BATCH]
            indexer.add_batch_raw([json.dumps({"id": p["id"], "contents": contents(p)}) for p in batch])
            done += len(batch)
            if progress:
                progress(done, shards.total)
    indexer.close()
    return {"backend": f"pyserini {package_version('pyserini')}", "fields": "title + text"}


CODEC_MAGIC = bytes.fromhex("3fd76c17")
FOOTER_MAGIC = bytes.fromhex("c02893e8")
"""Lucene's ``CodecUtil``: every index file starts with ``CODEC_MAGIC`` and ends with a 16-byte footer starting with
``FOOTER_MAGIC`` (then a checksum); ``write.lock`` is empty."""


def lucene_mismatch(folder: Path, manifest: dict[str, Any]) -> str | None:
    """Why the Lucene index in ``folder`` is damaged, naming the file, or None: it must have a ``segments_N`` file,
    and every file must carry Lucene's header and footer marks. Cheap (two small reads a file, no JVM); a file
    damaged between its marks shows when Lucene opens it (``BM25Retriever``)."""
    lucene = folder / LUCENE_DIR
    if not lucene.is_dir():
        return f"its {LUCENE_DIR} folder is missing"
    if not any(lucene.glob("segments_*")):
        return f"its {LUCENE_DIR} folder has no segments_N file"
    for path in sorted(lucene.iterdir()):
        if path.is_file() and path.name != "write.lock" and not _lucene_marked(path):
            return f"its {LUCENE_DIR}/{path.name} is cut short or not a Lucene file"
    return None


def _lucene_marked(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(len(CODEC_MAGIC))
        handle.seek(max(0, path.stat().st_size - 16))
        return head == CODEC_MAGIC and handle.read(len(FOOTER_MAGIC)) == FOOTER_MAGIC


def contents(passage: dict[str, str]) -> str:
    """The text BM25 sees: the title on its own line, then the passage."""
    return f"{passage['title']}\n{passage['text']}".strip()


class BM25Retriever(SharedIndex):
    """Lucene BM25 over an index folder made by ``write_lucene`` or a pyserini prebuilt index.

    Args:
        folder: the index folder (holding ``lucene/``).
        passages: the indexed passages: a list of ``{id, title, text}`` or an on-disk store
            (``disambig.retrieval.passage_store``), from which only the hits are read.
        corpus: the corpus name or path, for error messages.
        k1, b: BM25 parameters (pyserini's defaults 0.9 and 0.4).
        threads: threads for ``batch_search``.
    """

    name = "bm25"

    def __init__(self, folder: Path, passages: Passages | list[dict[str, str]], corpus: str, k1: float = 0.9,
                 b: float = 0.4, threads: int = 1) -> None:
        self.folder = folder
        self.corpus = corpus
        self.k1, self.b = k1, b
        self.threads = threads
        self._passages: Passages | None = as_passages(passages)
        self._searcher: Any = None
        self._size = len(passages)

    @classmethod
    def prebuilt(cls, name: str, k1: float = 0.9, b: float = 0.4, threads: int = 1,
                 download: bool = True) -> BM25Retriever:
        """Open pyserini's prebuilt index ``name`` (e.g. ``wikipedia-dpr-100w``) from pyserini's cache, fetching it
        first when ``download`` (needs network once; ``disambig index fetch NAME``).

        Raises:
            ConfigurationError: an unknown name, or the download failed.
            IndexMissingError: not fetched yet and ``download`` is False.
        """
        from disambig.retrieval import prebuilt

        folder = prebuilt.fetch(name) if download else prebuilt.fetched(name)
        if folder is None:
            from disambig.retrieval.store import IndexMissingError

            raise IndexMissingError(f"prebuilt index {name!r} is not in pyserini's cache "
                                    f"{str(prebuilt.prebuilt_folder(name).parent)!r}; fetch it once with "
                                    f"`disambig index fetch {name}` (needs network)")
        retriever = cls(folder, [], f"{PREBUILT}{name}", k1, b, threads)
        retriever._passages = None
        retriever._size = int(retriever._open_lucene(folder).num_docs)
        return retriever

    @property
    def size(self) -> int:
        return self._size

    def search(self, query: str, k: int = 10) -> list[Passage]:
        query, k = check_query(query), check_k(k, self.size)
        return self._to_passages(self._lucene().search(query, k))

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        queries, k = check_queries(queries), check_k(k, self.size)
        if not queries:
            return []
        qids = [str(i) for i in range(len(queries))]
        hits = self._lucene().batch_search(queries, qids, k, self.threads)
        return [self._to_passages(hits[q]) for q in qids]

    def _to_passages(self, hits: list[Any]) -> list[Passage]:
        rows = self.rows([hit.docid for hit in hits])
        return [Passage(pid, title, text, float(hit.score), rank)
                for rank, (hit, (pid, title, text)) in enumerate(zip(hits, rows, strict=True), 1)]

    def rows(self, docids: list[str]) -> list[tuple[str, str, str]]:
        """``(id, title, text)`` of each docid, from the passage store or, in a prebuilt index, Lucene's stored
        documents (how a prebuilt dense index gets its passage texts).

        Raises:
            IndexCorruptError: a docid is not in the index.
        """
        if self._passages is None:
            return [(docid, *split_raw(self._stored(docid))) for docid in docids]
        found = self._passages.by_ids(docids)
        if any(p is None for p in found):
            raise self._damaged(f"Lucene index at {str(self.folder)!r} returns passages its passage store lacks")
        return [(p["id"], p["title"], p["text"]) for p in found if p is not None]

    def _stored(self, docid: str) -> str:
        document = self._lucene().doc(docid)
        if document is None:
            raise IndexCorruptError(f"Lucene index at {str(self.folder)!r} has no document {docid!r}")
        return document.raw() or ""

    def _lucene(self) -> Any:
        if self._searcher is None:
            self._searcher = _configured(self._open(), self.k1, self.b)
        return self._searcher

    def _open_lucene(self, path: Path) -> Any:
        """The Lucene searcher of ``path``, kept for later searches."""
        search_lucene, _ = _pyserini()
        if not path.is_dir():
            raise self._damaged(f"no Lucene index at {str(path)!r}")
        try:
            searcher = search_lucene.LuceneSearcher(str(path))
        except Exception as exc:  # noqa: BLE001 - the JVM raises its own exception types
            raise self._damaged(f"Lucene index at {str(path)!r} cannot be opened ({java_message(exc)})") from None
        self._searcher = _configured(searcher, self.k1, self.b)
        return searcher

    def _open(self) -> Any:
        path = self.folder / LUCENE_DIR
        searcher = self._open_lucene(path)
        if searcher.num_docs != self._size:
            raise self._damaged(f"Lucene index at {str(path)!r} holds {searcher.num_docs} documents, not {self._size}")
        return searcher

    def _damaged(self, what: str) -> IndexCorruptError:
        return IndexCorruptError(f"{what}; rebuild it with `{rebuild_hint(self.corpus, 'bm25')}`")


def split_raw(raw: str) -> tuple[str, str]:
    """``(title, text)`` of a stored pyserini document: ``{title, text}`` JSON, or ``contents`` whose first line
    is the title when there are several lines (Wikipedia-DPR writes ``"Title"\\ntext``)."""
    try:
        row = json.loads(raw)
    except json.JSONDecodeError:
        row = {"contents": raw}
    if not isinstance(row, dict):
        row = {"contents": raw}
    if "text" in row:
        return str(row.get("title") or ""), str(row["text"])
    body = str(row.get("contents") or "")
    title, sep, text = body.partition("\n")
    return (title.strip().strip('"'), text.strip()) if sep else ("", body)


def java_message(exc: BaseException, limit: int = 200) -> str:
    """The first line of a JVM exception, without pyjnius' prefix or the Java stack trace."""
    first = (str(exc).splitlines() or [type(exc).__name__])[0].removeprefix("JVM exception occurred: ")
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _configured(searcher: Any, k1: float, b: float) -> Any:
    searcher.set_bm25(float(k1), float(b))
    return searcher


def _pyserini() -> Any:
    from disambig.retrieval.java import pyserini_lucene

    return pyserini_lucene()
