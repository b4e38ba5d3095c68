"""Quality-versus-tokens scatter across runs (the trade-off plots of the ADF and DIVA papers)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from disambig.data.atomic import write_bytes


def plot_tradeoff(reports: list[dict[str, Any]], metric: str, path: Path) -> Path:
    """Plot ``metric`` against tokens per question, one labelled point per run; write a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for report in reports:
        x = report.get("efficiency", {}).get("tokens_per_q", 0.0)
        y = report.get("metrics", {}).get(metric)
        if y is None:
            continue
        ax.scatter([x], [y])
        ax.annotate(run_label(report), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("tokens per question (input + output)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs cost")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png")
    plt.close(fig)
    return write_bytes(path, image.getvalue())


def run_label(report: dict[str, Any]) -> str:
    params = report.get("params", {})
    return f"{params.get('program', '?')} ({Path(str(params.get('dataset', '?'))).stem})"
