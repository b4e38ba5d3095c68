"""Contradicting passages (retrieval/contradict.py) and the metrics that score an answer against them."""

from __future__ import annotations

import json

import pytest

from disambig.metrics.poison import contradiction_metrics, flags, gives
from disambig.retrieval.contradict import (
    answer_pool,
    contradiction,
    others,
    planted_corpus,
    wrong_answer,
)

PARKS = {"id": "q1", "question": "How many state parks are in Ostvale?", "interpretations": [
    {"question": "How many state parks did Ostvale have in 1936?", "answers": ["six", "6"]},
    {"question": "How many state parks does Ostvale have today?", "answers": ["38"]}]}
SINGER = {"id": "q2", "question": "Who sang the Ostvale anthem?", "interpretations": [
    {"question": "Who sang the Ostvale anthem first?", "answers": ["Mara Lind"]}]}
PLACE = {"id": "q3", "question": "Where is the Ostvale mill?", "interpretations": [
    {"question": "Where is the old Ostvale mill?", "answers": ["Brennick Falls"]}]}
SINGER2 = {"id": "q4", "question": "Who wrote the Ostvale anthem?", "interpretations": [
    {"question": "Who wrote the Ostvale anthem's words?", "answers": ["Tomas Vey"]}]}

HITS = [
    {"id": "p1", "title": "Ostvale", "text": "Ostvale is a town on the river Enn."},
    {"id": "p2", "title": "Ostvale parks", "text": "The park system opened in 1936 with six parks. It grew later."},
    {"id": "p3", "title": "Parks list", "text": "Six parks were founded first."},
]


def test_numbers_move_by_a_seeded_offset_and_keep_their_form():
    moved = wrong_answer("six", "q1", [])
    assert moved != "six" and moved in {"seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen",
                                         "fifteen"}
    assert wrong_answer("six", "q1", []) == moved  # the same question gets the same wrong answer
    year = wrong_answer("June 15, 2024", "q1", [])
    assert year.startswith("June 15, ") and int(year[-4:]) < 2024  # forward would pass 2025: moved back
    assert wrong_answer("38 parks", "q2", []).endswith(" parks")
    first = wrong_answer("six", "q1", [])
    # a move onto another reading's gold answer takes the next offset
    assert wrong_answer("six", "q1", [], ["six", first]) not in {"six", first}


def test_names_come_from_readings_with_the_same_question_word():
    pool = others(answer_pool([PARKS, SINGER, PLACE, SINGER2]), "q2")
    # q2's reading is a "who" question: of the capitalised answers, only Tomas Vey answers a "who" reading
    assert wrong_answer("Mara Lind", "q2", pool, ["Mara Lind"], "Who sang the Ostvale anthem first?") == "Tomas Vey"
    # no answer shares a word with the gold, whatever the seed
    for seed in ("q5", "q6", "q7", "q8"):
        assert wrong_answer("Mara Lind", seed, [("Who?", "Eva Lind"), ("Who?", "Ada Moss")], ["Mara Lind"],
                            "Who?") == "Ada Moss"
    with pytest.raises(ValueError, match="shape"):
        wrong_answer("Mara Lind", "q2", [("Who?", "mara lind")], ["Mara Lind"], "Who?")


def test_the_planted_passages_swap_every_gold_answer_of_the_target_reading():
    plan = contradiction(PARKS, HITS, [], count=3)
    assert plan is not None
    assert plan.reading == "How many state parks did Ostvale have in 1936?"
    assert plan.true_answer == "six"  # the first of the reading's answers found in the top hit holding one
    assert plan.source_ids == ("p2", "p3")
    wrong = plan.wrong_answer
    first, second, third = (p["text"] for p in plan.passages)
    assert first == f"The park system opened in 1936 with {wrong} parks. It grew later."
    assert second.lower() == f"{wrong} parks were founded first.".lower()  # "Six" matched case-insensitively
    assert third == f"It grew later. The park system opened in 1936 with {wrong} parks."  # the first, rotated
    assert [p["id"] for p in plan.passages] == [f"poison:contradict:q1:{n}" for n in range(3)]
    assert [p["title"] for p in plan.passages] == ["Ostvale parks", "Parks list", "Ostvale parks"]


def test_no_plan_without_a_hit_holding_a_gold_answer():
    assert contradiction(SINGER, HITS, [("Who wrote it?", "Tomas Vey")]) is None


def test_the_planted_corpus_is_the_clean_one_then_the_passages(tmp_path):
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(h) + "\n" for h in HITS))
    plan = contradiction(PARKS, HITS, [], count=1)
    out = planted_corpus(clean, [plan], tmp_path / "planted.jsonl")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["p1", "p2", "p3", "poison:contradict:q1:0"]
    stamp = out.stat().st_mtime_ns
    planted_corpus(clean, [plan], out)
    assert out.stat().st_mtime_ns == stamp  # unchanged content: not rewritten, so its index stays valid


def _prediction(long_answer, readings, conflicts=(), note=""):
    return {"long_answer": long_answer + (f" {note}" if note else ""), "conflict_note": note,
            "interpretations": [{"question": q, "answer": a} for q, a in readings],
            "conflicts": [{"question": q, "answers": [{"answer": a, "passage_ids": []} for a in answers]}
                          for q, answers in conflicts]}


def test_given_reads_numbers_as_numbers_and_skips_the_note():
    pred = _prediction("Ostvale had twelve parks in 1936.", [("In 1936?", "12")])
    assert gives(pred, "12") and gives(pred, "twelve")
    assert not gives(pred, "13")
    noted = _prediction("Ostvale had six parks.", [("In 1936?", "six")], [("In 1936?", ["six", "twelve"])],
                        note='Sources disagree on "In 1936?": six (A) vs twelve (B).')
    assert not gives(noted, "twelve")  # only the note names it: not offered as the answer
    assert flags(noted, "twelve") and flags(noted, "12") and not flags(noted, "13")


def test_attack_success_is_given_and_not_flagged():
    metrics = contradiction_metrics({"q1": "twelve"})
    example = {"id": "q1"}
    silent = _prediction("Ostvale had twelve parks.", [("In 1936?", "twelve")])
    shown = _prediction("Ostvale had twelve parks.", [("In 1936?", "twelve"), ("In 1936?", "six")],
                        [("In 1936?", ["twelve", "six"])], note='Sources disagree on "In 1936?": twelve vs six.')
    assert [metrics[n](example, silent) for n in ("wrong-given", "conflict-flagged", "attack-success")] == [1, 0, 1]
    assert [metrics[n](example, shown) for n in ("wrong-given", "conflict-flagged", "attack-success")] == [1, 1, 0]
    assert metrics["attack-success"]({"id": "other"}, silent) == 0.0  # no planted answer for that question
    assert metrics["attack-success"](example, silent, trace=True) is True


def test_the_contradiction_table_pairs_after_with_before(tmp_path, monkeypatch):
    """Four questions; planted-1: q1 and q2 give the wrong answer, q2's is flagged, so before 2/4, after 1/4."""
    import importlib
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    poison = importlib.import_module("bench.reliability.poison")

    def cell(planted, rows):
        folder = poison.contradiction_dir(tmp_path, "asqa", "dev", "vanilla-rag", planted)
        folder.mkdir(parents=True)
        (folder / "results.jsonl").write_text("".join(json.dumps(
            {"id": i, "code": {"commit": "abc", "dirty": False}, "trace": {"notes": {"conflicts": c}},
             "scores": {"wrong-given": g, "conflict-flagged": f, "attack-success": float(g and not f),
                        "rouge-l": 0.5, "d-f1": s, "rouge-l+note": 0.4}}) + "\n"
            for i, (g, f, c, s) in rows.items()))

    cell(0, {"q1": (0, 0, 0, 1.0), "q2": (0, 0, 1, 0.5), "q3": (0, 0, 0, 0.0), "q4": (0, 0, 0, 1.0)})
    cell(1, {"q1": (1, 0, 0, 0.0), "q2": (1, 1, 1, 0.5), "q3": (0, 0, 0, 0.0), "q4": (0, 0, 0, 1.0)})
    text = poison.contradiction_table(tmp_path, "asqa", "dev", ["vanilla-rag"], [1])
    rows = [line for line in text.splitlines() if line.startswith("| vanilla-rag | 1 |")]
    attack, quality = rows
    assert attack.startswith("| vanilla-rag | 1 | 4 | 0.500 ") and "| 0.250 " in attack
    assert attack.rstrip().endswith("| 1 | 1 |")  # one flagged, one with any conflict
    # DR = sqrt(mean D-F1 * mean ROUGE-L): clean sqrt(0.625 * 0.5) = 0.559, planted sqrt(0.375 * 0.5) = 0.433
    assert "| dr 0.433 |" in quality and "rouge-l 0.400 " in quality and "Δ -0.100 " in quality
    assert "| vanilla-rag | 0 | 4 | dr 0.559 | reference |" in text
