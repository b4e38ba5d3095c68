"""Deterministic train/dev/test splits by a hash of the question text.

``sha1(normalised question) mod 100``: 0–59 train, 60–79 dev, 80–99 test. The same question lands in the
same split in every dataset that contains it (ASQA questions are a subset of AmbigNQ's), so nothing
tuned on AmbigNQ train leaks into ASQA dev.
"""

from __future__ import annotations

import hashlib

SPLITS = ("train", "dev", "test", "all")
BOUNDS = {"train": (0, 60), "dev": (60, 80), "test": (80, 100)}


def bucket(question: str) -> int:
    text = " ".join(question.lower().split())
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 100


def split_of(question: str) -> str:
    b = bucket(question)
    return next(name for name, (lo, hi) in BOUNDS.items() if lo <= b < hi)


def in_split(question: str, split: str) -> bool:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return split == "all" or split_of(question) == split
