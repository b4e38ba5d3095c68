"""Record an evaluation run in MLflow: params, metrics, and the report and plot as artifacts."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
EXPERIMENT = "disambig-eval"


def tracking_uri(explicit: str | None = None) -> str:
    """``explicit`` > ``MLFLOW_TRACKING_URI`` > a local sqlite store in the working directory."""
    return explicit or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def check_store(uri: str, timeout: float = 5.0) -> None:
    """Refuse a ``sqlite:///`` store whose database file is not there or is not MLflow's, before MLflow reads it:
    reading would create MLflow's tables in it (an empty database in place of a missing file, or in any SQLite file),
    fail with a traceback on a file that is not SQLite, or retry for minutes when a folder stands there. An
    ``http(s)://`` store must answer one request within ``timeout`` seconds: MLflow's client retries one that does
    not for minutes.

    Raises:
        ConfigurationError: one line naming the store, the file or the reason, and the fix.
    """
    from disambig.errors import ConfigurationError

    if uri.startswith(("http://", "https://")):
        import http.client
        import urllib.error
        import urllib.request

        try:
            urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout).close()
        except urllib.error.HTTPError:
            pass  # it answered
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigurationError(f"the MLflow store {uri} does not answer ({reason}); start it, or give the "
                                     "store `disambig compile` tracked to with --tracking-uri") from None
        return
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri.removeprefix("sqlite:///").split("?", 1)[0])
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
    elif not is_mlflow_database(path):
        what = "is not an MLflow store (no SQLite database with MLflow's tables)"
    else:
        return
    raise ConfigurationError(f"the MLflow store {uri}: {str(path)!r} {what}; give the store `disambig compile` "
                             "tracked to with --tracking-uri (or MLFLOW_TRACKING_URI)")


def is_mlflow_database(path: Path) -> bool:
    """Whether ``path`` is an SQLite database MLflow made (it has MLflow's migration table), read without writing."""
    import sqlite3

    with path.open("rb") as handle:
        if handle.read(16) != b"SQLite format 3\x00":
            return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'")
            return found.fetchone() is not None
    except sqlite3.Error:
        return False


def mlflow_key(name: str) -> str:
    """MLflow keys allow letters, digits and ``_-. /:``; ``mrecall@5`` becomes ``mrecall_at_5``."""
    return re.sub(r"[^\w\-. /:]", "_", name.replace("@", "_at_"))


def use_experiment(uri: str, name: str) -> None:
    """Point MLflow at ``uri`` and ``name``; a new experiment in a sqlite store keeps artifacts beside the db."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(name) is None:
        mlflow.create_experiment(name, artifact_location=artifact_root(uri))
    mlflow.set_experiment(name)


def artifact_root(uri: str) -> str | None:
    """``sqlite:///dir/mlflow.db`` -> ``file:///dir/mlartifacts``; other stores choose for themselves."""
    if not uri.startswith("sqlite:///"):
        return None
    return (Path(uri.removeprefix("sqlite:///")).resolve().parent / "mlartifacts").as_uri()


def generation_params(params: dict[str, Any]) -> dict[str, Any]:
    """The run's generation settings, each logged under its own name: those it set apart from the defaults
    (repetition guard, penalty, passage framing), and the passage framing always (``screened`` unless set)."""
    from disambig.settings import PASSAGE_FRAMINGS

    return {"passage_framing": PASSAGE_FRAMINGS[0]} | dict(params.get("generation") or {})


def log_eval_run(report: dict[str, Any], artifacts: list[Path], uri: str | None = None,
                 experiment: str = EXPERIMENT) -> str:
    """Log one evaluation run; return its MLflow run id."""
    import mlflow

    use_experiment(tracking_uri(uri), experiment)
    params = report["params"]
    name = f"{params.get('program')}-{params.get('dataset')}-{params.get('split')}"
    with mlflow.start_run(run_name=name) as run:
        mlflow.log_params({mlflow_key(k): str(v) for k, v in params.items()})
        mlflow.log_params({mlflow_key(f"generation.{k}"): str(v) for k, v in generation_params(params).items()})
        numbers = {**report["metrics"], **report["efficiency"], "failures": report["failures"],
                   "questions": report["questions"]}
        mlflow.log_metrics({mlflow_key(k): float(v) for k, v in numbers.items()})
        for path in artifacts:
            mlflow.log_artifact(str(path))
        return run.info.run_id
