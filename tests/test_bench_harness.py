"""``bench/harness``: a generated section written between its markers, resumable rows, a clean worktree at a commit,
and another checkout's code run with this environment (no LM, no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import bench.harness

    return bench.harness


def test_a_section_replaces_its_markers_content_and_is_appended_when_new(harness, tmp_path):
    script = harness.Script("bench/quality/rescore.py")
    assert script.command(["--runs", "a b"]) == "python -m bench.quality.rescore --runs 'a b'"
    assert script.markers("qwen") == ("<!-- bench/quality/rescore.py:qwen:begin -->",
                                      "<!-- bench/quality/rescore.py:qwen:end -->")
    assert script.markers() == ("<!-- bench/quality/rescore.py:begin -->", "<!-- bench/quality/rescore.py:end -->")
    doc = tmp_path / "doc.md"
    begin, end = script.markers("t")
    doc.write_text(f"# Before\n\n{begin}\nold\n{end}\n\nAfter.\n")
    script.write(doc, "| new |\n")
    script.write(doc, "| new |", "t")
    unnamed = "\n".join(script.markers()).replace("\n", "\n| new |\n\n")
    assert doc.read_text() == f"# Before\n\n{begin}\n| new |\n{end}\n\nAfter.\n\n{unnamed}\n"
    assert harness.Script.of(str(ROOT / "bench" / "harness" / "docs.py")).path == "bench/harness/docs.py"


def test_report_options_read_the_table_flag_and_a_docs_file(harness):
    import argparse

    parser = argparse.ArgumentParser()
    harness.Script.add_report_options(parser)
    assert vars(parser.parse_args([])) == {"report": False, "results": None}
    assert vars(parser.parse_args(["--report", "--results", "docs/x.md"])) == {"report": True,
                                                                               "results": Path("docs/x.md")}

def test_rows_resume_by_key_and_carry_the_code_that_made_them(harness, tmp_path):
    from disambig.evaluation.code_version import code_stamp

    rows = harness.Rows(tmp_path / "out.jsonl", key=("id", "mode"))
    assert list(rows) == [] and not rows.done("q1", "greedy")
    rows.add({"id": "q1", "mode": "greedy", "lm": "a"})
    again = harness.Rows(tmp_path / "out.jsonl", key=("id", "mode"))  # a new process reads what the first wrote
    assert again.done("q1", "greedy") and not again.done("q1", "per-cluster")
    assert list(again) == [{"id": "q1", "mode": "greedy", "lm": "a", "code": code_stamp()}]
    again.refuse_other("lm", "a")
    with pytest.raises(SystemExit, match="holds rows with lm a; use another file for lm 'b'"):
        again.refuse_other("lm", "b")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_a_clean_worktree_holds_the_commit_and_leaves_nothing_behind(harness, tmp_path):
    repo = tmp_path / "work" / "checkout"
    repo.mkdir(parents=True)
    (tmp_path / "work" / "shared").mkdir()  # the data root beside the checkout
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("committed\n")
    git(repo, "add", "a.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (repo / "a.txt").write_text("an uncommitted edit\n")
    with harness.clean_worktree("HEAD", checkout=repo) as tree:
        assert (tree / "a.txt").read_text() == "committed\n" and (tree.parent / "shared").is_dir()
        assert git(tree, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert not tree.exists() and git(repo, "worktree", "list").count("\n") == 0


def test_the_launcher_imports_the_mapped_packages_from_the_tree_given(harness, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"treepkg" = "src"\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("WHERE = 'the tree'\n")
    (tmp_path / "src" / "part.py").write_text("from treepkg import WHERE\n")
    (tmp_path / "show.py").write_text("import json, treepkg.part\nprint(json.dumps([treepkg.part.WHERE, "
                                      "treepkg.part.__file__]))\n")
    done = subprocess.run([*harness.python_in(tmp_path), str(tmp_path / "show.py")], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == ["the tree", str(tmp_path / "src" / "part.py")]
    assert harness.python_in(tmp_path)[0] == sys.executable


def test_first_ids_keeps_a_block_of_the_split_in_its_order(harness, monkeypatch):
    import dspy

    import disambig.data
    from bench.harness.runs import first_ids

    asked = []

    def load_dataset(name, split="all", limit=None):
        asked.append((name, split, limit))
        return [dspy.Example(id=f"q{i}") for i in range(1, 11)][:limit]

    monkeypatch.setattr(disambig.data, "load_dataset", load_dataset)
    run = {"dataset": "asqa", "split": "dev"}
    assert first_ids(run, 4) == {"q1", "q2", "q3", "q4"}
    assert first_ids(run, 6, skip=4) == {"q5", "q6"}
    assert first_ids(run, None, skip=8) == {"q9", "q10"}
    assert first_ids(run, 3, skip=5) == set()
    assert asked == [("asqa", "dev", 4), ("asqa", "dev", 6), ("asqa", "dev", None), ("asqa", "dev", 3)]


def test_a_run_folder_keeps_one_line_a_sitting_with_its_cpu_and_rows_so_far(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.harness import machine

    run = tmp_path / "vanilla-rag-asqa"
    assert machine.sitting_cpus(run) == []
    monkeypatch.setattr(machine, "cpu_name", lambda: "CPU A")
    machine.record_sitting(run, event="start", commit="abc")
    # two rows, one holding a line separator that str.splitlines would split at, and a torn last line
    (run / "results.jsonl").write_bytes('{"id": "1", "a": "x\u2028y"}\n{"id": "2"}\n'.encode() + b'{"id": "\xe2\x80')
    machine.record_sitting(run, event="end", commit="abc", returncode=0)
    monkeypatch.setattr(machine, "cpu_name", lambda: "CPU B")  # resumed elsewhere, answering nothing new
    machine.record_sitting(run, event="start", commit="abc")
    machine.record_sitting(run, event="end", commit="abc", returncode=1)
    lines = [json.loads(line) for line in (run / "machine.jsonl").read_text().splitlines()]
    assert [(line["event"], line["rows"], line["cpu"]) for line in lines] == [
        ("start", 0, "CPU A"), ("end", 2, "CPU A"), ("start", 2, "CPU B"), ("end", 2, "CPU B")]  # torn line: no row
    assert lines[1]["returncode"] == 0 and lines[1]["commit"] == "abc"
    assert machine.sitting_cpus(run) == ["CPU A"]  # CPU B answered no question
    machine.record_sitting(run, event="start", commit="abc")
    with (run / "results.jsonl").open("a") as rows:
        rows.write('\n{"id": "3"}\n')
    machine.record_sitting(run, event="end", commit="abc", returncode=0)
    with (run / "machine.jsonl").open("a") as sittings:
        sittings.write('{"event": "st')  # a line cut by a kill
    assert machine.sitting_cpus(run) == ["CPU A", "CPU B"]
