"""The registry of DSPy metrics: each reads the common example and prediction fields.

Three kinds: plain metrics ``fn(example, pred)`` (``METRICS``); reader metrics ``fn(example, pred, reader)``
(``READER_METRICS``; ``reader`` is a local QA model, required by ``disambig-f1``, used by ``adf-d-f1`` on ASQA
and by ``dr``/``dr-per-question`` when given); judge metrics ``fn(example, pred, judge)`` (``JUDGE_METRICS``,
need a judge LM distinct from the program's). Names with ``@K`` take any positive K. Metrics whose report
value is computed from other metrics' means are declared in ``corpus.CORPUS_METRICS``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from disambig.errors import ConfigurationError
from disambig.metrics import adf, adf_ranking, asqa, ranking, verdict
from disambig.metrics.adf_judge import disambiguation_score, similarity_score
from disambig.metrics.ambigqa import ambigqa_f1, example_annotations
from disambig.metrics.answer_text import scored_long_answer
from disambig.metrics.count import COUNT_METRICS
from disambig.metrics.disambiguation import coverage
from disambig.metrics.grounded import g_f1, g_precision, g_recall, g_recall_paper, grounded_count, judged_count
from disambig.metrics.judge import Judge
from disambig.metrics.mrecall import mrecall_at_k
from disambig.metrics.qa import answer_set_f1, exact_match, token_f1
from disambig.metrics.reader import QAReader, as_reader
from disambig.metrics.rouge import rouge_l

PASS_THRESHOLD = 0.5


def predicted_answers(pred: Any) -> list[str]:
    """The prediction's short answers: ``answers``, else its interpretations' answers, else the long answer."""
    given = [str(a) for a in getattr(pred, "answers", None) or [] if str(a).strip()]
    if given:
        return given
    answers = [str(i.get("answer") or "") for i in getattr(pred, "interpretations", []) or []]
    return [a for a in answers if a] or [scored_long_answer(pred)]


def _gold_answers(example: Any) -> list[str]:
    return [a for i in example.interpretations for a in i["answers"]]


def _coverage(example: Any, pred: Any) -> Any:
    return coverage(example.interpretations, getattr(pred, "interpretations", []) or [],
                    scored_long_answer(pred), str(example.question))


def em(example: Any, pred: Any) -> float:
    return max(exact_match(a, _gold_answers(example)) for a in predicted_answers(pred))


def f1(example: Any, pred: Any) -> float:
    return max(token_f1(a, _gold_answers(example)) for a in predicted_answers(pred))


def answer_f1(example: Any, pred: Any) -> float:
    """Soft answer-set F1 (token F1, no one-to-one matching); ``ambigqa-f1`` is AmbigQA's official one."""
    return answer_set_f1(predicted_answers(pred), [i["answers"] for i in example.interpretations])


def ambigqa(example: Any, pred: Any) -> float:
    return ambigqa_f1(example_annotations(example), predicted_answers(pred))


def d_f1(example: Any, pred: Any) -> float:
    return _coverage(example, pred).recall


def d_precision(example: Any, pred: Any) -> float:
    return _coverage(example, pred).precision


def rouge(example: Any, pred: Any) -> float:
    return rouge_l(scored_long_answer(pred), list(getattr(example, "long_answers", []) or []))


def dr_per_question(example: Any, pred: Any, reader: QAReader | None = None) -> float:
    """sqrt(D-F1 x ROUGE-L) of one question; D-F1 is ``disambig-f1`` with a reader, else the proxy."""
    disambiguation = asqa.disambig_f1(example, pred, reader) if reader is not None else d_f1(example, pred)
    return math.sqrt(disambiguation * rouge(example, pred))


def _disambig_f1(example: Any, pred: Any, reader: QAReader | None) -> float:
    if reader is None:
        raise ConfigurationError(_NEEDS_READER.format(name="disambig-f1"))
    return asqa.disambig_f1(example, pred, reader)


def mrecall(k: int) -> Callable[[Any, Any], float]:
    def score(example: Any, pred: Any) -> float:
        return mrecall_at_k(example.interpretations, list(getattr(pred, "passages", []) or []), k)

    return score


def _titles_metric(fn: Callable[[list[str], set[str], int], float], k: int) -> Callable[[Any, Any], float]:
    def score(example: Any, pred: Any) -> float:
        return fn(adf_ranking.passage_titles(pred), adf_ranking.relevant_titles(example), k)

    return score


def judged(metric: str, k: int, by_title: Callable[[list[str], set[str], int], float]) -> Callable[[Any, Any], float]:
    """``METRIC@k`` (``ndcg``, ``recall``; ``metrics/ranking.py``) of the prediction's passages against the example's
    ``qrels`` (BEIR judgments ``{doc_id: grade}``, by passage id); an example without them is scored by ``by_title``
    over its relevant titles."""

    def score(example: Any, pred: Any) -> float:
        qrels = getattr(example, "qrels", None)
        if qrels is None:
            return _titles_metric(by_title, k)(example, pred)
        passages = getattr(pred, "passages", None) or []
        ids = [str(p["id"] if isinstance(p, dict) else p.id) for p in passages]
        return ranking.query_score(dict(qrels), ids, f"{metric}@{k}")

    return score


def as_dspy_metric(name: str, fn: Callable[[Any, Any], float]) -> Callable[..., float | bool]:
    """Wrap ``fn(example, pred)`` as ``metric(example, pred, trace=None)``."""

    def metric(example: Any, pred: Any, trace: Any = None) -> float | bool:
        value = float(fn(example, pred))
        return value >= PASS_THRESHOLD if trace is not None else value

    metric.__name__ = name.replace("-", "_").replace("@", "_at_")
    return metric


METRICS: dict[str, Callable[[Any, Any], float]] = {
    "em": em, "f1": f1, "answer-f1": answer_f1, "ambigqa-f1": ambigqa, "d-f1": d_f1, "d-precision": d_precision,
    "str-em": asqa.str_em, "rouge-l": rouge, "mrecall@5": mrecall(5),
    "adf-f1": adf.adf_f1, "adf-rouge-l": adf.adf_rouge_l, "adf-rouge-l-nostem": adf.adf_rouge_l_nostem,
    "adf-ndcg@5": _titles_metric(adf_ranking.adf_ndcg_at_k, 5), "ndcg@5": judged("ndcg", 5, adf_ranking.ndcg_at_k),
    "adf-recall@5": _titles_metric(adf_ranking.adf_recall_at_k, 5), "recall@5": judged("recall", 5,
                                                                                     adf_ranking.adf_recall_at_k),
    "num-interpretations": verdict.num_interpretations,
    **COUNT_METRICS,  # DFA's ACE, NACE, chunk recall and count-score over "aggregation" examples
}

READER_METRICS: dict[str, Callable[[Any, Any, QAReader | None], float]] = {
    "disambig-f1": _disambig_f1, "dr": dr_per_question, "dr-per-question": dr_per_question,
    "adf-d-f1": adf.adf_d_f1, "adf-dr": adf.adf_dr,
}

JUDGE_METRICS: dict[str, Callable[[Any, Any, Judge], float]] = {
    "g-precision": g_precision, "g-recall": g_recall, "g-recall-paper": g_recall_paper, "g-f1": g_f1,
    "g-f1-per-question": g_f1, "g-precision-micro": g_precision, "grounded-interpretations": grounded_count,
    "judged-interpretations": judged_count, "u-precision": verdict.u_precision, "u-recall": verdict.u_recall,
    "sufficient@5": verdict.sufficient_at(5),
    "judge-similarity": similarity_score, "judge-disambiguation": disambiguation_score,
}

PATTERNS: dict[str, Callable[[int], Callable[..., float]]] = {
    "mrecall": mrecall,
    "ndcg": lambda k: judged("ndcg", k, adf_ranking.ndcg_at_k),
    "recall": lambda k: judged("recall", k, adf_ranking.adf_recall_at_k),
    "adf-ndcg": lambda k: _titles_metric(adf_ranking.adf_ndcg_at_k, k),
    "adf-recall": lambda k: _titles_metric(adf_ranking.adf_recall_at_k, k),
}
JUDGE_PATTERNS: dict[str, Callable[[int], Callable[..., float]]] = {"sufficient": verdict.sufficient_at}

_NEEDS_READER = ("metric {name!r} runs an extractive QA reader over the long answer and no reader was given; pass "
                 "--reader PATH (get_metric(name, reader=PATH)) with a local Hugging Face question-answering model "
                 "folder, or use the token proxy d-f1")


def _pattern(name: str) -> tuple[str, int] | None:
    match = re.fullmatch(r"([a-z-]+)@(\d+)", name)
    return (match.group(1), int(match.group(2))) if match and int(match.group(2)) > 0 else None


def is_judge_metric(name: str) -> bool:
    pattern = _pattern(name)
    return name in JUDGE_METRICS or (pattern is not None and pattern[0] in JUDGE_PATTERNS)


def is_reader_metric(name: str) -> bool:
    return name in READER_METRICS


def metric_names() -> list[str]:
    """Every registered name (``@5`` stands for any positive K)."""
    return [*METRICS, *READER_METRICS, *JUDGE_METRICS]


def get_metric(name: str, judge_lm: Any = None, reader: QAReader | str | None = None) -> Callable[..., float | bool]:
    """A DSPy metric by registry name; ``NAME@K`` takes any positive K for the ranking and sufficiency metrics.

    Args:
        name: a name of ``METRICS``, ``READER_METRICS`` or ``JUDGE_METRICS`` (``metric_names()``).
        judge_lm: the LM the judge metrics ask (a ``dspy.LM``), or a ``Judge`` to share its memoised verdicts
            between metrics (G-Precision, G-Recall and G-F1 ask the same questions). Ignored by other metrics.
        reader: a ``QAReader`` or the folder of a local question-answering model, for the reader metrics.
    """
    pattern = _pattern(name)
    if pattern and pattern[0] in JUDGE_PATTERNS:
        return as_dspy_metric(name, _with(JUDGE_PATTERNS[pattern[0]](pattern[1]), _judge(name, judge_lm)))
    if pattern and pattern[0] in PATTERNS and name not in METRICS:
        return as_dspy_metric(name, PATTERNS[pattern[0]](pattern[1]))
    if name in JUDGE_METRICS:
        return as_dspy_metric(name, _with(JUDGE_METRICS[name], _judge(name, judge_lm)))
    if name in READER_METRICS:
        loaded = as_reader(reader)
        if name == "disambig-f1" and loaded is None:
            raise ConfigurationError(_NEEDS_READER.format(name=name))
        return as_dspy_metric(name, _with(READER_METRICS[name], loaded))
    if name not in METRICS:
        raise ConfigurationError(
            f"unknown metric {name!r}; choose one of: {', '.join(metric_names())} (@5: any positive K)"
        )
    return as_dspy_metric(name, METRICS[name])


def _judge(name: str, judge_lm: Any) -> Judge:
    if judge_lm is None:
        raise ConfigurationError(
            f"metric {name!r} is scored by an LLM judge and no judge LM was given; pass get_metric({name!r}, "
            "judge_lm=dspy.LM(...)) (CLI: --judge-lm SPEC, or the program's --lm is used)"
        )
    return judge_lm if isinstance(judge_lm, Judge) else Judge(judge_lm)


def _with(fn: Callable[[Any, Any, Any], float], extra: Any) -> Callable[[Any, Any], float]:
    def score(example: Any, pred: Any) -> float:
        return fn(example, pred, extra)

    return score
