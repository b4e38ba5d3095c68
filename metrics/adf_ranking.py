"""nDCG@k and Recall@k over passage titles: the ADF authors' versions and a corrected nDCG.

Relevance is binary: a passage is relevant when its title (stripped) is in the example's
``relevant_titles`` (ASQA: every qa_pair's and knowledge passage's Wikipedia page; AmbigNQ: the pages the
annotators viewed, when the data carries them).

    adf-ndcg@k   DCG = sum_{i<=k} rel_i / log2(i+1) with rel_i = [title_i in Rel] for *every* passage, so two
                 passages of one relevant article are both credited; IDCG = sum_{i<=min(k,|Rel|)} 1/log2(i+1).
                 nDCG = DCG / IDCG (0 if Rel is empty). It can exceed 1 (the authors' runs reach 2.95).
    ndcg@k       the same with each relevant title credited at its first rank only, so 0 <= nDCG <= 1 (what
                 trec_eval's ndcg_cut_k gives for binary relevance over de-duplicated titles).
    adf-recall@k |{titles of the top k} n Rel| / |Rel| (0 if Rel is empty).
"""

from __future__ import annotations

import math
from typing import Any


def passage_titles(pred: Any) -> list[str]:
    """Titles of the prediction's passages in rank order (a string passage has no title)."""
    titles = []
    for p in getattr(pred, "passages", []) or []:
        title = p.get("title") if isinstance(p, dict) else getattr(p, "title", "")
        titles.append(str(title or "").strip())
    return titles


def _ideal(k: int, relevant: set[str]) -> float:
    return sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))


def adf_ndcg_at_k(titles: list[str], relevant: set[str], k: int) -> float:
    """The authors' nDCG@k: every relevant-titled passage counts, so repeated titles can push it above 1."""
    if not relevant:
        return 0.0
    dcg = sum(1 / math.log2(i + 2) for i, t in enumerate(titles[:k]) if t in relevant)
    return dcg / _ideal(k, relevant)


def ndcg_at_k(titles: list[str], relevant: set[str], k: int) -> float:
    """nDCG@k with each relevant title credited once, at its first rank (bounded by 1)."""
    if not relevant:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for i, title in enumerate(titles[:k]):
        if title in relevant and title not in seen:
            seen.add(title)
            dcg += 1 / math.log2(i + 2)
    return dcg / _ideal(k, relevant)


def adf_recall_at_k(titles: list[str], relevant: set[str], k: int) -> float:
    """Share of the relevant titles among the titles of the top k passages."""
    return len(set(titles[:k]) & relevant) / len(relevant) if relevant else 0.0


def relevant_titles(example: Any) -> set[str]:
    return {str(t).strip() for t in getattr(example, "relevant_titles", []) or [] if str(t).strip()}
