"""Compile recipes: DSPy optimizers run against the benchmark metrics, tracked in MLflow."""

from disambig.optimizers.moved import install

install()  # the modules that moved to disambig.serving stay importable at their old names (optimizers/moved.py)
