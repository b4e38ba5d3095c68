"""``bench/quality/readings_probe.py``'s AUC: sklearn's on the full sample, one value per resample, its cells."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def probe_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import bench.quality.readings_probe

    return bench.quality.readings_probe


def test_auc_equals_sklearn_with_ties_and_is_computed_per_row(probe_bench):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    label = (rng.random(60) < 0.3).astype(float)
    score = np.round(rng.random(60) + 0.4 * label, 1)  # rounded: many ties
    assert probe_bench.auc(score, label) == pytest.approx(roc_auc_score(label, score), abs=1e-12)
    rows = probe_bench.auc(np.vstack([score, -score]), np.vstack([label, label]))
    assert rows == pytest.approx([roc_auc_score(label, score), 1 - roc_auc_score(label, score)], abs=1e-12)


def test_cells_give_the_auc_and_the_paired_difference(probe_bench):
    label = np.array([0.0, 1.0] * 20)
    perfect, reversed_ = label + 0.1, -label
    assert probe_bench.auc_cell(label, perfect) == "1.000 [1.000, 1.000]"
    assert probe_bench.auc_cell(label, reversed_) == "0.000 [0.000, 0.000]"
    assert probe_bench.delta_cell(label, perfect, reversed_) == "+1.000 [+1.000, +1.000] better"
    assert probe_bench.delta_cell(label, reversed_, perfect).endswith("worse")
