"""The router's tables composed from stored answers (no LM call), one subcommand each:

    python -m bench.quality.route table --decisions bench/results/route/asqa-dev-decisions.jsonl --dataset asqa \
        --runs bench/results/route --metric dr [--also PROGRAM ...] [--results docs/RESULTS.md --section route-asqa]
    python -m bench.quality.route faithful --run bench/results/route/asqa-dev/route-e2e-asqa-l0 --dataset asqa \
        --decisions bench/results/route/asqa-dev-decisions-asqa-l0.jsonl --runs bench/results/route --metric dr
    python -m bench.quality.route e2e --run bench/results/route/asqa-dev/route-e2e-asqa-cascade --dataset asqa \
        --metric dr [--stored bench/results/route/asqa-dev/adf] [--split-at 50]

``table``: the router against each single candidate and the oracle. ``--decisions`` is what ``disambig route
predict`` wrote for the held-out questions; each question's routed answer is the chosen candidate's stored answer in
``RUNS/DATASET-dev/PROGRAM`` (an abstention or clarification scores as no answer and costs no call). Every row gets
the 95% paired-bootstrap interval of its difference to VanillaRAG and to the best single candidate.

``faithful``: is composing stored answers faithful to running ``route``? ``--run`` is a ``disambig eval route
--artifact ...`` folder, ``--decisions`` what ``disambig route predict`` wrote for the same artifact; for each
question the run holds, the composed answer is the stored answer of the candidate the decisions name (a question the
run failed counts as a failure). The table counts the questions where the run chose as predicted and where its long
answer and interpretations are identical, and compares the primary metric of the two with its paired interval.

``e2e``: the route cascade end to end against its own first stage, paired within one run. ``--run`` is a ``disambig
eval route --artifact CASCADE.json`` folder; each row holds the cascade's answer and, when it escalated, the first
candidate's answer in the trace (``notes.cascade_first``), so the first stage's answers to the same questions, from
the same code in the same run, are known without another LM call. ``--stored`` adds a separate run of a candidate on
the questions both hold; ``--split-at N`` the cascade against its first stage on the first N questions and the rest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.harness import Script, difference_cell
from bench.harness.runs import by_id, corpus_value, row_cost, rows_by_id, score_rows

SCRIPT = Script.of(__file__)
REFERENCE = "vanilla-rag"
NO_ANSWER = {"scores": {}, "prediction": {}, "trace": {}}


def table(decisions: list[dict], runs: Path, dataset: str, metric: str, extra: list[str]) -> str:
    """The router against each single candidate and the oracle: the markdown table and its notes."""
    from disambig.optimizers.route_labels import Outcome, label_questions
    from disambig.programs.route.policy import answer_action

    ids = [d["id"] for d in decisions]
    candidates = {d["program"] for d in decisions if d["program"]} | {
        a[len("answer:"):] for d in decisions for a in d.get("probabilities") or {} if a.startswith("answer:")}
    programs = sorted(candidates | set(extra) | {REFERENCE})
    stored = {p: rows_by_id(runs / f"{dataset}-dev" / p) for p in programs}
    missing = {p: len([i for i in ids if i not in rows]) for p, rows in stored.items()}
    if any(missing.values()):
        raise SystemExit(f"stored answers are missing: {({p: m for p, m in missing.items() if m})}")
    scores = {p: {i: rows[i]["scores"] for i in ids} for p, rows in stored.items()}
    outcomes = {answer_action(p): {i: Outcome(scores[p][i], row_cost(stored[p][i])[0]) for i in ids}
                for p in programs if p in candidates}
    oracle_labels, _ = label_questions(outcomes, metric)
    rows = {p: (scores[p], [stored[p][i] for i in ids]) for p in programs}
    rows["route"] = ({d["id"]: scores[d["program"]][d["id"]] if d["program"] else {} for d in decisions},
                     [stored[d["program"]][d["id"]] if d["program"] else NO_ANSWER for d in decisions])
    chosen = {i: oracle_labels[i][len("answer:"):] for i in ids}
    rows["oracle"] = ({i: scores[chosen[i]][i] for i in ids}, [stored[chosen[i]][i] for i in ids])
    best = max(programs, key=lambda p: corpus_value(metric, scores[p]))
    lines = [f"| row | {metric} | Δ vs {REFERENCE} [95% CI] | Δ vs best single ({best}) [95% CI] | LM calls/q | "
             "tokens/q |", "|---|---|---|---|---|---|"]
    for label, (by_question, answered) in rows.items():
        cells = [difference_cell(by_question, scores[ref], metric) for ref in (REFERENCE, best)]
        lines.append(f"| {label} | {corpus_value(metric, by_question, ids):.3f} | {cells[0]} | {cells[1]} | "
                     f"{mean_cost(answered, 0):.2f} | {mean_cost(answered, 1):,.0f} |")
    mix = {a: sum(d["action"] == a for d in decisions) for a in sorted({d["action"] for d in decisions})}
    oracle_mix = {a: list(oracle_labels.values()).count(a) for a in sorted(set(oracle_labels.values()))}
    lines += ["", f"{len(ids)} held-out questions. Route's actions: {mix}. Oracle's choices (best candidate per "
              f"question by the labels' utility, ties to the cheaper): {oracle_mix}."]
    return "\n".join(lines)


def mean_cost(rows: list[dict], which: int) -> float:
    """Mean LM calls (``which`` 0) or tokens (1) per row."""
    return sum(row_cost(r)[which] for r in rows) / len(rows)


def same_answer(a: dict, b: dict) -> bool:
    """Whether two predictions carry the same long answer and the same interpretations (questions and answers)."""
    def readings(p: dict) -> list[tuple[str, str]]:
        return [(str(r.get("question")), str(r.get("answer"))) for r in p.get("interpretations") or []]

    return a.get("long_answer") == b.get("long_answer") and readings(a) == readings(b)


def cut_short(a: dict, b: dict) -> bool:
    """Whether ``a`` has ``b``'s interpretations and a long answer that is a shorter prefix of ``b``'s (a reply the
    engine now ends at its last whole sentence where the stored one ran on to the token cap)."""
    long_a, long_b = a.get("long_answer") or "", b.get("long_answer") or ""
    return (bool(long_a.strip()) and same_answer({**a, "long_answer": ""}, {**b, "long_answer": ""})
            and len(long_a) < len(long_b) and long_b.startswith(long_a.rstrip()))


def faithful(run: Path, runs: Path, dataset: str, metric: str, decisions: dict[str, str]) -> str:
    """The markdown table of an end-to-end route run against its composition from stored runs, and its notes."""
    e2e = rows_by_id(run)
    unknown = sorted(set(e2e) - set(decisions))
    if unknown:
        raise SystemExit(f"{len(unknown)} questions of {run} have no decision (e.g. {unknown[0]}); predict them")
    chosen = {i: decisions[i] for i in e2e}
    failed = sum(not row.get("prediction") for row in e2e.values())
    agreed = sum((row.get("prediction") or {}).get("program", "") == chosen[i] for i, row in e2e.items())
    stored = {p: rows_by_id(runs / f"{dataset}-dev" / p) for p in set(chosen.values()) if p}
    ids = [i for i in e2e if not chosen[i] or i in stored[chosen[i]]]
    if not ids:
        raise SystemExit(f"no question of {run} has a stored answer of its chosen candidate under {runs}")
    composed = {i: stored[chosen[i]][i] if chosen[i] else NO_ANSWER for i in ids}
    identical = sum(same_answer(e2e[i].get("prediction") or {}, composed[i]["prediction"]) for i in ids)
    shorter = sum(cut_short(e2e[i].get("prediction") or {}, composed[i]["prediction"]) for i in ids)
    mine, theirs = ({i: rows[i]["scores"] for i in ids} for rows in (e2e, composed))
    commits = sorted({str((e2e[i].get("code") or {}).get("commit", ""))[:7] for i in ids})
    lines = [f"| answers | {metric} | Δ vs composed [95% CI] | LM calls/q |", "|---|---|---|---|"]
    for label, rows, scores, cell in (("route, end to end", e2e, mine, difference_cell(mine, theirs, metric)),
                                      ("composed from stored candidate runs", composed, theirs, "reference")):
        lines.append(f"| {label} | {corpus_value(metric, scores):.3f} | {cell} | "
                     f"{mean_cost([rows[i] for i in ids], 0):.2f} |")
    mix = {p or "(no answer)": [chosen[i] for i in ids].count(p) for p in sorted({chosen[i] for i in ids})}
    lines += ["", f"{len(ids)} dev questions answered end to end (code {', '.join(commits)}); chosen: {mix}; "
              f"the run chose the predicted candidate on {agreed} and failed {failed}; identical long answer and "
              f"interpretations on {identical} of {len(ids)}, the same interpretations with the long answer a "
              f"shorter prefix of the stored one on {shorter}."]
    return "\n".join(lines)


def cascade_of(row: dict) -> dict:
    """The row's cascade decision (``first``, ``escalate``, ``escalated``, ...), or {} for a failed question."""
    return (((row.get("trace") or {}).get("notes") or {}).get("route") or {}).get("cascade") or {}


def first_stage(row: dict) -> dict:
    """The row as the first candidate alone would have written it: its answer and its share of the cost."""
    dropped = ((row.get("trace") or {}).get("notes") or {}).get("cascade_first")
    if not cascade_of(row).get("escalated") or dropped is None:
        return row
    prediction = {"long_answer": dropped.get("long_answer", ""),
                  "interpretations": list(dropped.get("interpretations") or [])}
    return {**row, "prediction": prediction, "trace": {k: dropped.get(k, 0) for k in
                                                        ("lm_calls", "input_tokens", "output_tokens")}}


def parts(ids: list[str], split_at: int) -> list[tuple[str, list[str]]]:
    """The run's questions before and from ``split_at`` (in the run's order, the split's), labelled; none for 0."""
    if not 0 < split_at < len(ids):
        return []
    return [(f"questions 1-{split_at}", ids[:split_at]), (f"questions {split_at + 1}-{len(ids)}", ids[split_at:])]


def e2e(run: Path, dataset: str, metric: str, stored: list[Path], split_at: int = 0) -> str:
    """The markdown table of the cascade against its first stage (and any stored runs), with its notes."""
    final = rows_by_id(run)
    if not final:
        raise SystemExit(f"{run} holds no answered question")
    decided = [cascade_of(r) for r in final.values() if cascade_of(r)]
    if not decided:
        raise SystemExit(f"{run} is not a route cascade run (no trace note route.cascade); pass the cascade's run")
    first_name, escalate_name = decided[0].get("first", "first"), decided[0].get("escalate", "escalation")
    first = {i: first_stage(r) for i, r in final.items()}

    def score(rows: dict[str, dict]) -> dict[str, dict[str, float]]:
        return by_id(score_rows(rows.values(), dataset, [metric]).per_question)

    reference, cascade = score(first), score(final)
    rows = [(f"{first_name} (the cascade's first stage)", first, reference, "reference"),
            ("route cascade", final, cascade, None)]
    for folder in stored:
        other = {i: r for i, r in rows_by_id(folder).items() if i in final}
        if other:
            rows.append((f"{folder.name} (separate run, {len(other)} of these questions)", other, score(other), None))
    lines = [f"| answers | {metric} | Δ vs {first_name} [95% CI] | LM calls/q | tokens/q |", "|---|---|---|---|---|"]
    for label, answers, scores, cell in rows:
        cell = cell or difference_cell(scores, {i: reference[i] for i in scores}, metric)
        lines.append(f"| {label} | {corpus_value(metric, scores):.3f} | {cell} | "
                     f"{mean_cost(list(answers.values()), 0):.2f} | {mean_cost(list(answers.values()), 1):,.0f} |")
    for label, part in parts(list(final), split_at):
        cell = difference_cell({i: cascade[i] for i in part}, {i: reference[i] for i in part}, metric)
        lines.append(f"| route cascade, {label} | {corpus_value(metric, cascade, part):.3f} (first stage "
                     f"{corpus_value(metric, reference, part):.3f}) | {cell} | "
                     f"{mean_cost([final[i] for i in part], 0):.2f} | |")
    escalated = sum(bool(c.get("escalated")) for c in decided)
    failed = sum(not r.get("prediction") for r in final.values())
    commits = sorted({str((r.get("code") or {}).get("commit", ""))[:7] for r in final.values()} - {""})
    lines += ["", f"{len(final)} {Path(dataset).stem} questions answered end to end (code {', '.join(commits)}); "
              f"escalated to {escalate_name} on {escalated}; failed {failed}. The first stage's answers are the ones "
              f"the run itself produced before deciding (trace `notes.cascade_first` when it escalated)."]
    return "\n".join(lines)


def read_decisions(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("table", "faithful", "e2e"):
        sub = commands.add_parser(name)
        sub.add_argument("--dataset", required=True)
        sub.add_argument("--metric", required=True)
        sub.add_argument("--results", type=Path)
        sub.add_argument("--section", default="")
        if name != "e2e":
            sub.add_argument("--decisions", type=Path, required=True)
            sub.add_argument("--runs", type=Path, default=Path("bench/results/route"))
        if name != "table":
            sub.add_argument("--run", type=Path, required=True)
    commands.choices["table"].add_argument("--also", nargs="*", default=[], help="More single programs to list.")
    commands.choices["e2e"].add_argument("--stored", type=Path, nargs="*", default=[])
    commands.choices["e2e"].add_argument("--split-at", type=int, default=0, help="Also compare before and from N.")
    args = parser.parse_args()
    if args.command == "table":
        text, section = table(read_decisions(args.decisions), args.runs, args.dataset, args.metric, args.also), "route"
    elif args.command == "faithful":
        chosen = {d["id"]: d["program"] or "" for d in read_decisions(args.decisions)}
        text, section = faithful(args.run, args.runs, args.dataset, args.metric, chosen), "faithful"
    else:
        text, section = e2e(args.run, args.dataset, args.metric, args.stored, args.split_at), "cascade-e2e"
    SCRIPT.section(args.results, f"Generated by `{SCRIPT.command(sys.argv[1:])}` from the stored answers (no LM call)."
                   f"\n\n{text}" if args.results else text, args.section or f"{section}-{args.dataset}")


if __name__ == "__main__":
    main()
