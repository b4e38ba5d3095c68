"""ASQA's official metrics (google-research/language, ``language/asqa/scoring.py``) per question.

    STR-EM(q)       = mean over qa_pairs j of [some short answer of j, SQuAD-normalised, is a substring of the
                      normalised long answer]
    Disambig-F1(q)  = mean over qa_pairs j of max_{a in answers_j} F1(reader_j, a), where reader_j is the span a
                      SQuAD 2.0 reader extracts from the long answer for j's disambiguated question (null
                      answers allowed; a null answer scores 0 against a non-empty gold). Un-thresholded.
    ROUGE-L         = ``rouge.rouge_l`` with ``rougeLsum`` (lower-cased, sentence split), best reference.
    DR              = sqrt(mean Disambig-F1 * mean ROUGE-L) over the question set (corpus level, see
                      ``corpus``); the scorer reports all of these x 100.

The substring test is the scorer's: "1876" is present in "18765". ASQA's run used ``run_qa.py
--version_2_with_negative --null_score_diff_threshold 0`` with RoBERTa-large SQuAD 2.0; ours runs any local
reader through ``transformers``' pipeline with ``handle_impossible_answer=True``, which chooses the null
answer by the same score comparison.
"""

from __future__ import annotations

from typing import Any

from disambig.data.text import normalize
from disambig.metrics.answer_text import scored_long_answer
from disambig.metrics.qa import token_f1
from disambig.metrics.reader import QAReader


def _long_answer(pred: Any) -> str:
    return scored_long_answer(pred)


def str_em(example: Any, pred: Any) -> float:
    """Share of the gold interpretations with a short answer contained in the long answer (0 if none)."""
    context = normalize(_long_answer(pred))
    pairs = list(example.interpretations)
    found = sum(any(normalize(a) in context for a in p.get("answers") or []) for p in pairs)
    return found / len(pairs) if pairs else 0.0


def disambig_f1(example: Any, pred: Any, reader: QAReader) -> float:
    """Mean over gold interpretations of the reader's answer F1 for that interpretation's question."""
    pairs = list(example.interpretations)
    if not pairs:
        return 0.0
    questions = [str(p.get("question") or example.question) for p in pairs]
    spans = reader.answers(questions, _long_answer(pred), allow_null=True)
    return sum(token_f1(span, p.get("answers") or []) for p, span in zip(pairs, spans, strict=True)) / len(pairs)
