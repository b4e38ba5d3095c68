"""Turn user-fixable errors into one red line and exit code 2, not a traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from disambig.errors import DisambigError

F = TypeVar("F", bound=Callable[..., Any])

USER_ERRORS = (DisambigError, ValueError, FileNotFoundError)


def user_errors(command: F) -> F:
    """Decorate a command so a ``DisambigError``/``ValueError`` exits 2 with its message, on one line."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except USER_ERRORS as exc:
            typer.secho(f"error: {one_line(str(exc))}", err=True, fg="red")
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def one_line(message: str) -> str:
    """``message`` with every run of whitespace made one space: a value a message quotes as it was given (a library's
    message, an f-string without ``!r``) may hold line breaks (``\\r``, ``\\n``, ``\\x1e``, ``\\u2028``...) that
    would split the error over lines or overwrite it in a terminal."""
    return " ".join(message.split())
