"""AMD without its reflective feedback, from the expansions already made (no LM call).

    python bench/amd_reflection.py --dataset dbpedia-entity-5k --out bench/results/amd/dbpedia-amd-unreflected.json
    python bench/amd_reflection.py --dataset runs/asqa-retrieval --split dev \
        --out bench/results/amd/asqa-amd-unreflected.json

Every AMD expansion in the on-disk cache keeps the dialogic agent's raw answers beside the refined ones that
survived reflection (``notes.answers``). This searches each judged query with the same sub-questions and every
non-empty raw answer kept as written — what ``reflect=false`` would search with, given the same sampled answers
(a fresh ``reflect=false`` run would sample new ones) — through the same three compositions (``amd-sparse``,
``amd-dense``, ``amd-rrf``), and writes rows in `disambig eval-retrieval --out`'s format with ``variant`` set, so
``bench/amd_table.py`` lists them beside the reflected rows. A query whose expansion is not cached is an error: run
`disambig eval-retrieval -r amd-sparse` on the same dataset and LM first.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

KINDS = ("amd-sparse", "amd-dense", "amd-rrf")
VARIANT = "answers unreflected"


def unreflected(expansion: Any) -> Any:
    """The expansion with every non-empty raw answer kept (texts and per-sub-question fusion queries)."""
    from dataclasses import replace

    from disambig.programs.expansion import joined

    if "answers" not in expansion.notes:
        raise SystemExit(f"the cached expansion of {expansion.query!r} records no raw answers (made by older code); "
                         "expand the queries again with `disambig eval-retrieval -r amd-sparse`")
    answers = [str(a or "").strip() for a in expansion.notes["answers"]]
    if len(answers) != len(expansion.sub_questions):
        raise SystemExit(f"the cached expansion of {expansion.query!r} has {len(answers)} answers for "
                         f"{len(expansion.sub_questions)} sub-questions")
    return replace(expansion, texts=tuple(a for a in answers if a),
                   fusion_queries=tuple(joined(expansion.query, q, a)
                                        for q, a in zip(expansion.sub_questions, answers, strict=True)))


class CachedOnly:
    """A retriever searching with the cached expansions of ``inner``, changed by ``change``; never calls the LM."""

    def __init__(self, inner: Any, change: Any) -> None:
        self.inner, self.change = inner, change
        self.name, self.size = inner.name, inner.size
        self.seen: dict[str, Any] = {}

    def batch_search(self, queries: list[str], k: int) -> list[list[Any]]:
        expansions = []
        for query in queries:
            made = self.inner.cached(query)
            if made is None:
                raise SystemExit(f"no cached AMD expansion of {query!r} for this LM; run `disambig eval-retrieval "
                                 f"-r amd-sparse` on this dataset first")
            self.seen[made.query] = made
            expansions.append(self.change(made))
        return self.inner.search_expanded(expansions, k)

    def reflection(self) -> dict[str, int]:
        """Over the distinct queries searched: how many lost their sub-questions (an unparsable questioning reply),
        how many answers the dialogic agent wrote, and how many of them reflection kept."""
        notes = [e.notes for e in self.seen.values()]
        failed = sum("socratic" in (n.get("failures") or []) for n in notes)
        return {"queries": len(notes), "questioning_failed": failed,
                "answers": sum(sum(1 for a in n.get("answers") or [] if str(a or "").strip()) for n in notes),
                "kept": sum(sum(bool(k) for k in n.get("kept") or []) for n in notes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="dbpedia-entity-5k")
    parser.add_argument("--split", default="test")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from disambig.data.loaders import default_corpus
    from disambig.evaluation.code_version import code_stamp
    from disambig.evaluation.retrieval import evaluate_retriever
    from disambig.evaluation.session import lm_model
    from disambig.retrieval import build_retriever
    from disambig.retrieval.embedder import Embedder
    from disambig.settings import load_settings

    settings = load_settings()
    corpus = default_corpus(args.dataset)
    embedder = Embedder()
    rows = []
    for kind in KINDS:
        inner = build_retriever(kind, corpus=corpus, settings=settings, embedder=embedder, auto_build=False)
        searcher = CachedOnly(inner, unreflected)
        report = evaluate_retriever(searcher, args.dataset, args.split)
        cost = {**inner.usage.per_query(report.queries), "from_cache": min(inner.usage.cached, report.queries)}
        rows.append(report.to_dict() | {"split": args.split, "corpus": corpus, "code": code_stamp(),
                                        "expansion": cost, "lm": lm_model(settings.lm), "variant": VARIANT,
                                        "temperature": inner.expander.temperature,
                                        "reflection": searcher.reflection()})
        print(f"{kind} ({VARIANT}): {report.metrics}", flush=True)
    args.out.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(f"scores: {args.out}")


if __name__ == "__main__":
    main()
