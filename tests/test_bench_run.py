"""``bench/run.py``, the one runner: a TOML configuration expanded into ``disambig eval`` runs (no run made here)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import bench.run

    return bench.run


CONFIG = """
out = "bench/results/x"
[defaults]
lm = "local:smollm2"
limit = 50
flags = ["--no-track"]
[[runs]]
programs = ["closed-book", "vanilla-rag"]
datasets = ["asqa", "ambignq"]
[[runs]]
name = "dfa-compiled"
program = "dfa"
dataset = "~/sets/spiderqa-72"
artifact = "artifacts/dfa/labeled.json"
metrics = ["nace"]
limit = 8
"""


def test_each_program_and_dataset_is_a_run_with_the_defaults_and_its_own_keys(runner):
    runs = runner.expand(tomllib.loads(CONFIG))
    assert [run.name for run in runs] == ["closed-book-asqa", "closed-book-ambignq", "vanilla-rag-asqa",
                                          "vanilla-rag-ambignq", "dfa-compiled"]
    assert runs[0].arguments(Path("/out")) == ["eval", "closed-book", "--dataset", "asqa", "--limit", "50", "--lm",
                                               "local:smollm2", "--no-track", "--out", "/out/closed-book-asqa"]
    compiled = runs[-1].arguments(Path("/out"))
    assert compiled[:4] == ["eval", "dfa", "--dataset", str(Path("~/sets/spiderqa-72").expanduser())]
    assert compiled[4:] == ["--limit", "8", "--lm", "local:smollm2", "--artifact", "artifacts/dfa/labeled.json",
                            "--metric", "nace", "--no-track", "--out", "/out/dfa-compiled"]


@pytest.mark.parametrize(("extra", "match"), [
    ('[[runs]]\nprogram = "adf"\ndataset = "asqa"\nthreads = 2\n', "run 3: unknown key 'threads'"),
    ('[[runs]]\nprogram = "closed-book"\ndataset = "asqa"\n', "two runs write the folder 'closed-book-asqa'"),
])
def test_an_unknown_key_or_two_runs_in_one_folder_are_refused(runner, extra, match):
    with pytest.raises(ValueError, match=match):
        runner.expand(tomllib.loads(CONFIG + extra))


def test_a_dry_run_prints_the_commands_of_the_runs_chosen(runner, tmp_path, capsys):
    (tmp_path / "c.toml").write_text(CONFIG)
    runner.main([str(tmp_path / "c.toml"), "--only", "dfa-compiled", "--dry-run"])
    assert capsys.readouterr().out.startswith("disambig eval dfa --dataset ")
    with pytest.raises(SystemExit, match="no run of .* is named nope"):
        runner.main([str(tmp_path / "c.toml"), "--only", "nope", "--dry-run"])


def test_out_puts_the_same_runs_into_another_folder_of_run_folders(runner, tmp_path, capsys):
    (tmp_path / "c.toml").write_text(CONFIG)
    runner.main([str(tmp_path / "c.toml"), "--only", "closed-book-asqa", "--dry-run"])
    assert capsys.readouterr().out.rstrip().endswith(str(Path("bench/results/x/closed-book-asqa")))
    runner.main([str(tmp_path / "c.toml"), "--only", "closed-book-asqa", "--out", "bench/results/y", "--dry-run"])
    assert capsys.readouterr().out.rstrip().endswith(str(Path("bench/results/y/closed-book-asqa")))


def test_the_speed_configuration_runs_the_four_programs_on_both_models_on_the_same_questions(runner):
    runs = runner.expand(tomllib.loads((ROOT / "bench/cost/speed.toml").read_text(encoding="utf-8")))
    assert sorted(run.program for run in runs) == sorted(["adf", "diva", "vanilla-rag", "verdict"] * 2)
    for run in runs:
        options = list(run.options)
        assert options[options.index("--limit") + 1] == "20" and options[options.index("--split") + 1] == "dev"
        assert run.dataset == "asqa"
    assert {run.options[run.options.index("--lm") + 1] for run in runs} == {"local:qwen2.5-1.5b",
                                                                          "local:qwen2.5-0.5b"}
