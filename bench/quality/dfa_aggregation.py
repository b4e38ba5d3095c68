"""DFA's aggregation stage alone on fixed candidates: greedy semantic batching against one batch per cluster.

    python -m bench.quality.dfa_aggregation --run bench/results/spiderqa/dfa \\
        --out bench/results/spiderqa/aggregation.jsonl
    python -m bench.quality.dfa_aggregation ... --results docs/RESULTS.md       # also write the table section

The DFA paper's aggregation ablation (its Table 9) runs the aggregation module on the same candidate chunks with
and without greedy batching and reports the LM calls (LC) and the cross-batch candidate pairs (CP). Here the
candidates of each question are the final snapshot a stored `dfa` run kept (``retained_chunk_ids``), read with the
question's rewritten form from the run's trace (entity type, conditions, connective; the de-duplication rule is
not in the trace, so the same-entity judge gets none), and the program built with the run's own options. Each mode
judges them with the configured LM (``--lm``, the project default otherwise; one LM per ``--out`` file); every
(question, mode) row is appended to ``--out`` as it finishes (``bench.harness.Rows``), so a stopped run resumes, and
the row records the code that made it. Without ``--lm`` calls the table is made from ``--out`` alone
(``--table-only``).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from bench.harness import Rows, Script, difference_cell
from bench.harness.runs import params, raw_rows

SCRIPT = Script.of(__file__)
MODES = {"greedy": {"greedy_batching": True}, "per-cluster": {"greedy_batching": False}}
FIRST_MODE = next(iter(MODES))  # the reference of the paired NACE intervals
PAPER_TABLE9 = {"greedy": {"MusiQue": (25, 569), "AGG-Core": (5, 41)},
                "per-cluster": {"MusiQue": (132, 1874), "AGG-Core": (51, 247)}}
"""The paper's LC and CP (its Table 9: "Ours" and "w/o greedy-batching")."""


def candidates(run: Path) -> list[dict[str, Any]]:
    """Per answered question of a stored dfa run: id, gold, scope, corpus, the rewritten form and its kept chunks."""
    from disambig.data import load_dataset

    gold = {str(ex.id): ex for ex in load_dataset(run_params(run)["dataset"], split="all")}
    out = []
    for row in raw_rows(run):
        if row.get("error") is not None:
            continue
        notes = (row.get("trace") or {}).get("notes") or {}
        example = gold[str(row["id"])]
        out.append({"id": str(row["id"]), "gold_count": example.gold_count, "scope": example.scope,
                    "corpus": example.corpus, "question": notes.get("rewritten_question") or example.question,
                    "entity_type": notes.get("entity_type") or "item",
                    "conditions": notes.get("conditions") or [example.question],
                    "connective": notes.get("connective") or "AND",
                    "retained": list(row["prediction"].get("retained_chunk_ids") or [])})
    return out


def run_params(run: Path) -> dict[str, Any]:
    """The stored run's parameters; a run of another program, or of a compiled artifact, is refused."""
    found = params(run)
    if found.get("program") != "dfa":
        raise SystemExit(f"{run} is a run of {found.get('program')!r}; the aggregation ablation reads a dfa run")
    if found.get("artifact"):
        raise SystemExit(f"{run} ran the compiled artifact {found['artifact']}; pass a run of the uncompiled dfa")
    return found


def aggregate(case: dict[str, Any], mode: str, embedder: Any, options: dict[str, Any]) -> dict[str, Any]:
    """One question's aggregation under ``mode`` with the run's own program options: LC by stage, CP, batches,
    count, errors against gold."""
    from disambig.lm.usage import measured
    from disambig.metrics.aggregation import ace, nace
    from disambig.programs.dfa.program import DFA, Costs, QueryForm, scope_chunks

    program = DFA(embedder=embedder, **{**options, **MODES[mode]})
    chunks = {c["id"]: c for c in scope_chunks(case["corpus"], case["scope"])}
    kept = [chunks[i] for i in case["retained"] if i in chunks]
    form = QueryForm(case["question"], case["entity_type"], tuple(case["conditions"]), case["connective"])
    costs = Costs()
    with measured() as trace:
        entities, notes = program.aggregate(form, kept, costs)
    count = len(entities)
    return {"id": case["id"], "mode": mode, "candidates": len(kept), "batches": len(notes["batches"]),
            "lc_judge": costs.calls["judge"], "lc_dedup": costs.calls["dedup"], "cp": notes["cp"],
            "judged_pairs": notes["judged_pairs"], "count": count, "gold_count": case["gold_count"],
            "ace": ace(count, case["gold_count"]), "nace": nace(count, case["gold_count"]),
            "tokens": trace.input_tokens + trace.output_tokens, "seconds": round(trace.seconds, 2)}


def run(run_dir: Path, rows: Rows, lm_spec: str | None, limit: int | None) -> None:
    """Judge every (question, mode) not yet in ``rows``, appending each as it is made."""
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.retrieval.embedder import Embedder
    from disambig.settings import load_settings

    settings = load_settings()
    spec = lm_spec or settings.lm
    rows.refuse_other("lm", spec)
    todo = [(c, m) for c in candidates(run_dir)[:limit] for m in MODES if not rows.done(c["id"], m)]
    if not todo:
        return
    options = run_params(run_dir).get("options") or {}
    configure_dspy(build_lm(settings, lm_spec))
    embedder = Embedder()
    for n, (case, mode) in enumerate(todo, 1):
        row = rows.add({**aggregate(case, mode, embedder, options), "lm": spec})
        print(f"{n}/{len(todo)} {case['id']} {mode}: {row['batches']} batches, LC {row['lc_judge']}"
              f"+{row['lc_dedup']}, CP {row['cp']}, count {row['count']} (gold {row['gold_count']})", flush=True)


def section(rows: list[dict[str, Any]], command: str) -> str:
    ids = sorted(set.intersection(*({r["id"] for r in rows if r["mode"] == m} for m in MODES)))
    codes = sorted({str(r["code"]["commit"]) + (" (dirty)" if r["code"].get("dirty") else "") for r in rows})
    lms = sorted({str(r.get("lm")) for r in rows})
    lines = [f"Generated by `{SCRIPT.command(command)}` from the stored rows: {len(ids)} questions, each judged in "
             f"both modes on the same candidates by LM {', '.join(lms)}; code {', '.join(codes)}.", "",
             "| batching | candidates/q | batches/q | LC judge/q | LC dedup/q | CP/q | tokens/q | NACE mean | "
             "NACE median | ACE mean | exact | Δ NACE vs greedy [95% CI] | paper LC / CP (AGG-Core) | "
             "paper LC / CP (MusiQue) |", "| --- |" + " ---: |" * 10 + " --- | --- | --- |"]
    greedy = {r["id"]: {"nace": r["nace"]} for r in rows if r["mode"] == FIRST_MODE and r["id"] in ids}
    for mode in MODES:
        picked = [r for r in rows if r["mode"] == mode and r["id"] in ids]
        if not picked:
            continue

        def mean(key: str, chosen: list[dict[str, Any]] = picked) -> float:
            return statistics.fmean(r[key] for r in chosen)

        delta = "reference" if mode == FIRST_MODE else difference_cell(
            {r["id"]: {"nace": r["nace"]} for r in picked}, greedy, "nace", higher_is_better=False)
        paper = PAPER_TABLE9[mode]
        lines.append(f"| {mode} | {mean('candidates'):.1f} | {mean('batches'):.2f} | {mean('lc_judge'):.2f} | "
                     f"{mean('lc_dedup'):.2f} | {mean('cp'):.1f} | {mean('tokens'):,.0f} | {mean('nace'):.3f} | "
                     f"{statistics.median(r['nace'] for r in picked):.3f} | {mean('ace'):.3f} | "
                     f"{sum(r['ace'] == 0 for r in picked)} | {delta} | "
                     f"{paper['AGG-Core'][0]} / {paper['AGG-Core'][1]} | "
                     f"{paper['MusiQue'][0]} / {paper['MusiQue'][1]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=Path("bench/results/spiderqa/dfa"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/spiderqa/aggregation.jsonl"))
    parser.add_argument("--lm", default=None, help="LM spec (default: DISAMBIG_LM, else the project default)")
    parser.add_argument("--limit", type=int, default=None, help="first N answered questions of the run")
    parser.add_argument("--table-only", action="store_true", help="make the table from --out; call no LM")
    parser.add_argument("--results", type=Path, help="write the section into this Markdown file")
    args = parser.parse_args()
    rows = Rows(args.out, key=("id", "mode"))
    if not args.table_only:
        run(args.run, rows, args.lm, args.limit)
    stored = list(rows)
    if not stored:
        raise SystemExit(f"no rows in {args.out}")
    SCRIPT.section(args.results, section(stored, f"--run {args.run} --out {args.out}"), "dfa-aggregation")


if __name__ == "__main__":
    main()
