"""ComputeEval datapacks written by the tests: host-only C problems that build with cc in
milliseconds, so the plugin's whole build-and-test path runs for real without a GPU."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

HEADER = "int add(int a, int b);\n"
TEST = """#include <stdio.h>
#include "add.h"
int main(void) {
    if (add(2, 3) != 5) { printf("add(2, 3) = %d, expected 5\\n", add(2, 3)); return 1; }
    puts("ok");
    return 0;
}
"""
RIGHT = '#include "add.h"\nint add(int a, int b) { return a + b; }\n'
WRONG = '#include "add.h"\nint add(int a, int b) { return a - b; }\n'

# The base image the Docker tests build on (scripts/docker-setup.sh makes it).
DOCKER_BASE = os.environ.get("CODEBENCH_DOCKER_BASE", "codebench-base:bookworm")


def problem(task_id: str, **fields: Any) -> dict[str, Any]:
    """A problem in ComputeEval's schema; ``fields`` override the defaults."""
    record: dict[str, Any] = {
        "task_id": task_id,
        "type": "cuda_cpp",
        "schema_version": 2,
        "date": "2026-11-22",
        "prompt": "Implement add().",
        "metadata": {"difficulty": "easy", "tags": [], "releases": ["test"], "do_not_release": False},
        "group": "cuda-kernels",
        "context_files": [{"path": "include/add.h", "content": HEADER}],
        "test_files": [{"path": "test/test_main.c", "content": TEST}],
        "source_references": None,
        "build_command": "cc -I include -o test.out solution.c test/test_main.c",
        "test_command": "./test.out",
        "min_cuda_toolkit": "12.0",
        "compute_capability": None,
        "requires_datacenter_gpu": False,
        "timeout_seconds": 30,
        "baseline_solution": solution(task_id, RIGHT),
    }
    record.update(fields)
    return record


def solution(task_id: str, code: str | None = None, files: list[dict[str, str]] | None = None) -> dict[str, Any]:
    files = files if files is not None else [{"path": "solution.c", "content": code or RIGHT}]
    return {"schema_version": 1, "type": "file", "task_id": task_id, "files": files}


def jsonl(records: list[Any]) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def write_problems(path: Path, problems: list[dict[str, Any]], release: str = "test-1", **metadata: Any) -> Path:
    """A problems datapack; ``metadata`` overrides metadata.json fields (e.g. task_id_hashes)."""
    lines = jsonl(problems)
    hashes = {
        p["task_id"]: hashlib.md5(line + b"\n").hexdigest()
        for p, line in zip(problems, lines.splitlines(), strict=True)
    }
    meta = {
        "release": release,
        "total_count": len(problems),
        "created_at": "2026-11-22T00:00:00Z",
        "description": "test pack",
        "task_id_hashes": hashes,
        **metadata,
    }
    return write_archive(path, {"metadata.json": json.dumps(meta).encode(), "problems.jsonl": lines})


def write_solutions(path: Path, solutions: list[dict[str, Any]]) -> Path:
    meta = {
        "release": "test-1",
        "total_count": len(solutions),
        "created_at": "2026-11-22T00:00:00Z",
        "description": "test solutions",
        "groups": [],
    }
    return write_archive(path, {"metadata.json": json.dumps(meta).encode(), "solutions.jsonl": jsonl(solutions)})


def pack_args(folder: Path, problems: list[dict[str, Any]], solutions: list[dict[str, Any]] | None = None) -> list[str]:
    """Writes the problems (and the solutions) as datapacks in ``folder``; returns the options
    that name them."""
    args = ["--codebench-dataset", str(write_problems(folder / "p-problems.tar.gz", problems))]
    if solutions is not None:
        args += ["--codebench-solutions", str(write_solutions(folder / "s-solutions.tar.gz", solutions))]
    return args


def write_archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def read_archive(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]
