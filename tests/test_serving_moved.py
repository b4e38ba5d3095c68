"""The modules that moved from ``optimizers/serving_*.py`` to ``disambig.serving`` (issue 39) still import at their
old names, and an MLflow model logged before the move, whose frozen code imports them there, loads and answers
(``optimizers/moved.py``). Offline: the scripted LM of ``batch_fakes``, a closed-book state, no server process."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from disambig.optimizers.moved import MOVED, MovedModules, install

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_name_imports_the_very_module_at_its_new_name(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_every_module_of_serving_has_its_old_name():
    assert {f"disambig.serving.{p.stem}" for p in (ROOT / "serving").glob("*.py") if p.stem != "__init__"} == set(
        MOVED.values())


def test_a_fresh_process_finds_an_old_name_with_nothing_imported_before_it():
    code = "from disambig.optimizers.serving_input import request_records; print(request_records.__module__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "disambig.serving.input"), done.stderr


def test_a_name_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError, match="serving_nothing"):
        importlib.import_module("disambig.optimizers.serving_nothing")


def test_installing_twice_leaves_one_finder():
    install()
    install()
    assert sum(isinstance(finder, MovedModules) for finder in sys.meta_path) == 1


def code_before_the_move(folder: Path) -> Path:
    """``serving/model.py`` as a model logged before the move carries it: named ``serving_model.py``, its imports
    naming ``disambig.optimizers.serving_*`` (the move changed nothing else in it but docstrings)."""
    code = (ROOT / "serving" / "model.py").read_text(encoding="utf-8")
    code = code.replace("disambig.serving.", "disambig.optimizers.serving_")
    assert "from disambig.optimizers.serving_input import" in code and "disambig.serving" not in code
    folder.mkdir()
    (folder / "serving_model.py").write_text(code, encoding="utf-8")
    return folder / "serving_model.py"


def test_a_model_logged_before_the_move_loads_and_answers(tmp_path, monkeypatch):
    import mlflow
    from batch_fakes import FACTORY, scripted_answer

    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.batch import save_pyfunc
    from disambig.programs import build_program

    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    monkeypatch.setattr("disambig.optimizers.tracking.SERVING_CODE", code_before_the_move(tmp_path / "old"))
    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    model = mlflow.pyfunc.load_model(save_pyfunc(state, tmp_path / "model"))
    assert (tmp_path / "model" / "serving_model.py").is_file()  # the frozen code MLflow ran
    (answer,) = model.predict(["Who won prize 1?"])
    assert (answer["error"], answer["long_answer"]) == ("", scripted_answer("Who won prize 1?"))
