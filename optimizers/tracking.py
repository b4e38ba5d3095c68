"""Record a compile in MLflow: params, before/after scores, state + manifest, and a servable pyfunc model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from disambig.evaluation.tracking import mlflow_key, tracking_uri, use_experiment

EXPERIMENT = "disambig-compile"
# The models-from-code file each logged model carries (a file copied into the model, not imported here):
# disambig.serving.model, whose folder sits beside this one in the checkout and in the wheel.
SERVING_CODE = Path(__file__).parents[1] / "serving" / "model.py"


def registered_name(program: str, dataset: str) -> str:
    return f"disambig-{program}-{Path(dataset).stem}"


def run_name(manifest: dict[str, Any], state_path: Path) -> str:
    """``PROGRAM-DATASET-NAME``: the artifact's name (``--name``, by default the optimizer's) tells runs apart."""
    return f"{manifest['program']}-{Path(manifest['dataset']).stem}-{state_path.stem}"


def log_compile_run(result: Any, uri: str | None = None, register: bool = True) -> dict[str, str]:
    """Log one compile; return the run id and, when registered, the model URI. The manifest entry records the run id
    (``mlflow_run_id``, before the manifest is logged) and the registered model (``mlflow_model``)."""
    import mlflow

    from disambig.optimizers.artifact import record_run

    manifest = result.manifest
    use_experiment(tracking_uri(uri), EXPERIMENT)
    manifest_path = result.state_path.parent / "manifest.json"
    with mlflow.start_run(run_name=run_name(manifest, result.state_path)) as run:
        record_run(result.state_path, {"mlflow_run_id": run.info.run_id})
        mlflow.log_params({mlflow_key(k): _param(v) for k, v in manifest.items()
                           if k in ("program", "dataset", "metric", "optimizer", "lm", "retriever", "fingerprint",
                                   "passage_framing", "outcome", "name", "teacher_lm")
                           and (v or k != "teacher_lm")})
        mlflow.log_params({f"budget.{k}": v for k, v in manifest["budget"].items()})
        mlflow.log_metrics({"score_before": result.before, "score_after": result.after,
                            "score_gain": result.after - result.before})
        mlflow.log_artifact(str(result.state_path), artifact_path="state")
        mlflow.log_artifact(str(manifest_path), artifact_path="state")
        out = {"run_id": run.info.run_id}
        name = registered_name(manifest["program"], manifest["dataset"])
        info = mlflow.pyfunc.log_model(
            name="program",
            python_model=str(SERVING_CODE),
            artifacts={"state": str(result.state_path), "manifest": str(manifest_path)},
            pip_requirements=["disambig"],
            registered_model_name=name if register else None,
        )
        out["model_uri"] = info.model_uri
        if register and info.registered_model_version is not None:
            out["registered"] = f"models:/{name}/{info.registered_model_version}"
            record_run(result.state_path, {"mlflow_model": out["registered"]})
    return out


def _param(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
