"""LLM-judge metrics with a scripted judge: G-Precision / G-Recall / G-F1 (VerDICt) and ADF's judge scores.

The judge is a dict-mode ``DummyLM``: the first key found in the judge's prompt decides the reply, so each script
lists the "yes" verdicts and ends with a catch-all "no". Prompts read ``question: ...\\nanswer: ...\\npassage:
...`` (verify) and ``question: ...\\ninterpretation: ...\\ncandidates: [...]`` (match), as the compact adapter
writes them.
"""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from disambig.errors import ConfigurationError
from disambig.run_setup import judge_spec, resolve_metrics
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics import JUDGE_METRICS, Judge, get_metric
from disambig.metrics.adf_judge import disambiguation_score, references, response_text, similarity_score
from disambig.metrics.grounded import grounded_scores
from disambig.settings import Settings

QUESTION = "Who has scored the most international goals?"
D1 = {"id": "d1", "title": "Ronaldo", "text": "Cristiano Ronaldo holds the men's record."}
D2 = {"id": "d2", "title": "Sinclair", "text": "Christine Sinclair holds the women's record, ahead of Abby Wambach."}
D3 = {"id": "d3", "title": "Futsal", "text": "Falcao scored the most futsal goals."}

G_MEN = {"question": "Men's record?", "answers": ["Cristiano Ronaldo", "Ronaldo"]}
G_WOMEN = {"question": "Women's record?", "answers": ["Christine Sinclair"]}
G_BEFORE = {"question": "Women's record before Sinclair?", "answers": ["Abby Wambach"]}
G_DAEI = {"question": "Men's record before 2021?", "answers": ["Ali Daei"]}  # no passage supports it
G_UNANSWERABLE = {"question": "Record in 2030?", "answers": []}

P_MEN = {"question": "Who holds the men's record?", "answer": "Cristiano Ronaldo", "passage_ids": ["d1"], "score": 1.0}
P_MARTA = {"question": "Who holds the women's record?", "answer": "Marta", "passage_ids": ["d2"], "score": 0.5}
P_FUTSAL = {"question": "Who holds the futsal record?", "answer": "Falcao", "passage_ids": [], "score": 0.5}

# Verdicts: the passage supports the answer (all others: no) ...
SUPPORTED = [
    "answer: Cristiano Ronaldo\npassage: Ronaldo",  # P_MEN by d1
    "answer: Falcao\npassage: Futsal",  # P_FUTSAL by d3
    "answer: Cristiano Ronaldo / Ronaldo\npassage: Ronaldo",  # G_MEN by d1
    "answer: Christine Sinclair\npassage: Sinclair",  # G_WOMEN by d2
    "answer: Abby Wambach\npassage: Sinclair",  # G_BEFORE by d2
]
# ... and the reading is among the candidates (all others: no).
MATCHED = [
    "interpretation: Men's record? ->",  # G_MEN is found among the grounded predictions
    "interpretation: Who holds the men's record? ->",  # P_MEN is one of the grounded gold readings
]


def scripted_judge(supported=SUPPORTED, matched=MATCHED, extra=None) -> DummyLM:
    script = {key: {"supported": True} for key in supported}
    script |= {key: {"matched": True} for key in matched}
    script |= extra or {}
    script |= {"passage: ": {"supported": False}, "candidates: ": {"matched": False}}
    return DummyLM(script, adapter=CompactJSONAdapter())


def example(*interpretations, evidence=(D1, D2), long_answers=()) -> dspy.Example:
    return dspy.Example(question=QUESTION, interpretations=list(interpretations), long_answers=list(long_answers),
                        evidence=[{"title": e["title"], "text": e["text"]} for e in evidence]).with_inputs("question")


def prediction(*interpretations, passages=(D1, D2, D3), long_answer="") -> dspy.Prediction:
    return dspy.Prediction(interpretations=list(interpretations), long_answer=long_answer, passages=list(passages),
                           trace={})


def test_grounded_scores_follow_the_paper_definition():
    ex = example(G_MEN, G_WOMEN, G_BEFORE, G_DAEI, G_UNANSWERABLE)
    pred = prediction(P_MEN, P_MARTA, P_FUTSAL)
    lm = scripted_judge()
    scores = grounded_scores(ex, pred, Judge(lm))
    # Predictions: P_MEN cites d1, which supports it -> 1. P_MARTA cites d2, which does not -> 0.
    # P_FUTSAL cites nothing, so every retrieved passage is tried: d1 no, d2 no, d3 yes -> 1.
    # G-Precision = 2 / 3.
    assert (scores.grounded_predictions, scores.predictions) == (2, 3)
    assert scores.precision == pytest.approx(2 / 3)
    # Gold, checked on evidence + retrieved passages (d1, d2, d3): MEN (d1), WOMEN (d2), BEFORE (d2) grounded;
    # DAEI supported by none; UNANSWERABLE has no answer (no call). Grounded gold = 3.
    # Covered gold: MEN matches P_MEN; WOMEN and BEFORE match no grounded prediction -> 1.
    # Q-bar adds P_FUTSAL (grounded, matches no gold): |Q-bar| = 3 + 1 = 4, covered = 1 + 1 = 2 -> G-Recall 0.5.
    assert (scores.covered, scores.grounded_total) == (2, 4)
    assert scores.recall == pytest.approx(0.5)
    # G-F1 = 2 * (2/3) * (1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    assert scores.f1 == pytest.approx(4 / 7)
    # 5 verify calls for predictions (1 + 1 + 3), 8 for gold (1 + 2 + 2 + 3), 3 + 2 match calls.
    assert len(lm.history) == 18


def test_registered_metrics_share_one_judge_and_its_verdicts():
    ex, pred = example(G_MEN, G_WOMEN, G_BEFORE, G_DAEI), prediction(P_MEN, P_MARTA, P_FUTSAL)
    lm = scripted_judge()
    judge = Judge(lm)
    values = {name: get_metric(name, judge_lm=judge)(ex, pred) for name in ("g-precision", "g-recall", "g-f1")}
    assert values == pytest.approx({"g-precision": 2 / 3, "g-recall": 0.5, "g-f1": 4 / 7})
    assert len(lm.history) == 18  # the second and third metric are answered from the memo
    # when optimising, a metric is a pass/fail: 4/7 >= 0.5
    assert get_metric("g-f1", judge_lm=judge)(ex, pred, trace=object()) is True


def test_the_judge_runs_on_its_own_lm_not_the_programs():
    program_lm = DummyLM([], adapter=CompactJSONAdapter())
    dspy.configure(lm=program_lm, adapter=dspy.ChatAdapter())
    judge_lm = scripted_judge()
    value = get_metric("g-precision", judge_lm=judge_lm)(example(G_MEN), prediction(P_MEN))
    assert value == 1.0
    assert program_lm.history == [] and len(judge_lm.history) == 1


def test_one_gold_one_prediction_that_agree():
    # P_MEN grounded (1 call), G_MEN grounded (1 call), G_MEN found (1 call), P_MEN matches gold (1 call):
    # P = 1/1, |Q-bar| = 1, covered 1 -> R = 1, F1 = 1
    lm = scripted_judge()
    scores = grounded_scores(example(G_MEN), prediction(P_MEN), Judge(lm))
    assert (scores.precision, scores.recall, scores.f1) == (1.0, 1.0, 1.0)
    assert len(lm.history) == 4


def test_empty_prediction_scores_zero_and_only_grounds_the_gold():
    lm = scripted_judge()
    scores = grounded_scores(example(G_MEN, G_WOMEN), prediction(passages=()), Judge(lm))
    # no predictions -> P = 0; gold grounded on evidence (d1, d2): MEN (1 call), WOMEN (2 calls);
    # nothing was produced -> covered 0 of 2 -> R = 0, F1 = 0; no match call (nothing to match against)
    assert (scores.precision, scores.recall, scores.f1) == (0.0, 0.0, 0.0)
    assert scores.grounded_total == 2
    assert len(lm.history) == 3


def test_closed_book_grounds_nothing():
    # no passages, no citations: predictions are never supported (no call); no evidence: gold neither
    lm = scripted_judge()
    ex = example(G_MEN, evidence=())
    scores = grounded_scores(ex, prediction(dict(P_MEN, passage_ids=[]), passages=()), Judge(lm))
    assert (scores.precision, scores.recall, scores.grounded_total) == (0.0, 0.0, 0)
    assert lm.history == []


def test_unanswerable_gold_and_unanswered_predictions_are_never_supported():
    lm = scripted_judge()
    no_answer = dict(P_MEN, answer="")
    scores = grounded_scores(example(G_UNANSWERABLE), prediction(no_answer), Judge(lm))
    # P = 0/1 (no answer to support), Q-bar empty -> R = 0; no judge call at all
    assert (scores.precision, scores.recall, scores.grounded_total) == (0.0, 0.0, 0)
    assert lm.history == []


def test_duplicate_predictions_count_once_in_q_bar():
    lm = scripted_judge(
        supported=[*SUPPORTED, "answer: Falcao Futsal\npassage: Futsal"],
        matched=[],
        extra={"interpretations: [": {"unique": ["Who holds the futsal record?"]}},
    )
    near_duplicate = dict(P_FUTSAL, question="Who has the futsal record?", answer="Falcao Futsal")
    pred = prediction(P_FUTSAL, dict(P_FUTSAL), near_duplicate)
    scores = grounded_scores(example(G_MEN), pred, Judge(lm))
    # all three grounded by d3 -> P = 3/3. G_MEN grounded, not found (no prediction matches it) -> covered 0.
    # Added: the two identical futsal readings collapse before the dedup prompt; the judge says the remaining
    # two questions are one -> 1 added. |Q-bar| = 1 + 1, covered = 0 + 1 -> R = 1/2
    assert scores.precision == 1.0
    assert (scores.covered, scores.grounded_total) == (1, 2)
    assert scores.recall == pytest.approx(0.5)
    # verify 3 + 0 (memo) + 3, gold 1, match 1 + 2 (the identical pair asked once), dedup 1
    assert len(lm.history) == 11


@pytest.mark.parametrize("name", sorted(JUDGE_METRICS))
def test_judge_metric_without_a_judge_lm_is_a_configuration_error(name):
    with pytest.raises(ConfigurationError, match="judge LM"):
        get_metric(name)


def test_unknown_metric_lists_judge_metrics_too():
    with pytest.raises(ConfigurationError, match="g-f1"):
        get_metric("g-f2", judge_lm=scripted_judge())


def test_unparseable_judge_reply_is_a_negative_verdict():
    lm = DummyLM({"passage: ": {"something": "else"}}, adapter=CompactJSONAdapter())
    assert Judge(lm).verify("q", "a", "p") is False


# ADF judge scores


def similarity_judge(scores: dict[str, float]) -> DummyLM:
    script = {f"reference: {ref}": {"similarity": s} for ref, s in scores.items()}
    return DummyLM(script | {"reference: ": {"similarity": 0.0}}, adapter=CompactJSONAdapter())


def test_similarity_is_the_best_judged_reference():
    ex = example(G_MEN, G_WOMEN, long_answers=["Men: Ronaldo. Women: Sinclair."])
    pred = prediction(long_answer="Ronaldo for men, Sinclair for women.")
    # A_q = [Cristiano Ronaldo, Ronaldo, Christine Sinclair, Men: Ronaldo. Women: Sinclair.]
    assert references(ex) == ["Cristiano Ronaldo", "Ronaldo", "Christine Sinclair", "Men: Ronaldo. Women: Sinclair."]
    lm = similarity_judge({"Cristiano Ronaldo": 0.4, "Men: Ronaldo. Women: Sinclair.": 0.9})
    # max(0.4, 0.0, 0.0, 0.9) = 0.9, one call per reference
    assert similarity_score(ex, pred, Judge(lm)) == pytest.approx(0.9)
    assert len(lm.history) == 4


def test_similarity_is_clipped_and_stops_at_one():
    ex = example(G_MEN, G_WOMEN)
    lm = similarity_judge({"Cristiano Ronaldo": 5.0})  # off-scale reply -> 1.0, no further references asked
    assert get_metric("judge-similarity", judge_lm=lm)(ex, prediction(P_MEN)) == 1.0
    assert len(lm.history) == 1


def test_disambiguation_is_the_share_of_covered_interpretations():
    lm = DummyLM({"interpretation: Men's record?": {"covered": True}, "interpretation: ": {"covered": False}},
                 adapter=CompactJSONAdapter())
    ex = example(G_MEN, G_WOMEN, G_UNANSWERABLE)
    pred = prediction(long_answer="Cristiano Ronaldo has the most goals.")
    # MEN covered, WOMEN not, UNANSWERABLE counts in k without a call -> 1/3
    assert disambiguation_score(ex, pred, Judge(lm)) == pytest.approx(1 / 3)
    assert len(lm.history) == 2


def test_judge_scores_of_an_empty_prediction_are_zero_without_calls():
    lm = similarity_judge({})
    ex, empty = example(G_MEN), prediction()
    assert response_text(empty) == ""
    assert (similarity_score(ex, empty, Judge(lm)), disambiguation_score(ex, empty, Judge(lm))) == (0.0, 0.0)
    assert lm.history == []


def test_response_text_falls_back_to_interpretations():
    pred = prediction(P_MEN, dict(P_MARTA, question=""), dict(P_FUTSAL, answer=""))
    assert response_text(pred) == "Who holds the men's record?: Cristiano Ronaldo\nMarta"


# Wiring into evaluation runs


def test_resolve_metrics_builds_the_judge_only_when_asked(monkeypatch):
    built: list[str | None] = []
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None: built.append(spec) or object())
    settings = Settings(lm="local", judge_lm="openai/gpt-4o-mini")
    assert set(resolve_metrics(["d-f1", "rouge-l"], settings)) == {"d-f1", "rouge-l"}
    assert built == [] and judge_spec(["d-f1"], settings) == ""
    metrics = resolve_metrics(["d-f1", "g-precision", "g-f1"], settings)
    assert list(metrics) == ["d-f1", "g-precision", "g-f1"] and built == ["openai/gpt-4o-mini"]
    assert judge_spec(["g-f1"], settings) == "openai/gpt-4o-mini"


def test_resolve_metrics_reuses_the_program_lm_as_default_judge(monkeypatch):
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda *a, **k: pytest.fail("must reuse the program LM"))
    settings = Settings(lm="local")
    program_lm = scripted_judge()
    metric = resolve_metrics(["g-precision"], settings, program_lm=program_lm)["g-precision"]
    assert judge_spec(["g-precision"], settings) == "local"
    assert metric(example(G_MEN), prediction(P_MEN)) == 1.0
