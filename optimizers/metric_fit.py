"""Which metric a compile may optimise on a dataset: the dataset's primary one by default, never one that scores the
dataset's own gold answers at 0.

A metric that gives the gold answer 0 (DR or ROUGE-L on AmbigNQ, whose rows have no long answers; an error such as
ACE, where 0 is perfect), or no more than an empty answer (chunk recall of a question that has no chunks), cannot tell
a better program from a worse one: the optimizer would search blind and the before/after scores would say nothing.
``check_metric_fits`` scores ``gold_prediction`` of a few training questions with the metric, before any LM is built,
and refuses it when the mean is 0 or no higher than for empty answers, naming the metrics that fit.
"""

from __future__ import annotations

from typing import Any

from disambig.errors import ConfigurationError

GOLD_QUESTIONS = 5
"""Training questions whose gold answers a metric is tried on."""


def default_metric(dataset: str) -> str:
    """The metric ``compile`` optimises on ``dataset`` when given none: its format's primary metric
    (``disambig.metrics.PRIMARY_METRICS``: ``dr`` on ASQA, ``ambigqa-f1`` on AmbigNQ, ...)."""
    from disambig.data.loaders import dataset_format
    from disambig.metrics import primary_metric

    return primary_metric(dataset_format(dataset))


def gold_prediction(example: Any) -> Any:
    """What a perfect program would answer to ``example``, built from its annotations alone.

    Each annotated interpretation with answers becomes a predicted one (its question, its first answer); the long
    answer is the first annotator's (ASQA), else those first answers joined (AmbigNQ has no long answers); the
    passages carry the judged documents (BEIR ``qrels``, best grade first), else one passage per interpretation that
    states its question and answers, titled with the relevant pages; a count question's count and chunks are its gold
    ones.
    """
    import dspy

    answered = [i for i in getattr(example, "interpretations", None) or [] if i.get("answers")]
    interpretations = [{"question": i["question"], "answer": str(i["answers"][0]), "passage_ids": []}
                       for i in answered]
    answers = [i["answer"] for i in interpretations]
    long_answers = [a for a in getattr(example, "long_answers", None) or [] if str(a).strip()]
    statements = [f"{i['question']} {'; '.join(str(a) for a in i['answers'])}." for i in answered]
    return dspy.Prediction(
        interpretations=interpretations, answers=answers,
        long_answer=long_answers[0] if long_answers else "; ".join(answers),
        passages=gold_passages(example, statements), count=getattr(example, "gold_count", None),
        retained_chunk_ids=list(getattr(example, "gold_chunk_ids", None) or []),
    )


def empty_prediction() -> Any:
    """An answer with nothing in it: what a metric that fits must score below the gold answer."""
    import dspy

    return dspy.Prediction(interpretations=[], answers=[], long_answer="", passages=[], count=None,
                           retained_chunk_ids=[])


def gold_passages(example: Any, statements: list[str]) -> list[dict[str, str]]:
    """The judged documents of a BEIR query (positive grades, best first), else a passage per relevant title and
    per gold statement, paired in order."""
    qrels = dict(getattr(example, "qrels", None) or {})
    if qrels:
        return [{"id": str(doc), "title": "", "text": ""}
                for doc in sorted((d for d, grade in qrels.items() if grade > 0), key=lambda d: -qrels[d])]
    titles = [str(t) for t in getattr(example, "relevant_titles", None) or []]
    return [{"id": f"gold-{n}", "title": titles[n] if n < len(titles) else "",
             "text": statements[n] if n < len(statements) else ""}
            for n in range(max(len(titles), len(statements)))]


def gold_scores(metric: Any, examples: list[Any]) -> tuple[float, float] | None:
    """Mean ``metric`` of the gold answers of ``examples`` and of empty answers to them; None when the metric cannot
    read these rows (it needs fields they lack, or a QA reader) or gives a value outside [0, 1] (a count, or an error
    where lower is better, is not a score to maximise)."""
    gold, empty = [], []
    for example in examples:
        try:
            pair = (float(metric(example, gold_prediction(example))), float(metric(example, empty_prediction())))
        except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):  # ValueError: ConfigurationError
            return None
        if not all(0.0 <= value <= 1.0 for value in pair):
            return None
        gold.append(pair[0])
        empty.append(pair[1])
    return (sum(gold) / len(gold), sum(empty) / len(empty)) if gold else None


def fits(scores: tuple[float, float] | None) -> bool:
    """A metric fits a dataset when it scores the gold answers above empty ones (so above 0)."""
    return scores is not None and scores[0] > scores[1]


def fitting_metrics(examples: list[Any]) -> list[str]:
    """The registered metrics, scored without an LM or a reader, that fit the gold answers of ``examples``."""
    from disambig.metrics import JUDGE_METRICS, get_metric, metric_names

    return [name for name in metric_names() if name not in JUDGE_METRICS and name != "disambig-f1"  # need an LM or
            and fits(gold_scores(get_metric(name), examples))]  # a QA reader


def check_metric_fits(metric_name: str, dataset: str, examples: list[Any]) -> None:
    """Refuse ``metric_name`` unless it scores the gold answers of ``examples`` (the first ``GOLD_QUESTIONS`` training
    questions of ``dataset``) above 0 and above empty answers; a judge metric, which needs an LM, and an empty sample
    are not checked.

    Raises:
        ConfigurationError: one line naming the metric, the dataset and the metrics that fit it (the primary first).
    """
    from disambig.metrics import get_metric, is_judge_metric

    sample = list(examples)[:GOLD_QUESTIONS]
    if is_judge_metric(metric_name) or not sample:
        return
    scores = gold_scores(get_metric(metric_name), sample)
    if fits(scores):
        return
    primary = default_metric(dataset)
    names = fitting_metrics(sample)
    names = [primary, *[n for n in names if n != primary]] if primary in names else names
    named = ", ".join(f"{n} (the default)" if n == primary else n for n in names) or "none of the registered ones"
    gold = f"the gold answers of {len(sample)} training questions of {dataset}"
    if scores is None:
        problem = f"cannot score {gold} (it needs fields these rows lack, or is not a score in [0, 1])"
    elif scores[0] == 0.0:
        problem = f"scores {gold} at 0"
    else:
        problem = f"scores {gold} no higher than empty answers ({scores[0]:.2f})"
    raise ConfigurationError(f"--metric {metric_name} {problem}, so compiling cannot improve it; metrics that fit "
                             f"this dataset: {named}")
