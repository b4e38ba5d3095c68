"""The AMD section of docs/benchmarks.md from stored `disambig eval-retrieval --out` scores (no LM call).

    python -m bench.quality.amd_table                                   # bench/results/amd/*.json -> docs/benchmarks.md
    python -m bench.quality.amd_table --results DIR --doc FILE [--section NAME]

Each JSON file holds the rows one `eval-retrieval` run wrote (a list of {retriever, dataset, metrics, expansion,
code, lm, ...}). Rows are grouped by dataset and ordered by the retriever they expand (BM25's family, the dense
family, the fusions); a query expansion's nDCG@10 gain is read against the retriever it searches with. Cost columns
are what making the expansions cost per query (``made_*``: the cache entry's record when the expansion came from
the cache), so a re-run from the cache reports the method's cost, not zero. Where both rows hold each query's scores
(``per_query``, written by `eval-retrieval` since it records them), the gain carries its 95% paired-bootstrap interval
over the queries and its verdict; older rows show the difference of the means alone.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.harness import Script
from bench.harness.paired import difference_cell

SCRIPT = Script.of(__file__)

FAMILIES = (
    ("bm25", ("bm25", "amd-sparse", "q2d-sparse", "q2c-sparse", "genqr-ensemble")),
    ("dense", ("dense", "amd-dense", "q2d-dense", "q2c-dense")),
    ("bm25", ("amd-rrf", "genqr-fusion")),
    ("", ("hybrid",)),
)
"""(the retriever a row's gain is read against, the rows in table order)."""

POSTER_DBPEDIA = {"bm25": 0.2831, "q2c-sparse": 0.3252, "q2d-sparse": 0.3378, "genqr-ensemble": 0.2302,
                  "amd-sparse": 0.3352, "dense": 0.4002, "q2c-dense": 0.4250, "q2d-dense": 0.4229,
                  "amd-dense": 0.4435, "genqr-fusion": 0.2726, "amd-rrf": 0.3078}
"""The poster's DBpedia nDCG@10 (full collection, Qwen2.5-7B-Instruct at temperature 0.5; BM25 = bm25s, dense =
E5-base), for the column beside ours."""

DEFAULT_TEMPERATURE = 0.5
"""`eval-retrieval`'s expansion temperature unless --temperature is given (the poster's)."""

TITLES = {"dbpedia-entity-5k": "DBpedia-Entity 5k ({n} judged {split} queries)"}
ASQA_TITLE = "ASQA retrieval set ({n} {split} questions over the wiki slice)"
"""A folder ``disambig data asqa-retrieval`` wrote is named freely (asqa-retrieval, asqa-ir30, ...)."""


GAIN_NOTE = ("Δ vs base: nDCG@10 minus that of the retriever the row searches with, on the same queries; with its "
             "95% paired-bootstrap interval over the queries (scipy, percentile, 9,999 resamples, fixed seed) and "
             "\"tie\" when the interval spans 0, where both rows hold each query's scores (rows written before "
             "`eval-retrieval` recorded them show the difference of the means alone).")


def title(dataset: str, rows: dict[str, dict]) -> str:
    """The heading of a dataset's table, with the number of judged queries its rows searched."""
    row = next(iter(rows.values()))
    pattern = TITLES.get(dataset, ASQA_TITLE if dataset.startswith("asqa") else dataset)
    return pattern.format(n=row["queries"], split=row.get("split", "test"))


def gain(row: dict, base: dict) -> str:
    """nDCG@10 of ``row`` minus its base retriever's: with the paired interval and verdict when both rows hold each
    query's scores, else the difference of the means."""
    if set(row.get("per_query") or ()) & set(base.get("per_query") or ()):
        return difference_cell(row["per_query"], base["per_query"], "ndcg@10", digits=4)
    return f"{row['metrics']['ndcg@10'] - base['metrics']['ndcg@10']:+.4f}"


def load_rows(folder: Path) -> dict[str, dict[str, dict]]:
    """{dataset: {retriever: row}} from every JSON file in ``folder`` (a later file's row replaces an earlier one)."""
    rows: dict[str, dict[str, dict]] = {}
    for path in sorted(folder.glob("*.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            dataset = Path(str(row["dataset"])).name
            rows.setdefault(dataset, {})[row_name(row)] = {**row, "file": path.name}
    return rows


def row_name(row: dict) -> str:
    """The retriever, with the compiled expansion state it loaded (``amd-sparse [bootstrap.json]``) or the variant
    a bench script searched with (``amd-sparse [answers unreflected]``) if any."""
    labels = [Path(row["expansion_state"]).name if row.get("expansion_state") else row.get("variant")]
    if row.get("expansion") and temperature(row) != DEFAULT_TEMPERATURE:
        labels.append(f"temperature {temperature(row)}")
    label = ", ".join(str(x) for x in labels if x)
    return f"{row['retriever']} [{label}]" if label else row["retriever"]


def temperature(row: dict) -> float:
    """The expansion temperature a row records; rows from before it was recorded ran at the default."""
    value = row.get("temperature")
    return DEFAULT_TEMPERATURE if value is None else float(value)


def variants(kind: str, rows: dict[str, dict]) -> list[str]:
    """The rows of retriever ``kind``: the plain one first, then its compiled expansions by state name."""
    return [kind] * (kind in rows) + sorted(name for name in rows if name.startswith(f"{kind} ["))


def cost_cells(row: dict) -> list[str]:
    spent = row.get("expansion")
    if not spent:
        return ["0", "0", "0", "—"]
    return [f"{spent['made_lm_calls']:.1f}", f"{spent['made_input_tokens']:,.0f} + {spent['made_output_tokens']:,.0f}",
            f"{spent['made_seconds']:.0f}", f"{spent['from_cache']}/{row['queries']}"]


def table(dataset: str, rows: dict[str, dict]) -> str:
    poster = dataset == "dbpedia-entity-5k"
    head = ["retriever", "nDCG@10", "Δ vs base [95% CI]", "Recall@100", "MRR@10", "LM calls/q", "tokens/q (in + out)",
            "expansion s/q", "from cache", "code"] + (["poster nDCG@10"] if poster else [])
    aligns = ["---"] + ["---:"] * 8 + ["---"] + (["---:"] if poster else [])
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(aligns) + " |"]
    for base, kinds in FAMILIES:
        for name in [n for kind in kinds for n in variants(kind, rows)]:
            row = rows[name]
            metrics = row["metrics"]
            delta = "" if name == base or base not in rows else gain(row, rows[base])
            cells = [f"`{name}`", f"{metrics['ndcg@10']:.4f}", delta, f"{metrics['recall@100']:.4f}",
                     f"{metrics['mrr@10']:.4f}", *cost_cells(row), f"`{row['code']['commit']}`"
                     + (" (dirty)" if row["code"].get("dirty") else "")]
            if poster:
                cells.append(f"{POSTER_DBPEDIA[name]:.4f}" if name in POSTER_DBPEDIA else "")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def section(folder: Path, rows: dict[str, dict[str, dict]], name: str = "amd") -> str:
    expanded = [r for by_name in rows.values() for r in by_name.values() if r.get("expansion")]
    lms = sorted({str(r.get("lm")) for r in expanded})
    temperatures = sorted({temperature(r) for r in expanded})
    command = ["--results", str(folder)] + (["--section", name] if name != "amd" else [])
    parts = [f"Generated by `{SCRIPT.command(command)}` from the stored scores "
             f"(no LM call). Expansion LM: {', '.join(lms) or 'none'}; temperature "
             f"{', '.join(map(str, temperatures)) or '-'} (the poster's is 0.5). {GAIN_NOTE}", ""]
    for dataset in sorted(rows, key=lambda d: (not d.startswith("asqa"), d)):
        parts += [f"#### {title(dataset, rows[dataset])}", "", table(dataset, rows[dataset]), ""]
        tally = next((r["reflection"] for r in rows[dataset].values() if r.get("reflection")), None)
        if tally:
            parts += [f"AMD's agents on these {tally['queries']} queries: the questioning reply could not be parsed "
                      f"for {tally['questioning_failed']} (searched with the query alone); reflection kept "
                      f"{tally['kept']} of the {tally['answers']} answers written.", ""]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("bench/results/amd"))
    parser.add_argument("--doc", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--section", default="amd", help="the marked section of --doc to write (one per folder)")
    args = parser.parse_args()
    rows = load_rows(args.results)
    if not rows:
        raise SystemExit(f"no eval-retrieval scores in {args.results}")
    SCRIPT.section(args.doc, section(args.results, rows, args.section), args.section)


if __name__ == "__main__":
    main()
