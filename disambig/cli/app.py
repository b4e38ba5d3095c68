"""Root command: global options and sub-command registration."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import typer

from disambig import __version__
from disambig.cli import (
    ask_cmd,
    batch_cmd,
    compile_cmd,
    data_cmd,
    eval_cmd,
    index_cmd,
    lm_cmd,
    programs_cmd,
    retrieval_eval_cmd,
    route_cmd,
    score_cmd,
    search_cmd,
    serve_cmd,
)
from disambig.paths import expanded

# Click's plain help, not Typer's Rich panels: Rich puts an option's help in a table column some 20 characters wide at
# 80 columns and cuts whatever does not fit there with an ellipsis (option names, env variable names, URLs such as
# sqlite:///mlflow.db), while Click wraps it at word boundaries in a column twice as wide. Every subcommand inherits it.
app = typer.Typer(
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
    help="DSPy programs for ambiguous and find-all questions.",
)
app.add_typer(lm_cmd.app, name="lm")
app.command("ask")(ask_cmd.ask)
app.command("programs")(programs_cmd.list_programs)
app.command("eval")(eval_cmd.evaluate)
app.command("compare")(eval_cmd.compare)
app.command("score")(score_cmd.score)
app.command("compile")(compile_cmd.compile_)
app.command("serve")(serve_cmd.serve)
app.command("batch")(batch_cmd.batch)
app.add_typer(index_cmd.app, name="index")
app.add_typer(data_cmd.app, name="data")
app.add_typer(route_cmd.app, name="route")
app.command("search")(search_cmd.search)
app.command("eval-retrieval")(retrieval_eval_cmd.eval_retrieval)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"disambig {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Folder holding the benchmark data (env DISAMBIG_DATA_DIR; default ../shared/data "
        "beside the checkout, then the cache's data folder).", file_okay=False,
    ),
) -> None:
    """disambig: retrieval-augmented generation that handles ambiguity."""
    if data_dir is not None:
        from disambig.data.root import ENV_VAR

        os.environ[ENV_VAR] = str(expanded(data_dir).resolve())


def main() -> None:
    """Console entry point."""
    log_to_stderr()
    app()


def log_to_stderr() -> None:
    """The project's log lines at INFO and up (index build progress, resumed runs) go to stderr, one plain line
    each, whether or not output is a terminal."""
    project = logging.getLogger("disambig")
    if not project.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        project.addHandler(handler)
        project.setLevel(logging.INFO)
        project.propagate = False  # a library that configures the root logger would print each line twice
