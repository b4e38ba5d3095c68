"""Errors the project raises for problems a user can fix."""

from __future__ import annotations


class DisambigError(Exception):
    """Base class: the message says what was wrong and how to fix it."""


class ConfigurationError(DisambigError, ValueError):
    """A setting, spec or path given by the user cannot be used."""


class MissingDependencyError(DisambigError, ImportError):
    """An optional backend is not installed; the message names the install command."""


class ModelIntegrityError(DisambigError):
    """A model file (or a chunk it is assembled from) does not match the SHA-256 pinned in the code."""


class PromptTooLongError(DisambigError, ValueError):
    """A prompt does not fit the embedded model's context window; the message names the limit and the fix."""
