"""Bundled benchmark data and loaders to ``dspy.Example`` with one schema across datasets."""

from __future__ import annotations

from disambig.data.corpus import load_corpus
from disambig.data.loaders import DATASETS, load_dataset

__all__ = ["DATASETS", "load_corpus", "load_dataset"]
