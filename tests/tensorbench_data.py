"""TensorBench test data: the bundled sample's pack.py (it builds scorchlet, a small Scorch-like
repository), and datasets and predictions written for one test."""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "tensorbench"
# Environments (a venv per requirements) and compiler caches are reused across these tests,
# as across runs on a user's machine; each test that checks fetching brings its own.
SHARED_CACHE = Path(tempfile.gettempdir()) / "pytest-codebench-tests-cache"


def _pack() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tensorbench_pack", SAMPLE / "pack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pack = _pack()


def write_dataset(
    directory: Path, repo: Path | str, tasks: list[dict[str, Any]], predictions: list[dict[str, Any]]
) -> list[str]:
    dataset = directory / "tensorbench.json"
    dataset.write_text(json.dumps(tasks, indent=2))
    solutions = directory / "predictions.jsonl"
    solutions.write_text("".join(json.dumps(row) + "\n" for row in predictions))
    return ["--codebench-dataset", str(dataset), "--codebench-solutions", str(solutions)]


def task(
    shas: dict[str, str], repo: Path | str, name: str = "feature_sub", base: str = "B", **fields: Any
) -> dict[str, Any]:
    [record] = [t for t in pack.tasks(shas, str(repo)) if t["instance_id"] == f"scorchlet__{name}"]
    return {**record, "base_commit": shas.get(base, base), **fields}


def prediction(name: str, patch: str) -> dict[str, Any]:
    return {"instance_id": f"scorchlet__{name}", "model_name_or_path": "m", "model_patch": patch}


def sample_rows(*indexes: int) -> list[dict[str, Any]]:
    """The bundled sample's predictions at ``indexes``."""
    rows = (SAMPLE / "predictions.jsonl").read_text().splitlines()
    return [json.loads(rows[index]) for index in indexes]


def categories(run: Any) -> dict[str, str]:
    """Each item's outcome, from an inner run's JUnit XML."""
    return {name: item["properties"]["category"] for name, item in run.items.items()}
