"""Question sets as ``dspy.Example``s with the same fields everywhere.

Fields: ``id``, ``question``, ``interpretations`` (list of ``{question, answers}``), ``long_answers``
(ASQA annotators' long answers, else ``[]``), ``evidence`` (ASQA knowledge passages as ``{title, text}``,
else ``[]``) and ``dataset``. Only ``question`` is an input.

AmbigNQ rows carry several annotations: the first ``multipleQAs`` annotation gives the interpretations;
when every annotator saw a single answer, the union of their answers is one interpretation whose
question is the question itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from disambig.data.jsonl import MalformedRowError, read_jsonl, require
from disambig.data.splits import in_split
from disambig.errors import ConfigurationError

HERE = Path(__file__).resolve().parent
DATASETS = {"asqa": HERE / "asqa" / "dev.jsonl", "ambignq": HERE / "ambignq" / "dev.jsonl"}


def load_dataset(name: str, split: str = "all", limit: int | None = None) -> list[dspy.Example]:
    """Load a bundled set (``asqa``, ``ambignq``), a JSONL file in either format, or ``hf:NAME`` from the hub.

    Args:
        name: dataset name, file path, or ``hf:owner/name`` (needs network; rows in either format).
        split: ``train``, ``dev``, ``test`` (by question hash, see ``disambig.data.splits``) or ``all``.
        limit: keep the first ``limit`` questions of the split.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit={limit} must be at least 1")
    rows = _rows(name)
    examples = [ex for ex in rows if in_split(ex.question, split)]
    return examples[:limit] if limit else examples


def _rows(name: str) -> list[dspy.Example]:
    if name.startswith("hf:"):
        return _from_hub(name[3:])
    path = DATASETS.get(name) or Path(name)
    if not path.exists():
        raise ConfigurationError(f"unknown dataset {name!r}; use {', '.join(DATASETS)}, a JSONL path, or hf:NAME")
    label = name if name in DATASETS else path.stem
    return [to_example(row, f"{path}:{number}", label) for number, row in read_jsonl(path)]


def _from_hub(hub_name: str) -> list[dspy.Example]:
    import datasets

    table = datasets.load_dataset(hub_name, split="train")
    return [to_example(dict(row), f"{hub_name}[{i}]", hub_name) for i, row in enumerate(table)]


def to_example(row: dict[str, Any], where: str, dataset: str) -> dspy.Example:
    """One row of ASQA (``qa_pairs``) or AmbigNQ (``annotations``) format as the common example."""
    require(row, ("id", "question"), where)
    try:
        interpretations, long_answers, evidence = _fields(row, where)
    except (KeyError, TypeError, AttributeError) as exc:
        raise MalformedRowError(f"{where}: unexpected structure ({type(exc).__name__}: {exc})") from None
    if not interpretations:
        raise MalformedRowError(f"{where}: no interpretations with answers")
    return dspy.Example(
        id=str(row["id"]), question=row["question"], interpretations=interpretations,
        long_answers=long_answers, evidence=evidence, dataset=dataset,
    ).with_inputs("question")


def _fields(row: dict[str, Any], where: str) -> tuple[list[dict], list[str], list[dict]]:
    if "qa_pairs" in row:
        interpretations = [{"question": p["question"], "answers": list(p["short_answers"])} for p in row["qa_pairs"]]
        long_answers = [a["long_answer"].strip() for a in row.get("annotations", []) if a.get("long_answer")]
        evidence = [{"title": k.get("wikipage") or "", "text": k["content"]}
                    for a in row.get("annotations", []) for k in a.get("knowledge", [])]
    elif "annotations" in row:
        interpretations, long_answers, evidence = ambignq_interpretations(row, where), [], []
    else:
        raise MalformedRowError(f"{where}: neither 'qa_pairs' (ASQA) nor 'annotations' (AmbigNQ)")
    return interpretations, long_answers, evidence


def ambignq_interpretations(row: dict[str, Any], where: str) -> list[dict[str, Any]]:
    annotations = row["annotations"]
    for annotation in annotations:
        if annotation.get("type") == "multipleQAs":
            return [{"question": p["question"], "answers": list(p["answer"])} for p in annotation["qaPairs"]]
    answers: list[str] = []
    for annotation in annotations:
        if annotation.get("type") != "singleAnswer":
            raise MalformedRowError(f"{where}: unknown annotation type {annotation.get('type')!r}")
        answers.extend(a for a in annotation["answer"] if a not in answers)
    return [{"question": row["question"], "answers": answers}] if answers else []
