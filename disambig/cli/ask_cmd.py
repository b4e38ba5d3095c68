"""``disambig ask``: run one registered program on one question and show the answer and its cost."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings


@user_errors
def ask(
    question: str = typer.Argument(..., help="The question to answer."),
    program: str = typer.Option("closed-book", "--program", "-p", help="Registered program (see `disambig programs`)."),
    lm: str | None = options.LM,
    threads: int | None = options.THREADS,
) -> None:
    """Answer QUESTION with a program and print the interpretations, the answer, LM calls, tokens and latency."""
    from disambig.programs import build_program
    from disambig.runtime import build_lm, configure_dspy

    if not question.strip():
        raise ValueError("question is empty; pass the question text as the first argument")
    settings = load_settings(lm=lm, threads=threads)
    module = build_program(program)
    configure_dspy(build_lm(settings))
    prediction = module(question=question)
    _show(Console(), question, prediction)


def _show(console: Console, question: str, prediction: object) -> None:
    interpretations = getattr(prediction, "interpretations", [])
    if interpretations:
        table = Table(title="Interpretations")
        for column in ("#", "question", "answer", "passages"):
            table.add_column(column)
        for i, item in enumerate(interpretations, 1):
            table.add_row(str(i), item["question"], item["answer"], ", ".join(item["passage_ids"]))
        console.print(table)
    console.print(f"[bold]Q:[/bold] {question}")
    console.print(f"[bold]A:[/bold] {prediction.long_answer}")
    trace = prediction.trace
    console.print(
        f"LM calls {trace['lm_calls']} · tokens in {trace['input_tokens']} / out {trace['output_tokens']} · "
        f"retrieval calls {trace['retrieval_calls']} · {trace['seconds']:.2f} s"
    )
