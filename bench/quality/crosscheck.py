"""Cross-check our ADF metrics against the ADF authors' stored per-question values.

Reads ``<repo>/../shared/crosscheck/*.jsonl`` (gpt-4o-mini answers from the ADF authors' repository with the
values their ``src/evaluation.py`` gave them; its README defines them), scores each file through the same
code path as ``disambig score`` and prints, per file and metric, our mean, theirs, the difference and the
rows that agree to 1e-9, with the official scorers' values beside. ASQA ``adf-d-f1`` (and so ``adf-dr``)
needs a QA reader: pass ``--reader PATH``; without it the row says "needs --reader", and ``adf-dr`` is also
checked from *their* D-F1 and our ROUGE-L. Writes ``docs/crosscheck.md`` only with ``--write-docs``, or the
table to ``--out PATH``.

    python -m bench.quality.crosscheck [--reader PATH] [--write-docs | --out FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CROSSCHECK = REPO.parent / "shared" / "crosscheck"
DATA = REPO.parent / "shared" / "data"
DOCS = REPO / "docs" / "crosscheck.md"

# our metric -> their reference key; the README's exact-match rows
CHECKED = {
    "ambignq": {"adf-f1": "adf_f1", "adf-d-f1": "adf_d_f1"},
    "asqa": {"adf-f1": "adf_f1", "adf-rouge-l": "rouge_l", "adf-d-f1": "adf_d_f1", "adf-dr": "dr_f1"},
}
READER_ONLY = {"adf-d-f1", "adf-dr"}
OFFICIAL = {"ambignq": ["ambigqa-f1", "d-f1"], "asqa": ["str-em", "rouge-l", "d-f1", "dr"]}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not CROSSCHECK.is_dir():
        print(f"no cross-check data at {CROSSCHECK}; it is read from ../shared/crosscheck beside the checkout",
              file=sys.stderr)
        return 2
    lines = table(args.reader)
    text = "\n".join(lines) + "\n"
    print(text)
    target = args.out or (DOCS if args.write_docs else None)
    if target is not None:
        target.write_text(document(text, args.reader), encoding="utf-8")
        print(f"wrote {target}")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", type=Path, help="local Hugging Face QA model folder (for ASQA adf-d-f1)")
    parser.add_argument("--write-docs", action="store_true", help=f"write {DOCS.relative_to(REPO)}")
    parser.add_argument("--out", type=Path, help="write the markdown here instead")
    return parser.parse_args(argv)


def table(reader: Path | None) -> list[str]:
    lines = ["| file | metric | ours | theirs | difference | rows equal | official scorers (ours) |",
             "|---|---|---|---|---|---|---|"]
    for path in sorted(CROSSCHECK.glob("*.jsonl")):
        lines += file_rows(path, reader)
    return lines


def file_rows(path: Path, reader: Path | None) -> list[str]:
    from disambig.cli.score_cmd import build_metrics, read_predictions
    from disambig.data import load_dataset
    from disambig.evaluation.scoring import score_predictions

    kind = "asqa" if path.name.startswith("asqa") else "ambignq"
    rows = read_predictions(path)
    examples = load_dataset(str(DATA / kind / "dev.jsonl"), split="all")
    checked = [m for m in CHECKED[kind] if reader is not None or kind != "asqa" or m not in READER_ONLY]
    extra = ["adf-rouge-l-nostem"] if kind == "asqa" else []
    result = score_predictions(rows, examples, build_metrics(checked + extra + OFFICIAL[kind], kind, reader, None))
    official = ", ".join(f"{m} {result.metrics[m]:.4f}" for m in OFFICIAL[kind])
    out = []
    for metric, key in CHECKED[kind].items():
        theirs = [r["reference"][key] for r in rows]
        ours = _ours(metric, kind, result.per_question, rows, path, reader)
        if ours is None:
            out.append(f"| {path.name} | {metric} | — | {statistics.fmean(theirs):.4f} | needs --reader | — | |")
            continue
        values, label = ours
        out.append(_row(path.name, label, values, theirs, official if metric == "adf-f1" else ""))
    if kind == "asqa":
        nostem = [q["scores"]["adf-rouge-l-nostem"] for q in result.per_question]
        out.append(_row(path.name, "adf-rouge-l-nostem", nostem, [r["reference"]["rouge_l"] for r in rows], ""))
    return out


def _ours(metric: str, kind: str, per_question: list[dict], rows: list[dict], path: Path,
          reader: Path | None) -> tuple[list[float], str] | None:
    rouge = "adf-rouge-l-nostem" if "diva" in path.name else "adf-rouge-l"
    if metric in READER_ONLY and kind == "asqa" and reader is None:
        if metric != "adf-dr":
            return None
        values = [math.sqrt(r["reference"]["adf_d_f1"] * q["scores"][rouge]) for r, q in zip(rows, per_question,
                                                                                         strict=True)]
        return values, f"adf-dr (their adf-d-f1 × our {rouge})"
    if metric == "adf-rouge-l" and "diva" in path.name:
        return [q["scores"]["adf-rouge-l"] for q in per_question], "adf-rouge-l (they used the no-stem fallback)"
    if metric == "adf-dr" and "diva" in path.name:
        values = [math.sqrt(q["scores"]["adf-d-f1"] * q["scores"][rouge]) for q in per_question]
        return values, f"adf-dr (adf-d-f1 × {rouge})"
    return [q["scores"][metric] for q in per_question], metric


def _row(name: str, metric: str, ours: list[float], theirs: list[float], official: str) -> str:
    equal = sum(abs(a - b) < 1e-9 for a, b in zip(ours, theirs, strict=True))
    mine, ref = statistics.fmean(ours), statistics.fmean(theirs)
    return f"| {name} | {metric} | {mine:.4f} | {ref:.4f} | {mine - ref:+.4f} | {equal}/{len(ours)} | {official} |"


def document(table_text: str, reader: Path | None) -> str:
    command = "python -m bench.quality.crosscheck --write-docs" + (" --reader PATH" if reader else "")
    return f"""# Cross-check: our ADF metrics against the ADF authors' own values

Produced by `{command}` from `../shared/crosscheck/` (gpt-4o-mini answers from the ADF authors' public
repository, sparse retrieval, the questions that are in the shared dev files, with the per-question values
their `src/evaluation.py` stored; see that folder's README). Each file is scored through the same code as
`disambig score`. "theirs" is the mean of their stored values, "rows equal" counts rows within 1e-9.

- The `adf-*` metrics reproduce their values row by row wherever their README says an exact match is
  possible: AmbigNQ F1 (with `nq_answer` in the answer pool) and D-F1; ASQA F1 and ROUGE-L (`rouge-score`
  `rougeL` for Vanilla, Iterative and ADF; the no-stem fallback for DIVA, whose stored values came from it).
- ASQA `adf-d-f1` runs a QA reader (they used `deepset/roberta-base-squad2`); no reader model is on this
  machine, so it reads "needs --reader", and `adf-dr` is checked from their stored D-F1 and our ROUGE-L.
- The last column gives the official scorers' values on the same answers (our implementations): AmbigQA's
  answer-set F1 and our D-F1 proxy on AmbigNQ; ASQA's STR-EM, ROUGE-L (rougeLsum) and corpus DR (with the
  D-F1 proxy, as no reader was given) on ASQA.

{table_text}"""


if __name__ == "__main__":
    raise SystemExit(main())
