"""Question sets as ``dspy.Example``s with the same fields everywhere.

Fields: ``id``, ``question``, ``interpretations`` (list of ``{question, answers}``), ``long_answers``
(ASQA annotators' long answers, else ``[]``), ``evidence`` (ASQA knowledge passages as ``{title, text}``,
else ``[]``) and ``dataset``. Only ``question`` is an input.

AmbigNQ rows carry several annotations: the first ``multipleQAs`` annotation gives the interpretations;
when every annotator saw a single answer, the union of their answers is one interpretation whose
question is the question itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from disambig.data.corpus import load_beir_qrels, load_beir_queries, named_corpus, qrels_splits
from disambig.data.jsonl import MalformedRowError, read_jsonl, require
from disambig.data.root import CORPORA, QUESTION_SETS, find_named, resolve
from disambig.data.spiderqa import aggregation_example
from disambig.data.splits import SPLITS, in_split
from disambig.errors import ConfigurationError
from disambig.paths import expanded

DATASETS = tuple(QUESTION_SETS)


def load_dataset(name: str, split: str = "all", limit: int | None = None) -> list[dspy.Example]:
    """Load a named set (``asqa``, ``ambignq``; see ``disambig.data.root``), a JSONL file, a BEIR folder, or
    ``hf:NAME``.

    Args:
        name: dataset name (found under the data root), file path (ASQA or AmbigNQ rows), a BEIR folder or named
            BEIR corpus (``dbpedia-entity-5k``; its judged queries, see ``judged_splits`` and ``beir_examples``), or
            ``hf:owner/name`` (needs network; rows in either format).
        split: ``train``, ``dev``, ``test`` (by question hash, see ``disambig.data.splits``) or ``all``.
        limit: keep the first ``limit`` questions of the split.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit={limit} must be at least 1")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    rows = _rows(name, split)
    examples = [ex for ex in rows if in_split(ex.question, split)]
    return examples[:limit] if limit else examples


def _rows(name: str, split: str = "all") -> list[dspy.Example]:
    if name.startswith("hf:"):
        return _from_hub(name[3:])
    if beir_folder(name) is not None:
        by_id: dict[str, dspy.Example] = {}
        for judged in judged_splits(name, split):
            for example in beir_examples(name, judged):
                by_id.setdefault(example.id, example)  # a query judged in two files is taken once
        return list(by_id.values())
    path = question_file(resolve(name, QUESTION_SETS, "dataset", "a JSONL file, a BEIR folder or hf:NAME"))
    label = name if name in QUESTION_SETS else path.stem
    return [aggregation_example(row, path.parent, f"{path}:{number}", label)
            if row_format(row, f"{path}:{number}") == "aggregation" else to_example(row, f"{path}:{number}", label)
            for number, row in read_jsonl(path)]


def beir_folder(name: str) -> Path | None:
    """The BEIR folder ``name`` is (a named corpus or a path holding ``queries.jsonl`` and ``qrels/``), else None."""
    if name in QUESTION_SETS or name.startswith("hf:"):
        return None
    path = find_named(name) if name in CORPORA else expanded(name)
    return path if (path / "queries.jsonl").is_file() and (path / "qrels").is_dir() else None


def judged_splits(name: str, split: str) -> list[str]:
    """The qrels files (``qrels/NAME.tsv``) that judge a BEIR folder's ``split`` questions: the split's own when the
    folder has one (``disambig data asqa-retrieval`` writes one per split), every file for ``all``, else ``test``
    (dbpedia-entity-5k judges all its queries there; ``load_dataset`` then splits them by question hash)."""
    judged = qrels_splits(name)
    if split in judged:
        return [split]
    return judged if split == "all" and judged else ["test"]


def default_corpus(dataset: str) -> str:
    """The corpus a run on ``dataset`` searches unless told otherwise (``--corpus``).

    A BEIR folder with its own ``corpus.jsonl`` (dbpedia-entity-5k) searches itself; one without names its corpus
    in ``manifest.json`` (``disambig data asqa-retrieval`` writes ``"corpus": "wiki-slice"``), so the indexes
    already built for that corpus are used (a prebuilt index such as ``wikipedia-dpr`` too); any other dataset
    searches ``wiki-slice``.

    Raises:
        ConfigurationError: a BEIR folder with neither ``corpus.jsonl`` nor a manifest naming a corpus.
    """
    folder = beir_folder(dataset)
    if folder is None:
        return "wiki-slice"
    if (folder / "corpus.jsonl").is_file():
        return dataset
    named = named_corpus(folder)
    if named is None:
        raise ConfigurationError(f"BEIR folder {str(folder)!r} has no corpus.jsonl and no manifest.json naming the "
                                 'corpus its queries are judged on; add one of them (a manifest.json of {"corpus": '
                                 '"wiki-slice"}), or give eval/compile a --corpus')
    from disambig.retrieval.prebuilt import corpus_name

    named = corpus_name(named)  # a prebuilt index (``wikipedia-dpr``, ``prebuilt:NAME``) is a name, not a file
    keep = named in CORPORA or named.startswith("prebuilt:") or Path(named).is_absolute()
    return named if keep else str(folder / named)


def beir_examples(name: str, split: str = "test", limit: int | None = None) -> list[dspy.Example]:
    """The queries judged in a BEIR folder's ``qrels/SPLIT.tsv`` as examples: ``id``, ``question`` (the input),
    ``qrels`` (``{doc_id: grade}``) and ``dataset``; the retrieval metrics (``ndcg@10``, ``recall@100``) read
    ``qrels``."""
    qrels = load_beir_qrels(name, split)
    queries = [(qid, text) for qid, text in load_beir_queries(name).items() if qid in qrels][:limit]
    label = name if name in CORPORA else Path(name).name
    return [dspy.Example(id=qid, question=text, qrels=qrels[qid], dataset=label).with_inputs("question")
            for qid, text in queries]


def question_file(path: Path) -> Path:
    """The questions of a benchmark folder (``disambig data spiderqa`` writes ``questions.jsonl``), else ``path``.

    Raises:
        ConfigurationError: a folder without ``questions.jsonl``.
    """
    if not path.is_dir():
        return path
    if not (path / "questions.jsonl").is_file():
        raise ConfigurationError(f"dataset folder {str(path)!r} has no questions.jsonl; give a JSONL file of "
                                 "questions, a BEIR folder, or a folder `disambig data spiderqa` built")
    return path / "questions.jsonl"


def _from_hub(hub_name: str) -> list[dspy.Example]:
    import datasets

    table = datasets.load_dataset(hub_name, split="train")
    return [to_example(dict(row), f"{hub_name}[{i}]", hub_name) for i, row in enumerate(table)]


def to_example(row: dict[str, Any], where: str, dataset: str) -> dspy.Example:
    """One row of ASQA (``qa_pairs``) or AmbigNQ (``annotations``) format as the common example."""
    require(row, ("id", "question"), where)
    try:
        interpretations, long_answers, evidence, gold = _fields(row, where)
    except (KeyError, TypeError, AttributeError) as exc:
        raise MalformedRowError(f"{where}: unexpected structure ({type(exc).__name__}: {exc})") from None
    if not interpretations:
        raise MalformedRowError(f"{where}: no interpretations with answers")
    return dspy.Example(
        id=str(row["id"]), question=row["question"], interpretations=interpretations,
        long_answers=long_answers, evidence=evidence, dataset=dataset, **gold,
    ).with_inputs("question")


def _fields(row: dict[str, Any], where: str) -> tuple[list[dict], list[str], list[dict], dict[str, Any]]:
    """Interpretations, long answers, evidence, and the full gold the official scorers read:

    ``answer_sets_by_annotator`` (per annotator, its answer sets in order: a singleAnswer annotation is one set,
    a multipleQAs annotation one set per qaPair; ASQA: one "annotator" whose sets are the qa_pairs' short
    answers), ``nq_answer`` (AmbigNQ's original Natural Questions answer, ``[]`` where absent) and
    ``relevant_titles`` (Wikipedia pages of the gold: ASQA ``wikipages``, qa_pairs and knowledge pages;
    AmbigNQ ``viewed_doc_titles`` and ``nq_doc_title`` when the row has them).
    """
    if "qa_pairs" in row:
        interpretations = [{"question": p["question"], "answers": list(p["short_answers"])} for p in row["qa_pairs"]]
        long_answers = [a["long_answer"].strip() for a in row.get("annotations", []) if a.get("long_answer")]
        evidence = [{"title": k.get("wikipage") or "", "text": k["content"]}
                    for a in row.get("annotations", []) for k in a.get("knowledge", [])]
        sets = [[[str(a) for a in p["short_answers"]] for p in row["qa_pairs"]]]
        titles = [w.get("title", "") if isinstance(w, dict) else w for w in row.get("wikipages") or []]
        titles += [p.get("wikipage") for p in row["qa_pairs"]] + [e["title"] for e in evidence]
    elif "annotations" in row:
        interpretations, long_answers, evidence = ambignq_interpretations(row, where), [], []
        sets = [[[str(a) for a in a_["answer"]]] if a_.get("type") == "singleAnswer"
                else [[str(a) for a in p["answer"]] for p in a_["qaPairs"]] for a_ in row["annotations"]]
        titles = [*(row.get("viewed_doc_titles") or []), row.get("nq_doc_title")]
    else:
        raise MalformedRowError(f"{where}: neither 'qa_pairs' (ASQA) nor 'annotations' (AmbigNQ)")
    gold = {"answer_sets_by_annotator": sets, "nq_answer": [str(a) for a in row.get("nq_answer") or []],
            "relevant_titles": list(dict.fromkeys(str(t).strip() for t in titles if t and str(t).strip()))}
    return interpretations, long_answers, evidence, gold


def ambignq_interpretations(row: dict[str, Any], where: str) -> list[dict[str, Any]]:
    annotations = row["annotations"]
    for annotation in annotations:
        if annotation.get("type") == "multipleQAs":
            return [{"question": p["question"], "answers": list(p["answer"])} for p in annotation["qaPairs"]]
    answers: list[str] = []
    for annotation in annotations:
        if annotation.get("type") != "singleAnswer":
            raise MalformedRowError(f"{where}: unknown annotation type {annotation.get('type')!r}")
        answers.extend(a for a in annotation["answer"] if a not in answers)
    return [{"question": row["question"], "answers": answers}] if answers else []


def dataset_format(name: str) -> str:
    """``asqa``, ``ambignq`` or ``aggregation``: the row format of a named set, a JSONL file or a benchmark folder,
    told by its first row; ``beir`` for a BEIR folder.

    A hub set (``hf:NAME``) is not read here and gives ``""``.

    Raises:
        MalformedRowError: the first row is in neither format.
    """
    if name in QUESTION_SETS:
        return name
    if name.startswith("hf:"):
        return ""
    if beir_folder(name) is not None:
        return "beir"
    path = question_file(resolve(name, QUESTION_SETS, "dataset", "a JSONL file, a BEIR folder or hf:NAME"))
    for number, row in read_jsonl(path):
        return row_format(row, f"{path}:{number}")
    raise MalformedRowError(f"{path}: no rows")


def aggregation_corpus(name: str) -> str:
    """The chunk corpus (a JSONL path) the questions of an aggregation dataset count over: a folder ``disambig data
    spiderqa`` built (``questions.jsonl`` + ``corpus.jsonl``) or its questions file.

    Raises:
        ConfigurationError: the dataset is in another format, or its questions name several corpora.
    """
    if dataset_format(name) != "aggregation":
        raise ConfigurationError(f"dataset {name!r} holds no count questions over a chunk corpus (the aggregation "
                                 "format); pass a folder built by `disambig data spiderqa`")
    corpora = sorted({str(example.corpus) for example in _rows(name)})
    if len(corpora) != 1:
        raise ConfigurationError(f"dataset {name!r} counts over {len(corpora)} corpora ({', '.join(corpora)}); "
                                 "pass a dataset whose questions share one")
    return corpora[0]


def row_format(row: dict[str, Any], where: str) -> str:
    """``asqa`` for a row with ``qa_pairs``, ``ambignq`` for one with ``annotations``, ``aggregation`` for one with
    ``gold_count`` (count questions over a chunk corpus, e.g. SpiderQA)."""
    if "gold_count" in row:
        return "aggregation"
    if "qa_pairs" in row:
        return "asqa"
    if "annotations" in row:
        return "ambignq"
    raise MalformedRowError(f"{where}: neither 'qa_pairs' (ASQA) nor 'annotations' (AmbigNQ)")
