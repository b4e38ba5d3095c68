"""Where a run's zero-scored questions fail: the answer missing from the corpus, from the passages the program read,
or from its short answers: no LM call.

    python -m bench.quality.answerable --runs RUN [RUN ...] [--first N] [--results docs/RESULTS.md --section NAME]

For each stored run (an AmbigNQ-format dataset: gold answers per reading) and each of its first N questions that
scored 0 on the primary metric, a gold answer (any annotator's, any reading's; SQuAD-normalised, as AmbigQA F1
matches) is looked for as whole words in: every passage of the run's corpus, the passages the program returned, and
its long answer. A question whose gold answers appear in no passage of the corpus cannot be answered from it by any
program, whatever the disambiguation; one whose answer is in the returned passages but not in the short answers was
lost at extraction. The whole-word test can also find a short answer (a number, a year) by chance, so "in the
corpus" is an upper bound on what the corpus holds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness import Script
from bench.harness.runs import by_id, first_ids, params, questions, raw_rows, run_label, score_rows

SCRIPT = Script.of(__file__)
STAGES = ("nowhere in the corpus", "in the corpus, not in the passages read", "in the passages read, not in the long "
          "answer", "in the long answer, not in the short answers")


def padded(text: str) -> str:
    """``text`` SQuAD-normalised between spaces, so a normalised answer is found as whole words."""
    from disambig.data.text import normalize

    return f" {normalize(text)} "


def gold_answers(example: object) -> list[str]:
    """Every annotator's answers of every reading, normalised, without empties."""
    from disambig.metrics.ambigqa import example_annotations

    found = {padded(a) for annotation in example_annotations(example) for cluster in annotation for a in cluster}
    return sorted(a for a in found if a.strip())


def stage(golds: list[str], corpus: str, passages: str, long_answer: str) -> str:
    """The first place, in the order a program works, where none of the gold answers is found."""
    for text, name in ((corpus, STAGES[0]), (passages, STAGES[1]), (long_answer, STAGES[2])):
        if not any(g in text for g in golds):
            return name
    return STAGES[3]


def measure(run: Path, first: int | None, corpus_text: dict[str, str]) -> dict:
    """One run's row: its zero-scored questions (scored as the tables score them) counted by the stage where the
    answer is lost; a failed question, which has no answer to read, is counted apart."""
    from disambig.data.corpus import load_corpus
    from disambig.data.loaders import default_corpus
    from disambig.metrics.defaults import PRIMARY_METRICS

    run_params = params(run)
    dataset = run_params["dataset"]
    examples, kind = questions(dataset)
    primary = PRIMARY_METRICS[kind]
    keep = first_ids(run_params, first) if first else None
    rows = [r for r in raw_rows(run) if keep is None or str(r["id"]) in keep]
    scores = by_id(score_rows(rows, dataset).per_question)
    corpus = str(run_params.get("retriever", "")).partition(":")[2] or default_corpus(dataset)
    if corpus not in corpus_text:
        corpus_text[corpus] = padded(" \n ".join(p["text"] for p in load_corpus(corpus)))
    gold = {str(e.id): e for e in examples}
    counts = dict.fromkeys(STAGES, 0)
    zero = failed = 0
    for row in rows:
        if scores[str(row["id"])].get(primary, 0.0) > 0:
            continue
        zero += 1
        prediction = row.get("prediction")
        if not prediction:
            failed += 1
            continue
        passages = padded(" \n ".join(p.get("text", "") for p in prediction.get("passages") or []))
        counts[stage(gold_answers(gold[str(row["id"])]), corpus_text[corpus], passages,
                     padded(prediction.get("long_answer") or ""))] += 1
    return {"run": run_label(run), "questions": len(rows), "primary": primary, "zero": zero, "failed": failed,
            "counts": counts, "corpus": corpus}


def table(rows: list[dict]) -> str:
    head = ("| run | questions | primary metric | scored 0 | failed | " + " | ".join(STAGES) + " |\n"
            "| --- | ---: | --- | ---: | ---: | " + " | ".join("---:" for _ in STAGES) + " |")
    lines = [f"| {r['run']} | {r['questions']} | {r['primary']} | {r['zero']} | {r['failed']} | "
             + " | ".join(str(r["counts"][s]) for s in STAGES) + " |" for r in rows]
    return "\n".join([head, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="run folders of an AmbigNQ-format dataset")
    parser.add_argument("--first", type=int, default=None, help="only each run's first N questions of the split")
    SCRIPT.add_section_options(parser)
    args = parser.parse_args()
    corpus_text: dict[str, str] = {}
    rows = [measure(run, args.first, corpus_text) for run in args.runs]
    command = SCRIPT.command(["--runs", *map(str, args.runs), *(["--first", str(args.first)] if args.first else [])])
    corpora = ", ".join(sorted({r["corpus"] for r in rows}))
    body = (f"Generated by `{command}` from the stored answers (no LM call); corpus {corpora}. Each zero-scored "
            f"question is counted at the first place none of its gold answers is found (whole words, "
            f"SQuAD-normalised).\n\n{table(rows)}")
    SCRIPT.section(args.results, body, args.section)


if __name__ == "__main__":
    main()
