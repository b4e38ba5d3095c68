"""How far the grounded metrics' judge can be trusted: its verdicts on ASQA cases whose right answer is known.

    python -m bench.quality.judge_check --judge-lm local [--first 30] [--results docs/RESULTS.md]
    python -m bench.quality.judge_check --report-only --results docs/RESULTS.md      # redraw from the stored verdicts

For each of the first ``--first`` ASQA dev questions with a gold interpretation whose answer an evidence passage
states, the judge (``disambig.metrics.Judge``, the prompts G-Precision and G-Recall use) is asked six things:

- ``verify``, answer given: that passage supports (gold question, gold answer)            -> expect yes
- ``verify``, answer given: a passage of the next such question supports it                -> expect no
- ``verify``, no answer (how a pseudo-interpretation is judged): the same two passages     -> expect yes / no
- ``match``: the gold question is among its own question's gold questions                  -> expect yes
- ``match``: it is among the next question's gold questions                                -> expect no
- ``count_unique`` (Sufficient@k's de-duplication): how many of the question's distinct gold questions are
  distinct                                                                                 -> expect all of them

The verdicts go to ``--out`` (JSON, with the judge model and the code that asked) and the table, per case, gives
how often the judge agreed with the expected verdict, how often it said yes, and its unparsable replies. A judge
that says yes to everything scores 100% on the "expect yes" rows and 0% on the "expect no" ones.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness import Script

SCRIPT = Script.of(__file__)

CASES = [  # (name, judge method, expected verdict)
    ("verify, answer, its passage", "verify", True),
    ("verify, answer, another question's passage", "verify", False),
    ("verify, no answer, its passage", "verify", True),
    ("verify, no answer, another question's passage", "verify", False),
    ("match, its own gold questions", "match", True),
    ("match, another question's gold questions", "match", False),
]
SECTION = "judge-check"


def gold_cases(examples: list[Any], first: int) -> list[dict[str, Any]]:
    """Per usable question: its question, one gold (question, answer, passage), its gold questions, and the next
    usable question's passage and gold questions as the negatives."""
    from disambig.metrics.mrecall import passage_text
    from disambig.optimizers.gold import cited_pairs
    from disambig.retrieval.passage import Passage

    usable = []
    for ex in examples:
        evidence = getattr(ex, "evidence", None) or []
        passages = [Passage(str(n), e.get("title", ""), e["text"]) for n, e in enumerate(evidence, 1)]
        pairs = cited_pairs(ex.interpretations, passages)  # whole passages here, as the grounded metrics judge them
        if pairs:
            first_pair = pairs[0]
            usable.append({"id": str(ex.id), "question": str(ex.question), "sub_question": first_pair.question,
                           "answer": first_pair.answer, "passage": passage_text(evidence[first_pair.passage - 1]),
                           "gold_questions": [i["question"] for i in ex.interpretations]})
        if len(usable) > first:
            break
    cases = []
    for this, other in zip(usable, usable[1:] + usable[:1], strict=True):
        if len(cases) == first:
            break
        cases.append(this | {"other_passage": other["passage"], "other_questions": other["gold_questions"]})
    return cases


def ask(judge: Any, case: dict[str, Any]) -> list[bool | None]:
    """The six verdicts of one case, in ``CASES`` order."""
    q, sub, answer = case["question"], case["sub_question"], case["answer"]
    return [
        judge.verify(sub, answer, case["passage"]),
        judge.verify(sub, answer, case["other_passage"]),
        judge.verify(sub, "", case["passage"]),
        judge.verify(sub, "", case["other_passage"]),
        judge.match(q, sub, case["gold_questions"]),
        judge.match(q, sub, case["other_questions"]),
    ]


def table(record: dict[str, Any]) -> str:
    verdicts = [row["verdicts"] for row in record["rows"]]
    lines = ["| case | expected | n | agrees | says yes | unparsable |", "|---|---|---|---|---|---|"]
    for k, (name, _, expected) in enumerate(CASES):
        column = [v[k] for v in verdicts]
        parsed = [v for v in column if v is not None]
        agree = sum(v == expected for v in parsed)
        yes = sum(bool(v) for v in parsed)
        lines.append(f"| {name} | {'yes' if expected else 'no'} | {len(column)} | {percent(agree, len(parsed))} "
                     f"| {percent(yes, len(parsed))} | {len(column) - len(parsed)} |")
    return "\n".join(lines)


def percent(count: int, total: int) -> str:
    return f"{100 * count / total:.0f}%" if total else "–"


def section(record: dict[str, Any], command: str) -> str:
    note = (f"Generated by `{SCRIPT.command(command)}`. Judge `{record['judge_lm']}` "
            f"({record['judge_model']}) on the first {len(record['rows'])} usable ASQA dev questions; verdicts asked "
            f"by code `{record['code']}`, {record['judge_calls']} judge calls.")
    dedup = [row["dedup"] for row in record["rows"] if row.get("dedup")]
    counted = (f"De-duplication (I_D) over each question's distinct gold questions: {sum(c for c, _ in dedup)} counted "
               f"distinct of {sum(n for _, n in dedup)}, exact on {sum(c == n for c, n in dedup)} of {len(dedup)} "
               "questions." if dedup else "")
    return "\n".join([note, "", table(record), "", counted, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge-lm", default=None, help="Judge LM spec (default DISAMBIG_JUDGE_LM, else DISAMBIG_LM).")
    parser.add_argument("--first", type=int, default=30, help="Usable ASQA dev questions to ask about.")
    parser.add_argument("--out", type=Path, default=Path("bench/results/judge-check/asqa.json"))
    parser.add_argument("--results", type=Path, default=None, help="Markdown file to write the table into.")
    parser.add_argument("--report-only", action="store_true", help="Redraw the table from --out; no judge call.")
    args = parser.parse_args()
    if args.report_only:
        record = json.loads(args.out.read_text(encoding="utf-8"))
    else:
        record = run(args.judge_lm, args.first)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    text = section(record, f"--judge-lm {record['judge_lm']} --first {len(record['rows'])}")
    SCRIPT.section(args.results, text, SECTION)


def run(judge_lm: str | None, first: int) -> dict[str, Any]:
    from disambig.cli.score_cmd import judge_lm_spec, make_judge
    from disambig.data import load_dataset
    from disambig.evaluation.code_version import code_stamp
    from disambig.evaluation.session import lm_model

    spec = judge_lm_spec(judge_lm)
    judge = make_judge(spec)
    cases = gold_cases(load_dataset("asqa", split="dev"), first)
    rows = []
    for n, case in enumerate(cases, 1):
        distinct = list(dict.fromkeys(case["gold_questions"]))
        rows.append({"id": case["id"], "verdicts": ask(judge, case),
                     "dedup": [judge.count_unique(case["question"], distinct), len(distinct)]})
        print(f"{n}/{len(cases)} {case['id']}: {rows[-1]['verdicts']}", flush=True)
    return {"judge_lm": spec, "judge_model": lm_model(spec), "code": code_stamp()["commit"],
            "judge_calls": judge.calls, "parse_failures": judge.parse_failures, "rows": rows}


if __name__ == "__main__":
    main()
