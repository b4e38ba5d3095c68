"""A local or cluster Spark session for one job (batch answering, index encoding), stopped after it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from disambig.errors import MissingDependencyError


@contextmanager
def spark_session(master: str, app_name: str = "disambig") -> Iterator[Any]:
    """A Spark session on ``master`` (stopped when the block ends); workers run this Python unless
    ``PYSPARK_PYTHON`` says otherwise."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingDependencyError("--engine spark needs PySpark: pip install 'disambig[spark]'") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(master).appName(app_name)
             .config("spark.ui.enabled", "false")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .getOrCreate())
    try:
        yield spark
    finally:
        spark.stop()
