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
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics import JUDGE_METRICS, Judge, get_metric
from disambig.metrics.adf_judge import disambiguation_score, references, response_text, similarity_score
from disambig.metrics.grounded import grounded_scores
from disambig.run_setup import judge_spec, resolve_metrics
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
# ... and the sub-question is among the candidates (all others: no). I_M compares questions only.
MATCHED = [
    "interpretation: Men's record?\n",  # G_MEN is among the predicted sub-questions
    "interpretation: Women's record?\n",  # G_WOMEN too (P_MARTA asks it, with a wrong answer)
    "interpretation: Who holds the men's record?\n",  # P_MEN is one of the gold sub-questions
]


def scripted_judge(supported=SUPPORTED, matched=MATCHED, extra=None) -> DummyLM:
    script = {key: {"supported": True} for key in supported}
    script |= {key: {"matched": True} for key in matched}
    script |= extra or {}
    script |= {"passage: ": {"supported": False}, "candidates: ": {"matched": False}}
    return DummyLM(script, adapter=CompactJSONAdapter())


def example(*interpretations, evidence=(D1, D2), long_answers=(), **fields) -> dspy.Example:
    return dspy.Example(question=QUESTION, interpretations=list(interpretations), long_answers=list(long_answers),
                        evidence=[{"title": e["title"], "text": e["text"]} for e in evidence],
                        **fields).with_inputs("question")


def prediction(*interpretations, passages=(D1, D2, D3), long_answer="") -> dspy.Prediction:
    return dspy.Prediction(interpretations=list(interpretations), long_answer=long_answer, passages=list(passages),
                           trace={})


def test_grounded_scores_follow_the_released_formula():
    ex = example(G_MEN, G_WOMEN, G_BEFORE, G_DAEI, G_UNANSWERABLE)
    pred = prediction(P_MEN, P_MARTA, P_FUTSAL)
    lm = scripted_judge()
    scores = grounded_scores(ex, pred, Judge(lm))
    # Predictions: P_MEN cites d1, which supports it -> 1. P_MARTA cites d2, which does not -> 0.
    # P_FUTSAL cites nothing, so the proxy (the prediction's passages) is tried: d1 no, d2 no, d3 yes -> 1.
    # G-Precision = 2 / 3.
    assert (scores.grounded_predictions, scores.predictions) == (2, 3)
    assert scores.precision == pytest.approx(2 / 3)
    # Gold is not grounded. M_R: MEN and WOMEN are among the predicted sub-questions (questions only, so
    # P_MARTA's wrong answer does not matter); BEFORE, DAEI, 2030 are not -> 2 of 5.
    # Added: grounded predictions matching no gold sub-question: P_FUTSAL (P_MEN matches) -> A = 1.
    # G-R = (2 + 1) / (5 + 1) = 1/2 ; G-F1 = 2 * (2/3) * (1/2) / (2/3 + 1/2) = 4/7
    assert (scores.covered, scores.grounded_total) == (3, 6)
    assert scores.recall == pytest.approx(0.5)
    assert scores.f1 == pytest.approx(4 / 7)
    # verify: 1 + 1 + 3; match: 5 gold + 2 grounded predictions
    assert len(lm.history) == 12


def test_paper_mode_grounds_the_gold_first():
    ex = example(G_MEN, G_WOMEN, G_BEFORE, G_DAEI, G_UNANSWERABLE)
    lm = scripted_judge(matched=[MATCHED[0], MATCHED[2]])
    scores = grounded_scores(ex, prediction(P_MEN, P_MARTA, P_FUTSAL), Judge(lm), mode="paper")
    # Gold grounded on evidence + proxy (d1, d2, d3): MEN (d1), WOMEN (d2), BEFORE (d2); DAEI none; 2030 is
    # judged with an empty answer, unsupported -> 3 grounded gold. Covered by grounded predictions (P_MEN,
    # P_FUTSAL): MEN only -> 1. Added: P_FUTSAL, one distinct -> G-R = (1 + 1) / (3 + 1) = 1/2
    assert (scores.covered, scores.grounded_total) == (2, 4)
    # verify 5 for predictions + gold 1 + 2 + 2 + 3 + 3 = 11; match 3 gold + 2 predictions
    assert len(lm.history) == 21


def test_registered_metrics_share_one_judge_and_its_verdicts():
    ex, pred = example(G_MEN, G_WOMEN, G_BEFORE, G_DAEI), prediction(P_MEN, P_MARTA, P_FUTSAL)
    lm = scripted_judge()
    judge = Judge(lm)
    values = {name: get_metric(name, judge_lm=judge)(ex, pred) for name in ("g-precision", "g-recall", "g-f1")}
    # G-R = (2 + 1) / (4 + 1) = 3/5 ; G-F1 = 2 * (2/3) * (3/5) / (2/3 + 3/5) = (4/5) / (19/15) = 12/19
    assert values == pytest.approx({"g-precision": 2 / 3, "g-recall": 3 / 5, "g-f1": 12 / 19})
    assert len(lm.history) == 11  # verify 5, match 4 + 2; the second and third metric come from the memo
    assert get_metric("g-f1", judge_lm=judge)(ex, pred, trace=object()) is True  # 12/19 >= 0.5


def test_the_judge_runs_on_its_own_lm_not_the_programs():
    program_lm = DummyLM([], adapter=CompactJSONAdapter())
    dspy.configure(lm=program_lm, adapter=dspy.ChatAdapter())
    judge_lm = scripted_judge()
    value = get_metric("g-precision", judge_lm=judge_lm)(example(G_MEN), prediction(P_MEN))
    assert value == 1.0
    assert program_lm.history == [] and len(judge_lm.history) == 1


def test_one_gold_one_prediction_that_agree():
    # P_MEN grounded (1 call); G_MEN found (1 call); P_MEN matches gold (1 call): P = 1, R = (1 + 0)/(1 + 0) = 1
    lm = scripted_judge()
    scores = grounded_scores(example(G_MEN), prediction(P_MEN), Judge(lm))
    assert (scores.precision, scores.recall, scores.f1) == (1.0, 1.0, 1.0)
    assert len(lm.history) == 3


def test_empty_prediction_scores_zero_without_calls():
    lm = scripted_judge()
    scores = grounded_scores(example(G_MEN, G_WOMEN), prediction(passages=()), Judge(lm))
    # no predictions -> P = 0 (our per-question convention); nothing to match against -> R = 0/2
    assert (scores.precision, scores.recall, scores.f1, scores.grounded_total) == (0.0, 0.0, 0.0, 2)
    assert lm.history == []


def test_answerless_interpretations_are_judged_with_an_empty_answer():
    # a pseudo-interpretation (no answer) is grounded when a passage answers its question (verdict.md 7.2 item 2)
    lm = scripted_judge(supported=["answer: \npassage: Futsal"])
    pseudo = {"question": "Who holds the futsal record?", "answer": "", "passage_ids": []}
    assert get_metric("g-precision", judge_lm=lm)(example(G_MEN), prediction(pseudo)) == 1.0


def test_a_shared_proxy_replaces_the_programs_own_passages():
    # U_q given with the example (the same for every system): P_FUTSAL is grounded by d3 although the
    # prediction retrieved only d1 (verdict.md 7.2 item 3)
    lm = scripted_judge()
    ex = example(G_MEN, proxy_passages=[D3])
    assert get_metric("g-precision", judge_lm=lm)(ex, prediction(P_FUTSAL, passages=(D1,))) == 1.0
    assert get_metric("g-precision", judge_lm=lm)(example(G_MEN), prediction(P_FUTSAL, passages=(D1,))) == 0.0


def test_unparseable_verdicts_are_skipped_and_counted():
    lm = DummyLM({"passage: ": {"something": "else"}, "candidates: ": {"matched": False}},
                 adapter=CompactJSONAdapter())
    judge = Judge(lm)
    assert judge.verify("q", "a", "p") is None
    scores = grounded_scores(example(G_MEN), prediction(P_MEN), judge)
    # the only prediction's verdict is unparsable -> left out: 0 judged, G-P 0 (not a negative verdict)
    assert (scores.grounded_predictions, scores.predictions) == (0, 0)
    assert judge.parse_failures == 2  # the direct call and P_MEN's (different inputs)


@pytest.mark.parametrize("name", sorted(JUDGE_METRICS))
def test_judge_metric_without_a_judge_lm_is_a_configuration_error(name):
    with pytest.raises(ConfigurationError, match="judge LM"):
        get_metric(name)


def test_unknown_metric_lists_judge_metrics_too():
    with pytest.raises(ConfigurationError, match="g-f1"):
        get_metric("g-f2", judge_lm=scripted_judge())


# VerDICt's ungrounded metrics


def test_ungrounded_precision_recall_and_counts():
    ex, pred = example(G_MEN, G_WOMEN, G_BEFORE), prediction(P_MEN, P_MARTA, P_FUTSAL)
    lm = scripted_judge()
    # u-precision: P_MEN matched, P_MARTA and P_FUTSAL not -> 1/3 ; u-recall: MEN, WOMEN of 3 -> 2/3
    assert get_metric("u-precision", judge_lm=lm)(ex, pred) == pytest.approx(1 / 3)
    assert get_metric("u-recall", judge_lm=lm)(ex, pred) == pytest.approx(2 / 3)
    assert get_metric("num-interpretations")(ex, pred) == 3.0
    dedup = DummyLM({"interpretations: [": {"unique": ["a", "b"]}}, adapter=CompactJSONAdapter())
    # the judge keeps 2 distinct sub-questions of 3 -> sufficient@2 = 1, sufficient@3 = 0
    assert get_metric("sufficient@2", judge_lm=dedup)(ex, pred) == 1.0
    assert get_metric("sufficient@3", judge_lm=dedup)(ex, pred) == 0.0


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
