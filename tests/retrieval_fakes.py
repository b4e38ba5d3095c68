"""A four-passage corpus and a bag-of-words encoder for the retrieval tests (no model download, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

PASSAGES = [
    {"id": "p1", "title": "Aardvark", "text": "The aardvark eats ants at night."},
    {"id": "p2", "title": "Zebra", "text": "A zebra has black and white stripes."},
    {"id": "p3", "title": "Lion", "text": "The lion hunts the zebra on the savanna."},
    {"id": "p4", "title": "Penguin", "text": "Penguins live on the ice and swim."},
]


def write_corpus(path: Path, passages: list[dict[str, str]] = PASSAGES) -> str:
    path.write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    return str(path)


def write_beir(folder: Path, queries: dict[str, str], relevant: dict[str, str],
               passages: list[dict[str, str]] = PASSAGES) -> str:
    """A BEIR folder over ``passages``: ``queries`` maps a query id to its text, ``relevant`` a query id to its one
    relevant passage id (``qrels/test.tsv``, score 1); returns the folder's path."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": p["id"], "title": p["title"], "text": p["text"]}) + "\n" for p in passages))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{pid}\t1\n" for q, pid in relevant.items()))
    return str(folder)


class VocabEmbedder:
    """One axis per vocabulary word holding its count, L2-normalised; other words are ignored."""

    vocab = ("zebra", "stripes", "lion", "ants", "penguin", "ice")

    def __init__(self, name: str = "vocab-bow") -> None:
        self.name = name
        self.calls = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), len(self.vocab)), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace(".", " ").replace(":", " ").split():
                if word in self.vocab:
                    out[row, self.vocab.index(word)] += 1.0
            out[row] /= max(np.linalg.norm(out[row]), 1e-9)
        return out


class Interrupted(RuntimeError):
    """What ``FailingEmbedder`` raises: the build stopped as a killed process would."""


class FailingEmbedder(VocabEmbedder):
    """Encodes ``calls`` chunks (one shard each), then fails as a killed build would."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.left = calls

    def encode(self, texts):
        if self.left == 0:
            raise Interrupted("stopped")
        self.left -= 1
        return super().encode(texts)
