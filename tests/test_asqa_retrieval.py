"""``disambig data asqa-retrieval``: ASQA questions judged by their evidence passages over a named corpus, and the
folder read back by ``load_dataset``, ``default_corpus`` and ``eval-retrieval`` (no model, no JVM)."""

from __future__ import annotations

import json
import re

import pytest
from retrieval_fakes import PASSAGES, VocabEmbedder, write_beir, write_corpus
from typer.testing import CliRunner

from disambig.cli import app
from disambig.data.asqa_retrieval import build_asqa_retrieval, parse_splits
from disambig.data.loaders import default_corpus, load_dataset
from disambig.errors import ConfigurationError

ZEBRA, LION = PASSAGES[1]["text"], PASSAGES[2]["text"]
# p5 repeats p2's text under another id (the slice has 35 such pairs): both are relevant wherever the text is evidence.
CORPUS = [*PASSAGES, {"id": "p5", "title": "Zebra (copy)", "text": ZEBRA}]


def row(qid: str, question: str, *knowledge: list[str]) -> dict:
    """An ASQA row with one annotation per list of evidence contents."""
    return {"id": qid, "question": question, "qa_pairs": [{"question": question, "short_answers": ["x"]}],
            "annotations": [{"long_answer": "x", "knowledge": [{"content": c, "wikipage": "W"} for c in contents]}
                            for contents in knowledge]}


# File order and split (question hash): a1 train, a2 dev, a3 dev, a4 dev, a5 train, a6 dev, a7 test, a8 dev.
ROWS = [
    row("a1", "When did the aardvark learn to dig?", [" The aardvark eats ants\n at night. "]),  # p1 (spaces differ)
    row("a2", "Who painted the zebra?", [ZEBRA, LION], [ZEBRA]),         # p2, p5, p3: two distinct texts
    row("a3", "Where do penguins swim?", []),                            # no evidence: skipped
    row("a4", "Who named the zebra?", ["Zebras are not in this corpus."]),  # evidence not in corpus: skipped
    row("a5", "Which lion hunts at night?", [LION, "Lions sleep twenty hours."]),  # p3; one text missing
    row("a6", "What colour is a zebra?", [ZEBRA]),                       # p2, p5
    row("a7", "Where do lions live?", [PASSAGES[3]["text"]]),             # test: p4
    row("a8", "Who wrote about zebras?", [PASSAGES[0]["text"]]),          # dev, beyond --limit 2
]


@pytest.fixture
def asqa(tmp_path):
    path = tmp_path / "asqa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    """``CORPUS`` as a JSONL file (this module's own, over conftest's four-passage one); returns its path."""
    return write_corpus(tmp_path / "slice.jsonl", CORPUS)


@pytest.fixture
def built(asqa, corpus, tmp_path):
    """The folder of the first two questions per train/dev split."""
    out = tmp_path / "asqa-retrieval"
    build_asqa_retrieval(str(asqa), corpus, out, ("train", "dev"), limit=2, command="the command")
    return out


def qrels(folder, split: str) -> list[str]:
    return (folder / "qrels" / f"{split}.tsv").read_text().splitlines()


def test_qrels_judge_the_passages_whose_text_is_evidence(built):
    assert qrels(built, "dev") == ["query-id\tcorpus-id\tscore", "a2\tp2\t1", "a2\tp5\t1", "a2\tp3\t1",
                                   "a6\tp2\t1", "a6\tp5\t1"]
    assert qrels(built, "train") == ["query-id\tcorpus-id\tscore", "a1\tp1\t1", "a5\tp3\t1"]
    queries = [json.loads(line) for line in (built / "queries.jsonl").read_text().splitlines()]
    assert queries == [{"_id": "a1", "text": ROWS[0]["question"]}, {"_id": "a5", "text": ROWS[4]["question"]},
                       {"_id": "a2", "text": ROWS[1]["question"]}, {"_id": "a6", "text": ROWS[5]["question"]}]
    assert not (built / "corpus.jsonl").exists()  # the corpus is named, not copied


def test_manifest_counts_what_each_split_read_took_and_left_out(built, asqa, corpus):
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["dataset_file"] == str(asqa) and manifest["corpus"] == corpus
    assert manifest["corpus_passages"] == 5 and manifest["splits"] == ["train", "dev"] and manifest["limit"] == 2
    assert manifest["command"] == "the command"
    # train reads a1, a5 and stops: both taken; a5's second text is not in the corpus; (1 + 1) / 2 relevant.
    assert manifest["per_split"]["train"] == {
        "questions_read": 2, "taken": 2, "skipped_no_evidence": 0, "skipped_evidence_not_in_corpus": 0,
        "evidence_matched": 2, "evidence_not_in_corpus": 1, "mean_relevant": 1.0}
    # dev reads a2 (taken), a3 (no evidence), a4 (its one text missing), a6 (taken) and stops before a8;
    # texts matched: a2's two and a6's one; relevant (3 + 2) / 2.
    assert manifest["per_split"]["dev"] == {
        "questions_read": 4, "taken": 2, "skipped_no_evidence": 1, "skipped_evidence_not_in_corpus": 1,
        "evidence_matched": 3, "evidence_not_in_corpus": 1, "mean_relevant": 2.5}


def test_limit_applies_per_split(asqa, corpus, tmp_path):
    out = tmp_path / "one-each"
    manifest = build_asqa_retrieval(str(asqa), corpus, out, ["dev", "test", "train"], limit=1)
    assert {name: c["taken"] for name, c in manifest["per_split"].items()} == {"dev": 1, "test": 1, "train": 1}
    assert [line.split("\t")[0] for line in qrels(out, "test")[1:]] == ["a7"]
    assert len((out / "queries.jsonl").read_text().splitlines()) == 3


def test_the_folder_loads_by_split_and_searches_the_corpus_it_names(built, corpus):
    assert [e.id for e in load_dataset(str(built), split="train")] == ["a1", "a5"]
    dev = load_dataset(str(built), split="dev")
    assert [e.id for e in dev] == ["a2", "a6"] and dev[0].qrels == {"p2": 1, "p5": 1, "p3": 1}
    assert {e.id for e in load_dataset(str(built), split="all")} == {"a1", "a5", "a2", "a6"}
    with pytest.raises(ConfigurationError, match="judges split.s. dev, train: pass one of them"):
        load_dataset(str(built), split="test")
    assert default_corpus(str(built)) == corpus


def test_default_corpus_of_each_kind_of_dataset(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_beir(root / "beir" / "dbpedia-entity-5k", {"q1": "zebra"}, {"q1": "p2"})
    monkeypatch.setenv("DISAMBIG_DATA_DIR", str(root))
    assert default_corpus("dbpedia-entity-5k") == "dbpedia-entity-5k"  # its own corpus.jsonl
    assert default_corpus("asqa") == "wiki-slice"
    named = write_beir(tmp_path / "named", {"q1": "zebra"}, {"q1": "p2"})
    (tmp_path / "named" / "corpus.jsonl").unlink()
    (tmp_path / "named" / "manifest.json").write_text(json.dumps({"corpus": "wiki-slice"}))
    assert default_corpus(named) == "wiki-slice"
    (tmp_path / "named" / "manifest.json").write_text(json.dumps({"corpus": "passages.jsonl"}))
    assert default_corpus(named) == str(tmp_path / "named" / "passages.jsonl")  # relative to the folder
    (tmp_path / "named" / "manifest.json").unlink()
    with pytest.raises(ConfigurationError, match="no corpus.jsonl and no manifest.json naming"):
        default_corpus(named)


def test_a_run_without_corpus_searches_the_folders_corpus(built, corpus, settings, monkeypatch):
    from disambig.optimizers.recipes import Budget
    from disambig.optimizers.session import run_compile
    from disambig.run_setup import prepare_run

    searched = []

    class Searched(Exception):
        pass

    def build_retriever(kind, corpus, settings):
        searched.append(corpus)
        raise Searched

    monkeypatch.setattr("disambig.retrieval.build_retriever", build_retriever)
    with pytest.raises(Searched):
        prepare_run(settings, "vanilla-rag", str(built), "dev", None, [], "bm25", None)
    with pytest.raises(Searched):
        run_compile(settings, "amd", str(built), "ndcg@10", "bootstrap", Budget(), 2, 2, "amd-sparse", None, "",
                    settings.cache_dir, False, False)
    assert searched == [corpus, corpus]


@pytest.mark.parametrize("splits", [["train", "dev"], ["train,dev"], ["dev", "train", "dev"]])
def test_splits_repeat_or_separate_by_commas(splits):
    assert sorted(parse_splits(splits)) == ["dev", "train"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_the_command_writes_the_folder_and_prints_the_counts(asqa, corpus, tmp_path):
    out = tmp_path / "cli"
    result = invoke("data", "asqa-retrieval", "--out", str(out), "--dataset", str(asqa), "--corpus", corpus,
                    "--limit", "2", "--splits", "dev")
    assert result.exit_code == 0, result.output
    assert [f.name for f in sorted(out.rglob("*"))] == ["manifest.json", "qrels", "dev.tsv", "queries.jsonl"]
    assert "2.5" in result.output and f"eval-retrieval --dataset {out} --split dev" in result.output
    command = json.loads((out / "manifest.json").read_text())["command"]
    assert command.startswith(f"disambig data asqa-retrieval --out {out} --dataset {asqa}") and "--limit 2" in command
    again = invoke("data", "asqa-retrieval", "--out", str(out), "--dataset", str(asqa), "--corpus", corpus,
                   "--splits", "train")  # a folder it wrote is replaced whole: no dev.tsv left behind
    assert again.exit_code == 0, again.output
    assert sorted(f.name for f in (out / "qrels").iterdir()) == ["train.tsv"]


def ambignq_file(tmp_path):
    path = tmp_path / "ambignq.jsonl"
    path.write_text(json.dumps({"id": "n1", "question": "q?", "annotations": [{"type": "singleAnswer",
                                                                            "answer": ["a"]}]}) + "\n")
    return str(path)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda tmp, args: args | {"--dataset": ambignq_file(tmp)}, "row in ambignq format; asqa-retrieval needs"),
        (lambda tmp, args: args | {"--corpus": write_corpus(tmp / "other.jsonl", [CORPUS[3]])},
         "split 'train' of .* has no question with an evidence passage"),
        (lambda tmp, args: args | {"--splits": "dev,all"}, "unknown split 'all'; choose among train, dev, test"),
        (lambda tmp, args: args | {"--dataset": str(tmp / "missing.jsonl")}, "no such file: .*missing.jsonl"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(asqa, corpus, tmp_path, change, match):
    out = tmp_path / "never"
    args = change(tmp_path, {"--out": str(out), "--dataset": str(asqa), "--corpus": corpus, "--splits": "train"})
    result = invoke("data", "asqa-retrieval", *[part for pair in args.items() for part in pair])
    assert result.exit_code == 2, result.output
    assert re.search(match, " ".join(result.output.split()))
    assert not out.exists() and not list(tmp_path.glob(".never*"))


def test_an_out_through_a_file_is_refused_before_anything_is_read(asqa, corpus, tmp_path):
    """Found by fuzzing the command line: a traceback (FileExistsError) once the folder was built."""
    out = tmp_path / "asqa.jsonl" / "bench"
    result = invoke("data", "asqa-retrieval", "--out", str(out), "--dataset", str(asqa), "--corpus", corpus)
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == f"error: --out '{out}': '{asqa}' is a file, not a folder; write elsewhere"


def test_a_folder_with_other_files_is_not_overwritten(asqa, corpus, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    result = invoke("data", "asqa-retrieval", "--out", str(out), "--dataset", str(asqa), "--corpus", corpus)
    assert result.exit_code == 2 and "holds files not written by" in " ".join(result.output.split())
    assert [f.name for f in out.iterdir()] == ["notes.txt"]


def test_eval_retrieval_searches_the_named_corpus_on_the_split_asked_for(built, corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("disambig.cli.index_cmd.make_embedder", lambda model: VocabEmbedder())
    out = tmp_path / "scores.json"
    result = invoke("eval-retrieval", "--dataset", str(built), "--split", "dev", "-r", "dense", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"over{corpus}(dev,2queries)" in "".join(result.output.split())  # the title, wrapped
    assert [index.name.split("-")[:2] for index in (tmp_path / "cache" / "indexes").iterdir()] == [["slice", "dense"]]
    (report,) = json.loads(out.read_text())
    # Two dev queries; the depth searched (100) exceeds the 5 passages, so every relevant passage is found.
    assert report["queries"] == 2 and report["metrics"]["recall@100"] == pytest.approx(1.0)
    # each dev query's scores are kept, and their means are the report's
    assert len(report["per_query"]) == 2
    for metric, mean in report["metrics"].items():
        assert sum(q[metric] for q in report["per_query"].values()) / 2 == pytest.approx(mean)
    missing = invoke("eval-retrieval", "--dataset", str(built), "--split", "test", "-r", "dense")
    assert missing.exit_code == 2 and "judges split(s) dev, train" in " ".join(missing.output.split())
