"""``disambig data``: get the benchmark data (``fetch`` downloads it from its public sources on the hub) and build
benchmark folders from it (``spiderqa``, ``asqa-retrieval``)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from disambig.cli.errors import user_errors
from disambig.paths import expanded
from disambig.settings import load_settings

app = typer.Typer(no_args_is_help=True,
                  help="Benchmark data: download it from its public sources, build benchmarks from it.")

# Kept literal so that `import disambig.cli` stays light; a test checks them against disambig.data.fetch.
DATASET_NAMES = ("asqa", "ambignq", "wiki-slice", "dbpedia-entity-5k", "spider")
SPIDER_DB_REPO = "lklimkiewicz/Spider-Raw"


@app.command("fetch")
@user_errors
def fetch(
    out: Path | None = typer.Option(
        None, "--out", file_okay=False,
        help="Folder to write into (default: the 'data' folder in the cache dir, DISAMBIG_CACHE_DIR, which the "
             "loaders look in when no other data root is found)."),
    only: list[str] | None = typer.Option(
        None, "--only", help=f"Fetch only this dataset; repeat or separate by commas: {', '.join(DATASET_NAMES)}."),
    force: bool = typer.Option(False, "--force", help="Fetch again a dataset whose files are already all there."),
    spider_db_repo: str = typer.Option(
        SPIDER_DB_REPO, "--spider-db-repo",
        help="Hub dataset repo with Spider's SQLite files at database/<db_id>/<db_id>.sqlite (the default is a "
             "third-party copy of the Spider release)."),
    spider_db_dir: Path | None = typer.Option(
        None, "--spider-db-dir", file_okay=False,
        help="Copy the Spider databases from this local folder (the 'database' folder of the official Spider "
             "download) instead of the hub repo."),
) -> None:
    """Download ASQA, AmbigNQ, the wiki slice, DBpedia-Entity 5k and Spider from the Hugging Face hub.

    Needs network and the `datasets` library. Writes the formats of data/README.md under OUT (asqa/dev.jsonl,
    ambignq/dev.jsonl, corpus/wiki-slice.jsonl, beir/dbpedia-entity-5k/, spider/); a dataset whose files are
    all there is skipped unless --force. The fetched files are the full public dev splits, so they are not the
    same as the shared copies (see "Getting the data" in data/README.md).
    """
    from disambig.cli.paths import check_output_folder
    from disambig.data.fetch import fetch as run_fetch
    from disambig.data.root import cache_root

    target = expanded(out or cache_root())
    check_output_folder(target, "--out")  # before anything is downloaded
    console = Console()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as progress:
        tasks: dict[str, int] = {}

        def report(name: str, message: str) -> None:
            if name not in tasks:
                tasks[name] = progress.add_task(name, total=None)
            progress.update(tasks[name], description=f"{name}: {message}")

        results = run_fetch(target, only, force=force, spider_db_repo=spider_db_repo, spider_db_dir=spider_db_dir,
                            report=report)
        for task in tasks.values():
            progress.update(task, total=1, completed=1)
    table = Table(title=f"Data in {target}")
    for column in ("dataset", "status", "rows", "first file"):
        table.add_column(column, justify="right" if column == "rows" else "left")
    for result in results:
        rows = f"{result.rows:,}" if result.status == "fetched" else "-"
        table.add_row(result.name, result.status, rows, str(result.paths[0]))
    console.print(table)


@app.command("spiderqa")
@user_errors
def spiderqa(
    questions: Path | None = typer.Option(
        None, "--questions", dir_okay=False,
        help="Spider-format questions (JSON list or JSONL of {db_id, question, query}); default: spider/dev.json "
             "under the data root."),
    databases: Path | None = typer.Option(
        None, "--databases", file_okay=False,
        help="Folder of <db_id>.sqlite files; default: spider/database under the data root."),
    out: Path | None = typer.Option(
        None, "--out", file_okay=False, help="Benchmark folder to write (default: CACHE_DIR/spiderqa)."),
    lm: str | None = typer.Option(
        None, "--lm", help="Let this LM write one template per table from its schema (validated; the deterministic "
                           "template is the fallback). Default: deterministic templates, no LM."),
    rows_per_chunk: int = typer.Option(1, "--rows-per-chunk", min=1, help="Rows of one table packed per chunk."),
    ext: bool = typer.Option(False, "--ext", help="Also write questions-ext.jsonl: set-returning questions turned "
                                                  "into 'how many' questions (AGGBench style; report apart)."),
    max_rows_per_question: float | None = typer.Option(
        None, "--max-rows-per-question", help="Drop databases whose rows per kept question exceed this."),
    max_chunks: int | None = typer.Option(
        None, "--max-chunks", min=1, help="Drop databases rendered as more chunks than this (a cost cap: a "
                                          "question's scope is its whole database)."),
) -> None:
    """Build SpiderQA: Spider databases rendered as text chunks, scalar COUNT questions with gold counts and gold
    evidence chunks; prints what was kept and what was dropped, and why (all of it also in manifest.json)."""
    from disambig.data.root import find_named
    from disambig.data.spiderqa import build_spiderqa

    spider = find_named("spider") if questions is None or databases is None else None
    target = expanded(out or Path(load_settings().cache_dir) / "spiderqa")
    writer = _template_writer(lm) if lm is not None else None  # an empty --lm is refused, not "no LM"
    report = build_spiderqa(expanded(questions or spider / "dev.json"),
                            expanded(databases or spider / "database"), target, write_template=writer,
                            rows_per_chunk=rows_per_chunk, ext=ext, max_rows_per_question=max_rows_per_question,
                            max_chunks=max_chunks)
    console = Console()
    console.print(f"SpiderQA in {target}: {report.questions} questions over {len(report.databases)} databases, "
                  f"{report.chunks:,} chunks (of {report.source_questions} questions read)"
                  + (f"; extension: {report.questions_ext} questions (questions-ext.jsonl)" if ext else ""))
    table = Table(title="Dropped")
    table.add_column("reason")
    table.add_column("questions", justify="right")
    for reason, count in sorted(report.dropped.items(), key=lambda item: -item[1]):
        table.add_row(reason, str(count))
    console.print(table)
    llm = sum(t["source"] == "llm" for t in report.templates.values())
    console.print(f"templates: {llm} written by the LM, {len(report.templates) - llm} deterministic")
    console.print(f"evaluate with: disambig eval dfa --dataset {target}")


@app.command("asqa-retrieval")
@user_errors
def asqa_retrieval(
    out: Path | None = typer.Option(
        None, "--out", file_okay=False,
        help="Folder to write (default: CACHE_DIR/asqa-retrieval); a folder this command wrote is replaced."),
    dataset: str = typer.Option("asqa", "--dataset", "-d", help="asqa or an ASQA-format JSONL file."),
    corpus: str = typer.Option(
        "wiki-slice", "--corpus", "-c",
        help="Corpus the questions are judged on and searched in: wiki-slice or a JSONL file of {id, title, text}."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="Questions per split."),
    splits: list[str] = typer.Option(
        ["train", "dev"], "--splits",
        help="Splits to write (by question hash): train, dev, test; repeat or separate by commas."),
) -> None:
    """Build a BEIR-style retrieval benchmark of ASQA questions over a corpus, for `disambig eval-retrieval`.

    A question's relevant passages are the corpus passages whose text is one of its annotators' evidence passages
    (annotations[].knowledge[].content, whitespace-normalised; grade 1). Each split takes its first N questions in
    file order that have one; questions without are skipped and counted, as are evidence texts the corpus lacks.
    Writes queries.jsonl, qrels/SPLIT.tsv and manifest.json (the counts, the corpus it names, the command); the
    corpus is not copied, so eval-retrieval and compile search it by name with its existing indexes.
    """
    from disambig.data.asqa_retrieval import build_asqa_retrieval, parse_splits

    names = parse_splits(splits)
    target = expanded(out or Path(load_settings().cache_dir) / "asqa-retrieval")
    command = (f"disambig data asqa-retrieval --out {target} --dataset {dataset} --corpus {corpus} --limit {limit} "
               f"--splits {','.join(names)}")
    manifest = build_asqa_retrieval(dataset, corpus, target, names, limit, command)
    console = Console()
    table = Table(title=f"{dataset} retrieval benchmark over {manifest['corpus']} in {target}")
    columns = {"taken": "questions", "skipped_no_evidence": "skipped: no evidence",
               "skipped_evidence_not_in_corpus": "skipped: evidence not in corpus",
               "evidence_not_in_corpus": "evidence texts not in corpus", "mean_relevant": "relevant/question"}
    table.add_column("split")
    for title in columns.values():
        table.add_column(title, justify="right")
    for name, counts in manifest["per_split"].items():
        table.add_row(name, *(str(counts[key]) for key in columns))
    console.print(table)
    console.print(f"evaluate with: disambig eval-retrieval --dataset {target} --split {names[-1]}")


def _template_writer(spec: str):
    """``f(TableSchema) -> template`` asking ``spec`` (the T0 step of the DFA spec) under its own dspy context."""
    import dspy

    from disambig.lm.runtime import build_lm
    from disambig.signatures.dfa import WriteRowTemplate

    lm = build_lm(load_settings(lm=spec))
    predictor = dspy.Predict(WriteRowTemplate)

    def write(schema) -> str:
        columns = [f"{c.placeholder}: {c.name} ({c.type or 'any'}{', primary key' if c.primary_key else ''})"
                   for c in schema.columns]
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return predictor(database=schema.db_id, table=schema.name, columns=columns,
                             foreign_keys=list(schema.foreign_keys),
                             sample_rows=[repr(tuple(r)) for r in schema.sample_rows]).template

    return write
