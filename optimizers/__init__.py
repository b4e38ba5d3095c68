"""Compile recipes: DSPy optimizers run against the benchmark metrics, tracked in MLflow."""
