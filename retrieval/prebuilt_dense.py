"""pyserini's prebuilt dense indexes (``wikipedia-dpr-100w.dpr-multi``): a FAISS file searched with the query encoder
it was built for, the passage texts read from the paired prebuilt BM25 index's stored documents, as pyserini's
``FaissSearcher`` does.

A fetched index is a folder of two files: ``index`` (FAISS, inner product over DPR's unnormalised 768-d vectors;
opened memory-mapped, ~65 GB for the 21M DPR passages) and ``docid`` (one Lucene docid a line, in row order; read
as bytes with an offset per row, not as 21M Python strings). The query encoder is loaded from the Hugging Face cache
only; ``disambig index fetch NAME --dense`` downloads it with the index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.retrieval import faiss_index, prebuilt
from disambig.retrieval.base import BatchRetriever, passive_openmp
from disambig.retrieval.passage import Passage
from disambig.retrieval.store import IndexCorruptError, IndexMissingError

INDEX_FILE = "index"
DOCID_FILE = "docid"


class DprQueryEncoder:
    """DPR question vectors (the pooler output, unnormalised, as pyserini's ``DprQueryEncoder``), loaded offline.

    Args:
        model: a Hugging Face model id in the local cache, or a local folder.
        corpus: the prebuilt BM25 index whose dense index it serves, for the error message's fetch command.
        batch_size: questions per forward pass.

    DPR encodes passages with another model (its context encoder), so ``encodes_passages`` is False: a program that
    compares passages with each other or with a question (ADF's gate, reranking) takes its own sentence encoder.
    """

    encodes_passages = False

    def __init__(self, model: str, corpus: str, batch_size: int = 32) -> None:
        self.model = model
        self.corpus = corpus
        self.batch_size = batch_size
        self._loaded: tuple[Any, Any] | None = None

    @property
    def name(self) -> str:
        return self.model

    def encode(self, texts: list[str]) -> Any:
        """``(n, 768)`` float32 question vectors of ``texts``."""
        import numpy as np
        import torch

        if isinstance(texts, str) or not isinstance(texts, list | tuple):
            raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
        tokenizer, model = self._load()
        chunks = []
        for start in range(0, len(texts), self.batch_size):
            batch = tokenizer(list(texts[start : start + self.batch_size]), padding=True, truncation=True,
                              return_tensors="pt")
            with torch.no_grad():
                chunks.append(model(**batch).pooler_output.numpy())
        return np.vstack(chunks).astype(np.float32) if chunks else np.zeros((0, 768), dtype=np.float32)

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            passive_openmp()
            from transformers import DPRQuestionEncoder, DPRQuestionEncoderTokenizer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # a "Loading weights" bar on every load, even from disk
            try:
                tokenizer = DPRQuestionEncoderTokenizer.from_pretrained(self.model, local_files_only=True)
                model = DPRQuestionEncoder.from_pretrained(self.model, local_files_only=True).eval()
            except OSError:
                raise ConfigurationError(missing_encoder(self.model, self.corpus)) from None
            self._loaded = tokenizer, model
        return self._loaded


def missing_encoder(model: str, corpus: str) -> str:
    """The one-line error for a query encoder that is not in the Hugging Face cache."""
    return (f"query encoder {model!r}, which {prebuilt.dense_index(corpus)} was built for, is not in the Hugging Face "
            f"cache (searches never download); fetch it once with `disambig index fetch {corpus} --dense` or "
            f"`hf download {model}`")


def query_encoder(corpus: str) -> Any:
    """The query encoder of the dense index paired with the prebuilt BM25 index ``corpus`` (loaded on first
    ``encode``)."""
    return DprQueryEncoder(prebuilt.QUERY_ENCODERS[prebuilt.dense_index(corpus)], corpus)


def download_query_encoder(corpus: str) -> str:
    """Download the query encoder of the dense index paired with ``corpus`` into the Hugging Face cache (needs
    network); return its model id.

    Raises:
        ConfigurationError: the download failed.
    """
    from huggingface_hub import snapshot_download

    model = prebuilt.QUERY_ENCODERS[prebuilt.dense_index(corpus)]
    try:
        snapshot_download(model, ignore_patterns=["*.h5", "*.msgpack", "*.onnx", "*.ot"])
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"could not download query encoder {model!r} ({type(exc).__name__}); it needs "
                                 "network once (unset HF_HUB_OFFLINE)") from None
    return model


class PrebuiltDenseRetriever(BatchRetriever):
    """Nearest passages to the query vector in a pyserini prebuilt FAISS index.

    Args:
        folder: the fetched index folder (``index`` + ``docid``).
        texts: the paired prebuilt ``BM25Retriever``, whose stored documents give each hit's title and text.
        corpus: the prebuilt BM25 index's name (``wikipedia-dpr-100w``), for error messages.
        encoder: the query encoder the index was built for (``encode(texts) -> (n, d)``).
    """

    name = "dense"

    def __init__(self, folder: Path, texts: Any, corpus: str, encoder: Any) -> None:
        self.folder = folder
        self.texts = texts
        self.corpus = corpus
        self.index_name = prebuilt.dense_index(corpus)
        self.embedder = encoder
        self._index: Any = None
        self._docids: tuple[Any, Any] | None = None

    @classmethod
    def prebuilt(cls, corpus: str, texts: Any, download: bool = True) -> PrebuiltDenseRetriever:
        """Open the dense index paired with the prebuilt BM25 index ``corpus`` (``prebuilt.DENSE_INDEXES``), fetching
        it first when ``download``.

        Raises:
            ConfigurationError: no dense index is paired with ``corpus``, or the download failed.
            IndexMissingError: not fetched yet and ``download`` is False.
        """
        name = prebuilt.dense_index(corpus)
        folder = prebuilt.fetch(name, "dense") if download else prebuilt.fetched(name, "dense")
        if folder is None:
            raise IndexMissingError(f"prebuilt dense index {name!r} is not in pyserini's cache "
                                    f"{str(prebuilt.prebuilt_folder(name, 'dense').parent)!r}; fetch it once with "
                                    f"`disambig index fetch {corpus} --dense` (needs network)")
        return cls(folder, texts, corpus, query_encoder(corpus))

    @property
    def size(self) -> int:
        return int(self._faiss().ntotal)

    def ranked(self, queries: list[str], k: int) -> list[list[Passage]]:
        import numpy as np

        index = self._faiss()
        vectors = np.ascontiguousarray(np.atleast_2d(self.embedder.encode(queries)), dtype=np.float32)
        if vectors.shape[1] != index.d:
            raise ConfigurationError(f"the query encoder gives {vectors.shape[1]}-d vectors but {self.index_name} "
                                     f"holds {index.d}-d ones; use {prebuilt.QUERY_ENCODERS[self.index_name]}")
        scores, rows = index.search(vectors, k)
        return [self._to_passages(s, r) for s, r in zip(scores, rows, strict=True)]

    def stored_vectors(self, ids: list[str]) -> None:
        """None: the prebuilt index keeps no docid -> row map, so a reranker encodes the passages itself."""
        return None

    def _to_passages(self, scores: Any, rows: Any) -> list[Passage]:
        hits = [(float(s), int(r)) for s, r in zip(scores, rows, strict=True) if r >= 0]
        found = self.texts.rows([self._docid(r) for _, r in hits])
        return [Passage(pid, title, text, score, rank)
                for rank, ((score, _), (pid, title, text)) in enumerate(zip(hits, found, strict=True), 1)]

    def _docid(self, row: int) -> str:
        data, ends = self._docid_lines()
        start = int(ends[row - 1]) + 1 if row else 0
        return bytes(data[start : int(ends[row])]).decode("utf-8").rstrip("\r")

    def _docid_lines(self) -> tuple[Any, Any]:
        """The ``docid`` file memory-mapped and the offset of each line's end; checked against the index's rows."""
        import numpy as np

        if self._docids is None:
            path = self.folder / DOCID_FILE
            try:
                data = np.memmap(path, dtype=np.uint8, mode="r")
            except (OSError, ValueError) as exc:
                raise self._damaged(path, f"cannot be read ({type(exc).__name__})") from None
            ends = np.flatnonzero(data == ord("\n"))
            if len(data) and data[-1] != ord("\n"):
                ends = np.append(ends, len(data))
            if len(ends) != self._faiss().ntotal:
                raise self._damaged(path, f"lists {len(ends)} docids for {self._faiss().ntotal} vectors")
            self._docids = data, ends
        return self._docids

    def _faiss(self) -> Any:
        if self._index is None:
            path = self.folder / INDEX_FILE
            try:
                self._index = faiss_index.read(path)
            except (RuntimeError, OSError) as exc:
                raise self._damaged(path, f"cannot be read ({type(exc).__name__})") from None
        return self._index

    def _damaged(self, path: Path, what: str) -> IndexCorruptError:
        return IndexCorruptError(f"prebuilt dense index file {str(path)!r} {what}; delete {str(self.folder)!r} and "
                                 f"fetch it again with `disambig index fetch {self.corpus} --dense`")

