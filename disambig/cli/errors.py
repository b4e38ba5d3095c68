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
    """Decorate a command so a ``DisambigError``/``ValueError`` exits 2 with its message."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except USER_ERRORS as exc:
            typer.secho(f"error: {exc}", err=True, fg="red")
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]
