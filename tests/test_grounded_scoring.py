"""Grounded scoring of stored answers against a shared U_q, resumable through a per-question log.

The judge is a dict-mode ``DummyLM`` (the first key found in the prompt decides the reply); the retriever of U_q
is ``program_fakes.FakeRetriever`` (word overlap over six passages, counting its calls), whose top 3 for the
question of ``grounded_fakes`` is [p1 (Ronaldo), p2 (Sinclair), p3 (Bican)].
"""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM
from grounded_fakes import DIVA_ROW, P1, P2, P6, PSEUDO, QUESTION, VERDICT_ROW, judge_lm, text, write_asqa, write_run
from program_fakes import FakeRetriever, use_in_cli
from typer.testing import CliRunner

from disambig.cli import app
from disambig.evaluation.judging import JudgedScoring
from disambig.evaluation.proxy import ProxySource, SharedProxy, proxy_fingerprint
from disambig.evaluation.records import JudgedQuestion, ResultLog
from disambig.evaluation.scoring import score_predictions
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics import Judge, get_metric

METRICS = ("g-precision", "g-recall", "g-f1")


def verified_passages(lm: DummyLM) -> list[str]:
    """The passage of every I_V (verify) call the judge LM received, in order."""
    users = [h["messages"][-1]["content"] for h in lm.history]
    return [u.split("\npassage: ", 1)[1] for u in users if "\npassage: " in u]


def example(**fields) -> dspy.Example:
    gold = [{"question": "Men's record?", "answers": ["Cristiano Ronaldo"]},
            {"question": "Women's record?", "answers": ["Christine Sinclair"]}]
    return dspy.Example(id="q1", question=QUESTION, interpretations=gold, long_answers=[], evidence=[],
                        **fields).with_inputs("question")


def judged_scoring(lm: DummyLM, log: Path | None = None, spec: str = "openai/judge-a", proxy: str = ""):
    judge = Judge(lm)
    metrics = {name: get_metric(name, judge_lm=judge) for name in METRICS}
    return metrics, JudgedScoring(metrics, judge, spec, proxy, log)


def test_the_proxy_is_retrieved_once_per_question_and_shared_by_every_run():
    retriever = FakeRetriever()
    proxy = SharedProxy(ProxySource(top=3), retriever)
    original = example()
    first, second = proxy.attach([original]), proxy.attach([example(), example()])
    assert retriever.calls == 1  # one question, retrieved once for both runs
    assert [p["id"] for p in first[0].proxy_passages] == ["p1", "p2", "p3"]
    assert second[0].proxy_passages == second[1].proxy_passages == first[0].proxy_passages
    assert proxy_fingerprint(first) == proxy_fingerprint(second[:1])
    assert "proxy_passages" not in original  # copies: the examples given are not changed
    assert proxy.describe(first)["label"] == "hybrid:wiki-slice@3"


def test_the_proxy_depth_is_clamped_to_the_corpus():
    proxy = SharedProxy(ProxySource(top=20), FakeRetriever())
    assert len(proxy.passages([QUESTION])[0]) == 6


@pytest.mark.parametrize("top", [0, -3, 2.5, True])
def test_a_bad_proxy_depth_is_refused(top):
    with pytest.raises(ValueError, match="must be a positive number of passages"):
        ProxySource(top=top)


def test_a_citing_interpretation_is_judged_on_its_passage_a_pseudo_one_on_the_shared_proxy():
    [shared] = SharedProxy(ProxySource(top=3), FakeRetriever()).attach([example()])
    lm = judge_lm()
    metrics, judged = judged_scoring(lm)
    result = score_predictions([VERDICT_ROW, DIVA_ROW], [shared], metrics, judged)
    # CITED: one verify call, on its p1 -> grounded. PSEUDO: U_q in order, p1 no, p2 yes -> grounded (no p3).
    assert verified_passages(lm) == [text(P1), text(P1), text(P2)]
    assert [q["scores"]["g-precision"] for q in result.per_question] == [1.0, 1.0]


def test_without_a_shared_proxy_a_pseudo_interpretation_is_judged_on_its_runs_own_passages():
    lm = judge_lm()
    metrics, judged = judged_scoring(lm)
    result = score_predictions([DIVA_ROW], [example()], metrics, judged)
    assert verified_passages(lm) == [text(P6)]  # only p6 (Weather): not grounded
    assert result.per_question[0]["scores"]["g-precision"] == 0.0


def test_two_runs_are_judged_on_the_same_proxy_passages(tmp_path):
    proxy = SharedProxy(ProxySource(top=3), FakeRetriever())
    logs = []
    for row in (dict(VERDICT_ROW, interpretations=[PSEUDO], passages=[P1]), DIVA_ROW):
        lm = judge_lm()
        metrics, judged = judged_scoring(lm, tmp_path / f"{len(logs)}.jsonl", proxy="hybrid:wiki-slice@3")
        score_predictions([row], proxy.attach([example()]), metrics, judged)
        logs.append(ResultLog(tmp_path / f"{len(logs)}.jsonl", JudgedQuestion).load()[0])
        # each run's pseudo-interpretation is tried on U_q (p1, then p2), not on the run's own passages
        assert verified_passages(lm) == [text(P1), text(P2)]
    assert logs[0].proxy_ids == logs[1].proxy_ids == ["p1", "p2", "p3"]


def test_a_rerun_reuses_the_logged_questions_without_judge_calls(tmp_path):
    [shared] = SharedProxy(ProxySource(top=3), FakeRetriever()).attach([example()])
    log = tmp_path / "scores.judged.jsonl"
    lm = judge_lm()
    metrics, judged = judged_scoring(lm, log, proxy="hybrid:wiki-slice@3")
    first = score_predictions([VERDICT_ROW], [shared], metrics, judged)
    # verify p1 (1) ; match 2 gold against [CITED] (2) ; CITED grounded, matched against gold (1) -> 4 calls
    assert len(lm.history) == 4 and first.judge["judge_calls"] == 4 and first.judge["reused"] == 0
    again_lm = judge_lm()
    metrics, judged = judged_scoring(again_lm, log, proxy="hybrid:wiki-slice@3")
    again = score_predictions([VERDICT_ROW], [shared], metrics, judged)
    assert again_lm.history == [] and again.judge["reused"] == 1
    assert again.judge["judge_calls"] == 4  # the stored question's cost is still reported
    assert again.per_question == first.per_question and again.metrics == first.metrics


@pytest.mark.parametrize("change", ["judge", "prompts", "proxy", "answer"])
def test_scores_of_another_judge_proxy_or_answer_are_not_reused(tmp_path, monkeypatch, change):
    log = tmp_path / "scores.judged.jsonl"
    proxy = SharedProxy(ProxySource(top=3), FakeRetriever())
    metrics, judged = judged_scoring(judge_lm(), log, proxy="hybrid:wiki-slice@3")
    score_predictions([DIVA_ROW], proxy.attach([example()]), metrics, judged)
    spec, label, examples, row = "openai/judge-a", "hybrid:wiki-slice@3", proxy.attach([example()]), DIVA_ROW
    if change == "judge":
        spec = "openai/judge-b"
    elif change == "prompts":  # an edited judge signature
        monkeypatch.setattr("disambig.evaluation.judging.prompts_digest", lambda: "edited")
    elif change == "proxy":  # a deeper U_q: another label and other passages
        label, examples = "hybrid:wiki-slice@4", SharedProxy(ProxySource(top=4), FakeRetriever()).attach([example()])
    else:
        row = dict(DIVA_ROW, interpretations=[dict(PSEUDO, question="Who holds the women's record today?")])
    lm = judge_lm()
    metrics, judged = judged_scoring(lm, log, spec=spec, proxy=label)
    result = score_predictions([row], examples, metrics, judged)
    assert result.judge["reused"] == 0 and len(lm.history) > 0
    assert len(ResultLog(log, JudgedQuestion).load()) == 2  # both kept, each under its own setting


def test_judge_parse_failures_are_counted_per_question_and_kept_in_the_log(tmp_path):
    log = tmp_path / "scores.judged.jsonl"
    broken = judge_lm({"passage: Cristiano Ronaldo": {"something": "else"}})  # p1 replies cannot be parsed
    metrics, judged = judged_scoring(broken, log)
    result = score_predictions([VERDICT_ROW], [example()], metrics, judged)
    # CITED's only passage is p1: its verdict is unparsable, so it is skipped (0 judged) and counted once
    assert result.judge["parse_failures"] == 1 and result.per_question[0]["scores"]["g-precision"] == 0.0
    metrics, judged = judged_scoring(judge_lm(), log)
    assert score_predictions([VERDICT_ROW], [example()], metrics, judged).judge["parse_failures"] == 1


# Through the command line


def test_score_command_attaches_the_proxy_records_it_and_resumes(tmp_path, monkeypatch):
    dataset = write_asqa(tmp_path / "goals.jsonl")
    run = write_run(tmp_path / "diva-goals", dataset, DIVA_ROW, "abc")
    lm, retriever = judge_lm(), FakeRetriever()
    use_in_cli(monkeypatch, lm, retriever)
    out = tmp_path / "grounded.json"
    args = ["score", str(run / "results.jsonl"), "--dataset", dataset, *(f"-m{m}" for m in METRICS),
            "--judge-lm", "openai/judge-a", "--proxy-top", "3", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    assert written["proxy"]["label"] == "hybrid:wiki-slice@3" and written["proxy"]["fingerprint"]
    assert written["judge"]["proxy"] == "hybrid:wiki-slice@3" and written["judge"]["parse_failures"] == 0
    assert written["metrics"]["g-precision"] == 1.0  # PSEUDO grounded by p2 of U_q, not by its own p6
    assert (tmp_path / "grounded.judged.jsonl").is_file() and "U_q hybrid:wiki-slice@3" in result.output
    calls = len(lm.history)
    rerun = CliRunner().invoke(app, args)
    assert rerun.exit_code == 0 and len(lm.history) == calls and "1 of 1 questions reused" in rerun.output


def test_score_refuses_a_proxy_without_judge_metrics(tmp_path, monkeypatch):
    dataset = write_asqa(tmp_path / "goals.jsonl")
    run = write_run(tmp_path / "diva-goals", dataset, DIVA_ROW, "abc")
    use_in_cli(monkeypatch, judge_lm(), FakeRetriever())
    result = CliRunner().invoke(app, ["score", str(run / "results.jsonl"), "--dataset", dataset, "-m", "d-f1",
                                      "--proxy-top", "3"])
    assert result.exit_code == 2 and "--proxy-top 3 sets the U_q" in result.output


def test_eval_records_the_proxy_in_its_params(tmp_path, monkeypatch):
    dataset = write_asqa(tmp_path / "goals.jsonl")
    retriever = FakeRetriever()
    use_in_cli(monkeypatch, DummyLM([{"long_answer": "Ronaldo."}] * 4, adapter=CompactJSONAdapter()), retriever)
    out = tmp_path / "run"
    args = ["eval", "closed-book", "--dataset", dataset, "-m", "g-precision", "--proxy-top", "3", "--no-track",
            "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "params.json").read_text())["proxy"] == "hybrid:wiki-slice@3" and retriever.calls == 1
    other = CliRunner().invoke(app, [a if a != "3" else "4" for a in args])  # resume with a deeper U_q
    assert other.exit_code == 2 and "different proxy" in other.output
