"""Every command's ``--help`` at 80 columns wraps its option text and cuts none of it (issue 38: Typer's Rich panels
gave an option's help a column some 20 characters wide and ended what did not fit with an ellipsis, ``sqlite:///mlf…``,
``--repetition-gua…``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from disambig.cli import app


def commands(group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    """Every command and group under ``group``, with the words that name it on the command line."""
    for name, command in group.commands.items():
        yield (*path, name), command
        if hasattr(command, "commands"):
            yield from commands(command, (*path, name))


COMMANDS = dict(commands(get_command(app)))


def help_at_80_columns(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80, prog_name="disambig")
    assert result.exit_code == 0, result.output
    return result.output


def without_spaces(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_help_at_80_columns_wraps_every_option_text_whole(path):
    output = help_at_80_columns(path)
    assert "…" not in output
    assert max(len(line) for line in output.splitlines()) <= 80
    # each option's help, read across its wrapped lines, is all there and in order
    cut = [param.name for param in COMMANDS[path].params
           if getattr(param, "help", None) and without_spaces(param.help) not in without_spaces(output)]
    assert not cut, f"help text of {cut} is not whole in `disambig {' '.join(path)} --help`:\n{output}"


@pytest.mark.parametrize("command", ["compile", "serve", "batch"])
def test_a_long_default_appears_whole(command):
    assert "sqlite:///mlflow.db" in help_at_80_columns((command,))
