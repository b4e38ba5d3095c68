"""Download the benchmark sets from their public sources on the Hugging Face hub and write them in our formats.

For users without the shared data folder. Each dataset is written under the same relative paths as the
shared copy (``data/README.md``, "Getting the data"), one file at a time through a temporary file and a
rename, so an interrupted run never leaves a half-written file behind.

Sources (``datasets.load_dataset`` unless noted):

* ``asqa`` — ``din0s/asqa``, split ``dev`` → ``asqa/dev.jsonl``.
* ``ambignq`` — ``sewon/ambig_qa``, config ``full``, split ``validation`` → ``ambignq/dev.jsonl`` (the light
  fields plus ``nq_answer`` where the source has one).
* ``wiki-slice`` — the evidence passages of ``din0s/asqa`` dev → ``corpus/wiki-slice.jsonl``.
* ``dbpedia-entity-5k`` — ``corpus.jsonl.gz`` and ``queries.jsonl.gz`` of ``BeIR/dbpedia-entity`` (read
  with the ``json`` builder: that repo's loading script is not supported by ``datasets`` 4 and later; the
  corpus is streamed) and ``BeIR/dbpedia-entity-qrels``, split ``test`` → ``beir/dbpedia-entity-5k/`` (see
  ``select_queries`` and ``sample_corpus`` for the sample).
* ``spider`` — ``xlangai/spider``, config ``spider``, split ``validation`` → ``spider/dev.json``; the SQLite
  files come from a hub dataset repo laid out like the Spider release (``database/<db_id>/<db_id>.sqlite``,
  ``huggingface_hub.hf_hub_download``) or from a local copy of that ``database`` folder.

Hub tables are columnar: a sequence of structs may come back as a dict of lists. ``records`` turns either
shape into a list of dicts, so every converter below reads one row of the hub and returns one row of ours.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from disambig.data.atomic import copy_file, write_text
from disambig.errors import ConfigurationError

ASQA_HUB = "din0s/asqa"
AMBIGNQ_HUB = "sewon/ambig_qa"
SPIDER_HUB = "xlangai/spider"
SPIDER_DB_REPO = "lklimkiewicz/Spider-Raw"
BEIR_HUB = "BeIR/dbpedia-entity"
BEIR_QRELS_HUB = "BeIR/dbpedia-entity-qrels"

BEIR_FOLDER = "beir/dbpedia-entity-5k"
BEIR_DOCS = 5000
BEIR_QUERIES = 50
BEIR_MAX_JUDGED = 4000
SQLITE_MAGIC = b"SQLite format 3\x00"

PATHS: dict[str, tuple[str, ...]] = {
    "asqa": ("asqa/dev.jsonl",),
    "ambignq": ("ambignq/dev.jsonl",),
    "wiki-slice": ("corpus/wiki-slice.jsonl",),
    "dbpedia-entity-5k": (f"{BEIR_FOLDER}/corpus.jsonl", f"{BEIR_FOLDER}/queries.jsonl",
                          f"{BEIR_FOLDER}/qrels/test.tsv"),
    "spider": ("spider/dev.json",),
}
NAMES = tuple(PATHS)

Report = Callable[[str, str], None]


@dataclass(frozen=True)
class FetchResult:
    """What one dataset's fetch did: ``status`` is ``fetched`` or ``skipped`` (already complete)."""

    name: str
    status: Literal["fetched", "skipped"]
    rows: int
    paths: tuple[Path, ...]


# ---- hub rows -> our rows -------------------------------------------------------------------------------


def records(value: Any) -> list[dict[str, Any]]:
    """A hub sequence of structs as a list of dicts, whether it came back as rows or as columns (dict of lists)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        columns = {key: list(column) for key, column in value.items()}
        lengths = {len(column) for column in columns.values()}
        if len(lengths) > 1:
            raise ConfigurationError(f"columnar struct with unequal column lengths {sorted(lengths)}: "
                                     f"{sorted(columns)}; the hub schema changed, update disambig.data.fetch")
        return [{key: column[i] for key, column in columns.items()} for i in range(lengths.pop() if lengths else 0)]
    return [dict(item) for item in value]


def asqa_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One ``din0s/asqa`` row as our ASQA row (``sample_id`` → ``id``, ``ambiguous_question`` → ``question``)."""
    return {
        "id": str(row["sample_id"]),
        "question": row["ambiguous_question"],
        "qa_pairs": [{"question": p["question"], "short_answers": list(p["short_answers"] or []),
                      "wikipage": p.get("wikipage")} for p in records(row["qa_pairs"])],
        "annotations": [{"knowledge": [{"content": k["content"], "wikipage": k.get("wikipage")}
                                       for k in records(a["knowledge"])],
                         "long_answer": a["long_answer"]} for a in records(row["annotations"])],
    }


def ambignq_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One ``sewon/ambig_qa`` row (light or full) as our AmbigNQ light row, keeping a non-empty ``nq_answer``."""
    annotations = []
    for annotation in records(row["annotations"]):
        if annotation["type"] == "singleAnswer":
            annotations.append({"type": "singleAnswer", "answer": list(annotation["answer"])})
        elif annotation["type"] == "multipleQAs":
            pairs = [{"question": p["question"], "answer": list(p["answer"])} for p in records(annotation["qaPairs"])]
            annotations.append({"type": "multipleQAs", "qaPairs": pairs})
        else:
            raise ConfigurationError(f"AmbigNQ row {row['id']!r}: unknown annotation type {annotation['type']!r}; "
                                     "expected singleAnswer or multipleQAs")
    converted = {"id": str(row["id"]), "question": row["question"], "annotations": annotations}
    nq_answer = [answer for answer in row.get("nq_answer") or [] if answer]
    if nq_answer:
        converted["nq_answer"] = nq_answer
    return converted


def wiki_passages(asqa_rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The distinct evidence passages of our ASQA rows as wiki-slice rows, in first-seen order.

    A passage's id is ``asqa-`` plus the first 16 hex digits of the SHA-256 of its title and text, so it is
    the same whatever the order or the subset of questions fetched. Unlike the shared slice (``w000000``…
    ids), this one holds only the ASQA annotators' passages (``source`` = ``asqa-knowledge``), not the
    Google search snippets the AmbigNQ annotators saw, and only for the public dev questions: AmbigNQ
    questions outside ASQA have less evidence here than in the shared slice.
    """
    passages: dict[str, dict[str, str]] = {}
    for row in asqa_rows:
        for annotation in row["annotations"]:
            for knowledge in annotation["knowledge"]:
                title, text = (knowledge.get("wikipage") or "").strip(), (knowledge["content"] or "").strip()
                if not text:
                    continue
                pid = "asqa-" + _sha256(f"{title}\n{text}")[:16]
                passages.setdefault(pid, {"id": pid, "title": title, "text": text, "source": "asqa-knowledge"})
    return list(passages.values())


def spider_row(row: Mapping[str, Any]) -> dict[str, str]:
    """One ``xlangai/spider`` row as ``{db_id, question, query}``."""
    return {"db_id": row["db_id"], "question": row["question"], "query": row["query"]}


def beir_doc(row: Mapping[str, Any]) -> dict[str, str]:
    """One BEIR corpus row as ``{_id, title, text}``."""
    return {"_id": str(row["_id"]), "title": row.get("title") or "", "text": row["text"] or ""}


def beir_qrels(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """BEIR qrels rows (``query-id``, ``corpus-id``, ``score``) as ``{query_id: {doc_id: grade}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for row in rows:
        qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    return qrels


def select_queries(qrels: Mapping[str, Mapping[str, int]], count: int = BEIR_QUERIES,
                   max_judged: int = BEIR_MAX_JUDGED) -> list[str]:
    """The fixed query set: test queries in order of the SHA-256 of their id, each taken if its judged
    documents keep the union within ``max_judged``, until ``count`` are taken (the rest of the 5,000 documents
    are unjudged distractors). A query with many judgments is skipped once the budget is nearly spent, so the
    set leans towards queries with fewer judgments."""
    chosen: list[str] = []
    judged: set[str] = set()
    for qid in sorted(qrels, key=_sha256):
        if len(chosen) == count:
            break
        if len(judged | set(qrels[qid])) <= max_judged:
            chosen.append(qid)
            judged |= set(qrels[qid])
    return chosen


def sample_corpus(docs: Iterable[Mapping[str, Any]], judged: set[str], size: int = BEIR_DOCS) -> list[dict[str, str]]:
    """Every judged document found in ``docs`` plus the unjudged ones with the smallest SHA-256 of their id,
    ``size`` in all, sorted by id: the same sample whatever order the corpus streams in."""
    kept: dict[str, dict[str, str]] = {}
    largest_first: list[tuple[int, str, dict[str, str]]] = []  # heap of (-hash, id, doc): the `size` smallest hashes
    for row in docs:
        pid = str(row["_id"])
        if pid in judged:
            kept[pid] = beir_doc(row)
            continue
        negated = -int(_sha256(pid), 16)
        if len(largest_first) < size:
            heapq.heappush(largest_first, (negated, pid, beir_doc(row)))
        elif negated > largest_first[0][0]:
            heapq.heapreplace(largest_first, (negated, pid, beir_doc(row)))
    fillers = sorted(largest_first, reverse=True)[: max(size - len(kept), 0)]
    kept.update({pid: doc for _, pid, doc in fillers})
    return [kept[pid] for pid in sorted(kept)]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---- writers (atomic: disambig.data.atomic) ---------------------------------------------------------------


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write one JSON object a line, atomically."""
    return write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


# ---- one function per dataset ---------------------------------------------------------------------------


def _load(*args: Any, **kwargs: Any) -> Any:
    import datasets

    return datasets.load_dataset(*args, **kwargs)


def fetch_asqa(out: Path, report: Report) -> FetchResult:
    rows = [asqa_row(row) for row in _load(ASQA_HUB, split="dev")]
    return FetchResult("asqa", "fetched", len(rows), (write_jsonl(out / PATHS["asqa"][0], rows),))


def fetch_ambignq(out: Path, report: Report) -> FetchResult:
    rows = [ambignq_row(row) for row in _load(AMBIGNQ_HUB, "full", split="validation")]
    return FetchResult("ambignq", "fetched", len(rows), (write_jsonl(out / PATHS["ambignq"][0], rows),))


def fetch_wiki_slice(out: Path, report: Report) -> FetchResult:
    passages = wiki_passages(asqa_row(row) for row in _load(ASQA_HUB, split="dev"))
    return FetchResult("wiki-slice", "fetched", len(passages),
                       (write_jsonl(out / PATHS["wiki-slice"][0], passages),))


def fetch_dbpedia(out: Path, report: Report) -> FetchResult:
    qrels = beir_qrels(_load(BEIR_QRELS_HUB, split="test"))
    chosen = select_queries(qrels)
    judged = {doc for qid in chosen for doc in qrels[qid]}
    report("dbpedia-entity-5k", f"{len(chosen)} queries, {len(judged)} judged documents; streaming the corpus")
    corpus = _load("json", data_files=f"hf://datasets/{BEIR_HUB}/corpus.jsonl.gz", split="train", streaming=True)
    docs = sample_corpus(_counted(corpus, report), judged)
    kept = {doc["_id"] for doc in docs}
    queries = _load("json", data_files=f"hf://datasets/{BEIR_HUB}/queries.jsonl.gz", split="train")
    texts = {str(row["_id"]): row["text"] for row in queries}
    missing = [qid for qid in chosen if qid not in texts]
    if missing:
        raise ConfigurationError(f"{BEIR_HUB} queries lack the test queries {missing[:5]}; the hub copy changed")
    lines = ["query-id\tcorpus-id\tscore\n"] + [f"{qid}\t{doc}\t{grade}\n" for qid in sorted(chosen)
                                               for doc, grade in sorted(qrels[qid].items()) if doc in kept]
    paths = [out / path for path in PATHS["dbpedia-entity-5k"]]
    write_jsonl(paths[0], docs)
    write_jsonl(paths[1], ({"_id": qid, "text": texts[qid]} for qid in sorted(chosen)))
    write_text(paths[2], "".join(lines))
    return FetchResult("dbpedia-entity-5k", "fetched", len(docs), tuple(paths))


def _counted(rows: Iterable[Any], report: Report, every: int = 250_000) -> Iterable[Any]:
    for number, row in enumerate(rows, 1):
        if number % every == 0:
            report("dbpedia-entity-5k", f"read {number:,} corpus documents")
        yield row


def fetch_spider(out: Path, report: Report, db_repo: str = SPIDER_DB_REPO, db_dir: Path | None = None) -> FetchResult:
    rows = [spider_row(row) for row in _load(SPIDER_HUB, "spider", split="validation")]
    db_ids = sorted({row["db_id"] for row in rows})
    databases = []
    for number, db_id in enumerate(db_ids, 1):
        report("spider", f"database {number}/{len(db_ids)}: {db_id}")
        source = _local_database(db_dir, db_id) if db_dir else _hub_database(db_repo, db_id)
        databases.append(copy_file(_checked_sqlite(source, db_id), out / "spider" / "database" / f"{db_id}.sqlite"))
    dev = write_text(out / PATHS["spider"][0], json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    return FetchResult("spider", "fetched", len(rows), (dev, *databases))


def _hub_database(repo: str, db_id: str) -> Path:
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    filename = f"database/{db_id}/{db_id}.sqlite"
    try:
        return Path(huggingface_hub.hf_hub_download(repo_id=repo, filename=filename, repo_type="dataset"))
    except (HfHubHTTPError, EntryNotFoundError) as exc:
        raise ConfigurationError(f"could not download {filename} from the hub dataset {repo!r} ({exc}); pass "
                                 "--spider-db-repo with a repo laid out like the Spider release, or --spider-db-dir "
                                 "with the database folder of the official Spider download") from None


def _local_database(folder: Path, db_id: str) -> Path:
    for candidate in (folder / db_id / f"{db_id}.sqlite", folder / f"{db_id}.sqlite"):
        if candidate.is_file():
            return candidate
    raise ConfigurationError(f"no {db_id}.sqlite in {str(folder)!r} (looked for {db_id}/{db_id}.sqlite and "
                             f"{db_id}.sqlite); point --spider-db-dir at the database folder of the Spider release")


def _checked_sqlite(path: Path, db_id: str) -> Path:
    with path.open("rb") as handle:
        if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            raise ConfigurationError(f"{str(path)!r} for Spider database {db_id!r} is not an SQLite file (a Git "
                                     "LFS pointer or an HTML page?); use another --spider-db-repo or --spider-db-dir")
    return path


# ---- the whole fetch ------------------------------------------------------------------------------------


def check_names(names: Sequence[str] | None) -> list[str]:
    """The datasets to fetch, in ``NAMES`` order; ``None`` or empty means all. Commas separate names too."""
    wanted = [part.strip() for name in names or () for part in name.split(",") if part.strip()]
    if names and not wanted:
        raise ConfigurationError(f"--only {', '.join(map(repr, names))} names no dataset; choose from "
                                 f"{', '.join(NAMES)} (or leave --only out to fetch them all)")
    unknown = [name for name in wanted if name not in PATHS]
    if unknown:
        raise ConfigurationError(f"unknown dataset(s) {', '.join(map(repr, unknown))}; choose from {', '.join(NAMES)}")
    return [name for name in NAMES if not wanted or name in wanted]


def check_spider_source(repo: str, folder: Path | None) -> None:
    """Refuse, before Spider's questions are downloaded, a database folder that holds no ``.sqlite`` file or a hub
    repo id the hub cannot have (the databases are fetched after the questions)."""
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise ConfigurationError(f"--spider-db-dir {str(folder)!r} is not a folder; give the database folder of "
                                     "the Spider release")
        nested = (path for path in folder.glob("*/*.sqlite") if path.stem == path.parent.name)
        if not any(folder.glob("*.sqlite")) and not any(nested):
            raise ConfigurationError(f"--spider-db-dir {str(folder)!r} holds no DB_ID.sqlite or DB_ID/DB_ID.sqlite "
                                     "file; give the database folder of the Spider release")
        return
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        raise ConfigurationError(f"--spider-db-repo {repo!r} is not a hub repo id ({exc}); give OWNER/NAME, e.g. "
                                 f"{SPIDER_DB_REPO}") from None


def is_complete(name: str, out: Path) -> bool:
    """Whether every file of ``name`` is in ``out`` (for Spider: also each database ``dev.json`` names)."""
    if not all((out / path).is_file() for path in PATHS[name]):
        return False
    if name != "spider":
        return True
    try:
        db_ids = {row["db_id"] for row in json.loads((out / PATHS["spider"][0]).read_text(encoding="utf-8"))}
    except (OSError, ValueError, TypeError, KeyError):
        return False
    return all((out / "spider" / "database" / f"{db_id}.sqlite").is_file() for db_id in db_ids)


def fetch(out: Path, names: Sequence[str] | None = None, *, force: bool = False, spider_db_repo: str = SPIDER_DB_REPO,
          spider_db_dir: Path | None = None, report: Report | None = None) -> list[FetchResult]:
    """Download and write the named datasets (all by default) under ``out``; a complete one is kept unless ``force``.

    Args:
        out: the data root to write into (``asqa/dev.jsonl``, ``spider/database/…`` and so on below it).
        names: datasets from ``NAMES``; ``None`` fetches all of them.
        force: fetch again even if every file of a dataset is already there.
        spider_db_repo: hub dataset repo holding ``database/<db_id>/<db_id>.sqlite``.
        spider_db_dir: a local Spider ``database`` folder to copy from instead of the hub repo.
        report: called with ``(dataset, message)`` as the fetch goes on.
    """
    chosen = check_names(names)
    if "spider" in chosen:
        check_spider_source(spider_db_repo, spider_db_dir)
    report = report or (lambda name, message: None)
    fetchers: dict[str, Callable[[Path, Report], FetchResult]] = {
        "asqa": fetch_asqa, "ambignq": fetch_ambignq, "wiki-slice": fetch_wiki_slice,
        "dbpedia-entity-5k": fetch_dbpedia,
        "spider": partial(fetch_spider, db_repo=spider_db_repo, db_dir=Path(spider_db_dir) if spider_db_dir else None),
    }
    results = []
    for name in chosen:
        if not force and is_complete(name, out):
            report(name, "already complete (use --force to fetch again)")
            results.append(FetchResult(name, "skipped", 0, tuple(out / path for path in PATHS[name])))
            continue
        report(name, "downloading")
        try:
            results.append(fetchers[name](out, report))
        except (ConnectionError, TimeoutError) as exc:
            raise ConfigurationError(f"{name}: could not reach the Hugging Face hub ({exc}); fetching needs network "
                                     "access (and HF_HUB_OFFLINE/HF_DATASETS_OFFLINE unset)") from None
        report(name, f"wrote {results[-1].rows:,} rows")
    return results
