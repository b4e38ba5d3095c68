"""``disambig serve``'s command line: what it refuses before the model is fetched from the MLflow store and before the
server starts (found by fuzzing the command lines, ``test_fuzz_cli_heavy``)."""

from __future__ import annotations

import importlib.util
import socket
import sqlite3

import pytest
from typer.testing import CliRunner

from disambig.cli import app


@pytest.fixture
def no_fetch_no_server(monkeypatch):
    monkeypatch.setattr("disambig.cli.serve_cmd.downloaded", lambda uri, store: pytest.fail("the model was fetched"))
    monkeypatch.setattr("disambig.cli.process_group.run_as_group", lambda command, env: pytest.fail("a server ran"))


def test_a_busy_port_is_refused_before_the_model_is_fetched(no_fetch_no_server):
    """The server found it only after loading the model (uvicorn binds after its app factory has run)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "models:/m/1", "--port", str(port)])
    assert (result.exit_code, result.output.strip()) == (
        2, f"error: port {port} on 127.0.0.1 is in use; stop what listens there or choose another with --port")


def test_a_host_it_cannot_listen_on_is_refused_before_the_model_is_fetched(no_fetch_no_server):
    result = CliRunner().invoke(app, ["serve", "models:/m/1", "--host", "192.0.2.1", "--port", "5001"])
    assert (result.exit_code, result.output.strip()) == (
        2, "error: cannot listen on 192.0.2.1:5001 (Cannot assign requested address)")


def test_a_registered_model_is_looked_up_in_the_store_given_by_tracking_uri(monkeypatch, tmp_path):
    """``models:/NAME/1 --tracking-uri sqlite:///other.db`` was looked up in the registry of the default store (it
    created ./mlflow.db and said the model was not found in other.db): MLflow reads a models:/ URI's registry from the
    process's tracking URI, not from the store it is given."""
    import mlflow

    store = f"sqlite:///{tmp_path / 'other.db'}"
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE alembic_version (v)").connection.close()  # MLflow's
    seen = {}

    def download_artifacts(artifact_uri, dst_path, tracking_uri):
        seen.update(registry=mlflow.get_registry_uri(), tracking=tracking_uri)
        return dst_path

    monkeypatch.chdir(tmp_path)
    before = mlflow.get_tracking_uri()
    monkeypatch.setattr(mlflow.artifacts, "download_artifacts", download_artifacts)
    monkeypatch.setattr("disambig.cli.process_group.run_as_group", lambda command, env: 0)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = CliRunner().invoke(app, ["serve", "models:/m/1", "--tracking-uri", store, "--port", str(port)])
    assert result.exit_code == 0, result.output
    assert seen == {"registry": store, "tracking": store}
    assert mlflow.get_tracking_uri() == before  # the process's tracking URI is put back


@pytest.mark.parametrize(("store", "message"), [
    ("", "the MLflow store sqlite:///mlflow.db: 'mlflow.db' does not exist; give the store `disambig compile` "
         "tracked to with --tracking-uri (or MLFLOW_TRACKING_URI)"),  # the default: it made an empty mlflow.db
    ("sqlite:///runs", "the MLflow store sqlite:///runs: 'runs' is a folder; give the store `disambig compile` "
                       "tracked to with --tracking-uri (or MLFLOW_TRACKING_URI)"),  # MLflow retried for minutes
    ("sqlite:///notes.txt", "the MLflow store sqlite:///notes.txt: 'notes.txt' is not an MLflow store (no SQLite "
                            "database with MLflow's tables); give the store `disambig compile` tracked to with "
                            "--tracking-uri (or MLFLOW_TRACKING_URI)"),  # a traceback (file is not a database)
    ("sqlite:///empty.db", "the MLflow store sqlite:///empty.db: 'empty.db' is not an MLflow store (no SQLite "
                           "database with MLflow's tables); give the store `disambig compile` tracked to with "
                           "--tracking-uri (or MLFLOW_TRACKING_URI)"),  # MLflow wrote its tables into it
    ("sqlite:///other.sqlite", "the MLflow store sqlite:///other.sqlite: 'other.sqlite' is not an MLflow store (no "
                               "SQLite database with MLflow's tables); give the store `disambig compile` tracked to "
                               "with --tracking-uri (or MLFLOW_TRACKING_URI)"),  # and into any SQLite database
    ("postgresql://x/y", "the MLflow store postgresql://x/y needs the package 'psycopg', which is not installed; "
                         "install it or use a sqlite:/// store"),  # a traceback
])
def test_a_store_it_cannot_read_is_one_line_and_no_store_is_created(monkeypatch, tmp_path, store, message):
    if store.startswith("postgresql") and importlib.util.find_spec("psycopg"):
        pytest.skip("psycopg is installed")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr("disambig.cli.process_group.run_as_group", lambda command, env: pytest.fail("a server ran"))
    (tmp_path / "runs").mkdir()
    (tmp_path / "notes.txt").write_text("not a database")
    (tmp_path / "empty.db").touch()
    sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t (x)").connection.close()
    before = {p.name: p.is_file() and p.read_bytes() for p in tmp_path.iterdir()}
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = CliRunner().invoke(app, ["serve", "models:/m/1", "--port", str(port),
                                      *(["--tracking-uri", store] if store else [])])
    assert (result.exit_code, result.output.strip()) == (2, f"error: {message}")
    assert {p.name: p.is_file() and p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_store_server_that_does_not_answer_is_one_line_within_seconds(monkeypatch, tmp_path):
    """MLflow's client retried a store server that refused the connection for more than three minutes."""
    import time

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("disambig.cli.process_group.run_as_group", lambda command, env: pytest.fail("a server ran"))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        store = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    start = time.monotonic()
    result = CliRunner().invoke(app, ["serve", "models:/m/1", "--tracking-uri", store, "--port", str(port)])
    assert time.monotonic() - start < 10
    assert result.exit_code == 2 and result.output.startswith(f"error: the MLflow store {store} does not answer (")
    assert result.output.strip().endswith("start it, or give the store `disambig compile` tracked to with "
                                          "--tracking-uri") and len(result.output.strip().splitlines()) == 1
