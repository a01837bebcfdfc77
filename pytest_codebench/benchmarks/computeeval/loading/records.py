"""What a valid ComputeEval record is: problems, solutions and the datapack's metadata.

Each check names the file, the line and the field of what is wrong (:class:`DatasetError`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from pytest_codebench.benchmarks.records import Line, file_list, optional, require, seconds, version
from pytest_codebench.errors import DatasetError

from ..perf.timing import TimingMode
from ..sourcecode import check_references

DEFAULT_TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True)
class Problem:
    """A problem record, where it starts, and why it cannot be graded (None when it can)."""

    record: dict[str, Any]
    line: int
    error: str | None  # set when the record is invalid or fails its integrity check


def check_problem(line: Line, label: str) -> None:
    """Raise DatasetError unless the line holds a problem record with the fields grading reads."""
    if line.error is not None:
        raise line.error
    record, number = line.value or {}, line.number
    require(record, "task_id", str, label, number)
    require(record, "test_command", str, label, number)
    for field in ("build_command", "benchmark_command"):
        optional(record, field, str, label, number)
    TimingMode.read(record, label, number)
    seconds(record, "timeout_seconds", label, number)
    for field in ("min_cuda_toolkit", "compute_capability"):
        version(record, field, label, number)
    for field in ("group", "type"):
        optional(record, field, str, label, number)
    file_list(record, "test_files", label, number)
    if record.get("context_files") is not None:
        file_list(record, "context_files", label, number)
    try:
        check_references(record.get("source_references"))
    except ValueError as exc:
        raise DatasetError(label, str(exc), line=number, field="source_references") from None


def timeout_of(record: dict[str, Any]) -> float:
    """The seconds each of the problem's commands gets (NVIDIA's harness: 60 when it gives none)."""
    return float(record.get("timeout_seconds") or DEFAULT_TIMEOUT)


def check_solution(line: Line, label: str, problems: dict[str, Problem]) -> None:
    """Raise DatasetError unless the line holds a file or patch solution to one of ``problems``."""
    if line.error is not None:
        raise line.error
    record, number = line.value or {}, line.number
    task_id = require(record, "task_id", str, label, number)
    if task_id not in problems:
        raise DatasetError(label, f"{task_id!r} is not a task of the dataset", line=number, field="task_id")
    kind = record.get("type", "file")
    if kind == "patch":  # a unified diff against the context files (see patched)
        require(record, "patch", str, label, number)
        return
    if kind != "file":
        raise DatasetError(
            label, f"solution type {kind!r} is not supported (only 'file' or 'patch')", line=number, field="type"
        )
    file_list(record, "files", label, number)


def solution_files(solution: dict[str, Any] | None) -> dict[str, str]:
    """A solution's files by path."""
    return {f["path"]: f["content"] for f in (solution or {}).get("files", [])}


def hash_mismatch(task_id: str, line: Line, hashes: dict[str, Any]) -> str | None:
    """Why the line fails its md5 in ``task_id_hashes`` (which covers its trailing newline)."""
    expected = hashes.get(task_id)
    if expected is None:
        return f"task {task_id!r} is not in metadata.json task_id_hashes"
    actual = hashlib.md5(line.raw).hexdigest()
    if actual != expected:
        return (
            f"task {task_id!r} fails its integrity check: its line hashes to md5 {actual}, "
            f"metadata.json task_id_hashes says {expected}"
        )
    return None


def read_metadata(path: Path, data: bytes) -> dict[str, Any]:
    try:
        metadata = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}:metadata.json", f"not valid JSON ({exc})") from None
    if not isinstance(metadata, dict):
        raise DatasetError(f"{path}:metadata.json", "not a JSON object")
    hashes = metadata.get("task_id_hashes")
    if hashes is not None and not isinstance(hashes, dict):
        raise DatasetError(f"{path}:metadata.json", "expected an object", field="task_id_hashes")
    return metadata
