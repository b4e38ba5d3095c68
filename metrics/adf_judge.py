"""LLM-judge similarity and disambiguation scores (ADF paper, section 5.2.2; Table 3 reports their means).

    Sim(q) = max_{a in A_q} sim_LLM(prediction, a),  sim_LLM in [0, 1], 1 = semantically equivalent
    Dis(q) = |C| / k,  C = the gold interpretations I_1..I_k whose answer the prediction semantically gives

The prediction is the program's long answer, or, when it wrote none, its interpretations as
"question: answer" lines. A_q holds every gold answer (all aliases of all interpretations) and, for ASQA,
the annotators' long answers, so a long-form answer is also compared with a long-form reference. A gold
interpretation without answers counts in k but is never covered (as in D-F1). An empty prediction scores 0
on both without a judge call.
"""

from __future__ import annotations

from typing import Any

from disambig.metrics.answer_text import scored_long_answer
from disambig.metrics.judge import Judge


def response_text(pred: Any) -> str:
    """The text the judge reads: the long answer, else the interpretations as "question: answer" lines."""
    long_answer = scored_long_answer(pred).strip()
    if long_answer:
        return long_answer
    lines = [f"{i['question']}: {i['answer']}" if i.get("question") else str(i["answer"])
             for i in getattr(pred, "interpretations", []) or [] if i.get("answer")]
    return "\n".join(lines)


def references(example: Any) -> list[str]:
    """A_q: the distinct gold short answers, then the long-form references."""
    answers = [a for i in example.interpretations for a in i.get("answers") or []]
    long_answers = list(getattr(example, "long_answers", []) or [])
    return list(dict.fromkeys(r.strip() for r in answers + long_answers if r and r.strip()))


def similarity_score(example: Any, pred: Any, judge: Judge) -> float:
    """Sim(q): the judge's best similarity of the prediction to any reference answer (stops at 1)."""
    prediction = response_text(pred)
    best = 0.0
    for reference in references(example) if prediction else []:
        best = max(best, judge.similarity(str(example.question), prediction, reference))
        if best >= 1.0:
            break
    return best


def disambiguation_score(example: Any, pred: Any, judge: Judge) -> float:
    """Dis(q): share of gold interpretations the judge finds answered in the prediction."""
    prediction = response_text(pred)
    interpretations = list(example.interpretations)
    if not interpretations or not prediction:
        return 0.0
    covered = sum(
        bool(i.get("answers")) and judge.covered(str(i.get("question") or example.question), i["answers"], prediction)
        for i in interpretations
    )
    return covered / len(interpretations)
