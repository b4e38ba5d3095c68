"""An extractive question-answering reader over a long answer, from a local Hugging Face model folder.

ASQA's official Disambig-F1 (and the ADF authors' ASQA D-F1) ask a SQuAD-style reader each disambiguated
question with the system's long answer as context. ``QAReader`` wraps ``transformers``' question-answering
pipeline on CPU around a model folder the user already has (``save_pretrained`` output: config, weights and a
fast tokenizer); nothing is ever downloaded (``local_files_only=True``). The model loads on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.paths import expanded


class QAReader:
    """Best answer span of ``context`` for ``question``, from a local question-answering model.

    Args:
        path: a folder holding a Hugging Face question-answering model and its fast tokenizer, such as a
            local copy of ``deepset/roberta-base-squad2``.
        max_answer_len: longest span in tokens (the pipeline's default, 15).
    """

    def __init__(self, path: str | Path, max_answer_len: int = 15) -> None:
        self.path = expanded(path)
        self.max_answer_len = max_answer_len
        self._pipeline: Any = None

    def answers(self, questions: list[str], context: str, allow_null: bool) -> list[str]:
        """The best span for each question (``""`` for a null answer when ``allow_null``; empty context: all ``""``).

        Args:
            questions: disambiguated questions, asked one by one against the same context.
            context: the system's long answer.
            allow_null: let the reader answer "no answer" (SQuAD 2.0 style, as ASQA's official scorer does);
                otherwise a span is always returned (the pipeline default, as the ADF authors ran it).
        """
        if not context.strip() or not questions:
            return ["" for _ in questions]
        reader = self._load()
        outputs = reader(question=list(questions), context=[context] * len(questions), top_k=1,
                         handle_impossible_answer=allow_null, max_answer_len=self.max_answer_len)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        return [str(o.get("answer") or "").strip() if isinstance(o, dict) else "" for o in outputs]

    def _load(self) -> Any:
        if self._pipeline is None:
            self._pipeline = self._build()
        return self._pipeline

    def _build(self) -> Any:
        if not (self.path / "config.json").is_file():
            raise ConfigurationError(
                f"reader {str(self.path)!r} is not a Hugging Face model folder (no config.json); pass --reader "
                "a local question-answering model directory, e.g. a saved deepset/roberta-base-squad2"
            )
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer, pipeline

        model = AutoModelForQuestionAnswering.from_pretrained(self.path, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True, use_fast=True)
        return pipeline("question-answering", model=model, tokenizer=tokenizer, device=-1)


def as_reader(reader: QAReader | str | Path | None) -> QAReader | None:
    """A ``QAReader`` from a reader or a model folder path; ``None`` stays ``None``."""
    if reader is None or isinstance(reader, QAReader):
        return reader
    return QAReader(reader)
