"""Per-question metrics as the ADF authors' code computes them (``src/evaluation.py``, ``RAGEvaluator``).

These exist to compare with ADF's Table 2 like for like; ``docs/metrics.md`` lists how each differs from
the official scorers. The prediction is always the whole long answer (no span search).

    adf-f1       = max_{a in A_q} token_f1(long_answer, a); A_q = every annotation answer, plus nq_answer
                   (AmbigNQ), or all qa_pairs short answers (ASQA); 0 if A_q is empty.
    adf-d-f1     AmbigNQ: sets S_1..S_n = each singleAnswer annotation's list and each multipleQAs qaPair's list,
                   concatenated over annotators in order (not de-duplicated);
                   D-F1 = #{j : max_{a in S_j} token_f1(long_answer, a) >= 0.5} / n (0 if n = 0).
                 ASQA: for each qa_pair j a QA reader (no null answer) extracts a span of the long answer for
                   the pair's question; covered if max_a token_f1(span, a) >= 0.5; D-F1 = covered / #qa_pairs.
    adf-rouge-l  = max over reference long answers of rouge-score ``rougeL`` F (stemmed), 0 without references.
    adf-rouge-l-nostem = the same maximum with the authors' fallback LCS F1 (no stemming), see ``adf_text``.
    adf-dr       = sqrt(adf-d-f1 * adf-rouge-l) per question; the authors average it over questions.

token_f1 and the normalisation are ``adf_text``'s (articles removed before punctuation). A row is ASQA-shaped
when its example has reference long answers; the ASQA branch of ``adf-d-f1`` then needs a reader.
"""

from __future__ import annotations

import math
from typing import Any

from disambig.errors import ConfigurationError
from disambig.metrics.adf_text import adf_token_f1, lcs_f1
from disambig.metrics.answer_text import scored_long_answer
from disambig.metrics.reader import QAReader
from disambig.metrics.rouge import rouge_l

COVER_THRESHOLD = 0.5


def long_answer(pred: Any) -> str:
    return scored_long_answer(pred)


def is_asqa_shaped(example: Any) -> bool:
    """ASQA rows carry reference long answers; AmbigNQ rows do not."""
    return bool(getattr(example, "long_answers", None))


def answer_sets(example: Any) -> list[list[str]]:
    """S_1..S_n: every annotator's answer sets in order, empty ones skipped (ASQA: the qa_pairs' short answers)."""
    by_annotator = getattr(example, "answer_sets_by_annotator", None)
    if by_annotator is None:  # an example built without the loader's field: its interpretations
        by_annotator = [[list(i.get("answers") or []) for i in example.interpretations]]
    return [list(s) for annotator in by_annotator for s in annotator if s]


def answer_pool(example: Any) -> list[str]:
    """A_q: all annotation answers, then ``nq_answer`` (the original Natural Questions answer) when present."""
    pool = [a for s in answer_sets(example) for a in s]
    return pool + [str(a) for a in getattr(example, "nq_answer", None) or []]


def adf_f1(example: Any, pred: Any) -> float:
    """F1: the whole long answer against its best gold answer."""
    return max((adf_token_f1(long_answer(pred), a) for a in answer_pool(example)), default=0.0)


def adf_d_f1(example: Any, pred: Any, reader: QAReader | None = None) -> float:
    """D-F1 as the authors compute it: whole-string coverage (AmbigNQ) or reader-span coverage (ASQA)."""
    if is_asqa_shaped(example):
        if reader is None:
            raise ConfigurationError(
                "adf-d-f1 on ASQA runs a QA reader over the long answer (the authors used deepset/roberta-base-squad2);"
                " pass --reader PATH (get_metric(..., reader=PATH)) with a local question-answering model folder"
            )
        return _reader_coverage(example, long_answer(pred), reader)
    sets = answer_sets(example)
    covered = sum(max(adf_token_f1(long_answer(pred), a) for a in s) >= COVER_THRESHOLD for s in sets)
    return covered / len(sets) if sets else 0.0


def _reader_coverage(example: Any, text: str, reader: QAReader) -> float:
    pairs = list(example.interpretations)
    usable = [p for p in pairs if str(p.get("question") or "").strip() and p.get("answers")]
    spans = reader.answers([str(p["question"]) for p in usable], text, allow_null=False) if usable else []
    covered = sum(
        bool(span) and max(adf_token_f1(span, a) for a in p["answers"]) >= COVER_THRESHOLD
        for p, span in zip(usable, spans, strict=True)
    )
    return covered / len(pairs) if pairs else 0.0


def adf_rouge_l(example: Any, pred: Any) -> float:
    """rouge-score ``rougeL`` F (stemmed), max over the reference long answers."""
    return rouge_l(long_answer(pred), references(example), variant="rougeL")


def adf_rouge_l_nostem(example: Any, pred: Any) -> float:
    """The authors' fallback ROUGE-L (no stemming, their normalisation), max over the reference long answers."""
    return max((lcs_f1(long_answer(pred), r) for r in references(example)), default=0.0)


def adf_dr(example: Any, pred: Any, reader: QAReader | None = None) -> float:
    """DR-F1 per question, sqrt(adf-d-f1 * adf-rouge-l); the authors report its mean over questions."""
    return math.sqrt(adf_d_f1(example, pred, reader) * adf_rouge_l(example, pred))


def references(example: Any) -> list[str]:
    return [r for r in getattr(example, "long_answers", []) or [] if r and r.strip()]
