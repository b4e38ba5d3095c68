"""Shared pieces of the grounded-scoring tests: a question about goal records, two runs' answers to it, a scripted
judge, and run folders as ``disambig eval`` writes them.

``program_fakes.FakeRetriever`` ranks p1 (Ronaldo), p2 (Sinclair), p3 (Bican) first for ``QUESTION``, so U_q at
depth 3 is [p1, p2, p3].
"""

from __future__ import annotations

import json
from pathlib import Path

from dspy.utils import DummyLM
from program_fakes import CORPUS

from disambig.lm.adapter import CompactJSONAdapter

QUESTION = "Who has scored the most international goals?"
P1, P2, P3, P6 = ({"id": p.id, "title": p.title, "text": p.text} for p in (CORPUS[0], CORPUS[1], CORPUS[2], CORPUS[5]))

# One cites p1 (Ronaldo), which supports it; one is a pseudo-interpretation (no answer, no passage) that only
# p2 (Sinclair) answers, and its run retrieved just p6 (Weather).
CITED = {"question": "Who holds the men's record?", "answer": "Ronaldo", "passage_ids": ["p1"]}
PSEUDO = {"question": "Who holds the women's record?", "answer": "", "passage_ids": []}
VERDICT_ROW = {"id": "q1", "question": QUESTION, "interpretations": [CITED], "passages": [P1]}
DIVA_ROW = {"id": "q1", "question": QUESTION, "interpretations": [PSEUDO], "passages": [P6]}


def judge_lm(extra: dict | None = None) -> DummyLM:
    """Supported: the men's reading by Ronaldo's passage, the women's (any answer) by Sinclair's; nothing matches.
    ``extra`` replies are looked up first."""
    script = dict(extra or {})
    script |= {"answer: Ronaldo\npassage: Cristiano Ronaldo": {"supported": True},
               "women's record?\nanswer: \npassage: Christine Sinclair": {"supported": True}}
    script |= {"passage: ": {"supported": False}, "candidates: ": {"matched": False}}
    return DummyLM(script, adapter=CompactJSONAdapter())


def text(passage: dict) -> str:
    """A passage as the judge sees it (title, then text)."""
    return f"{passage['title']} {passage['text']}"


def write_asqa(path: Path) -> str:
    """``QUESTION`` as a one-row ASQA file (gold: the men's and the women's record); returns its path."""
    row = {"id": "q1", "question": QUESTION,
           "qa_pairs": [{"question": "Men's record?", "short_answers": ["Cristiano Ronaldo"]},
                        {"question": "Women's record?", "short_answers": ["Christine Sinclair"]}],
           "annotations": [{"long_answer": "Ronaldo for men, Sinclair for women.", "knowledge": []}]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return str(path)


def write_run(folder: Path, dataset: str, row: dict, commit: str) -> Path:
    """A run folder answering ``row`` (params claimed at ``commit``, rows without code stamps, a traced cost)."""
    folder.mkdir(parents=True)
    (folder / "params.json").write_text(json.dumps({"program": folder.name, "dataset": dataset, "split": "all",
                                                    "lm": "local", "code": {"commit": commit, "dirty": False}}))
    prediction = {k: v for k, v in row.items() if k not in ("id", "question")}
    result = {"id": row["id"], "question": row["question"], "prediction": prediction, "scores": {}, "error": None,
              "trace": {"lm_calls": 2, "input_tokens": 30, "output_tokens": 10, "retrieval_calls": 1, "seconds": 4.0}}
    (folder / "results.jsonl").write_text(json.dumps(result) + "\n")
    return folder
