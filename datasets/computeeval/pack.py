#!/usr/bin/env python3
"""Pack the bundled ComputeEval sample into datapacks, deterministically.

Reads the readable source tree next to this file:

    problems/<slug>/problem.yaml            scalar fields of one problem
    problems/<slug>/context_files/...       -> context_files [{path, content}]
    problems/<slug>/test_files/...          -> test_files (held out)
    problems/<slug>/baseline_solution/...   -> baseline_solution (reference answer)
    baselines.yaml                          expected outcome of each baseline
    solutions.yaml                          extra samples (mostly deliberately wrong)
    solutions_src/...                       longer sources used by solutions.yaml

and writes, next to this file:

    sample-problems.tar.gz    metadata.json + problems.jsonl
    sample-solutions.tar.gz   metadata.json + solutions.jsonl
    expected.json             expected outcome of every sample, without and with a GPU

Usage:
    python datasets/computeeval/pack.py          # (re)write the outputs
    python datasets/computeeval/pack.py --check  # exit 1 if they differ from a fresh pack

Only the standard library and PyYAML are used. The output is byte-for-byte
reproducible: sorted tar members with mtime 0, uid/gid 0, empty owner names and
mode 0644, a gzip header with mtime 0 and no file name, and JSON lines written
with json.dumps(record, ensure_ascii=False) in a fixed key order.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
from pathlib import Path, PurePosixPath

import yaml

HERE = Path(__file__).resolve().parent
PROBLEMS_DIR = HERE / "problems"
SOLUTIONS_SRC = HERE / "solutions_src"

RELEASE = "sample-2026-1"
CREATED_AT = "2026-11-22T00:00:00Z"
PROBLEMS_PACK = "sample-problems.tar.gz"
SOLUTIONS_PACK = "sample-solutions.tar.gz"
EXPECTED_FILE = "expected.json"

PROBLEMS_DESCRIPTION = (
    "pytest-codebench bundled sample: small ComputeEval-format problems written for the "
    "project (not NVIDIA's data), for testing the plugin."
)
SOLUTIONS_DESCRIPTION = (
    "pytest-codebench bundled sample solutions: each problem's baseline (sample 0) followed "
    "by deliberately wrong or hostile samples; expected.json gives every sample's outcome."
)

# problem.yaml keys, in this order.
YAML_KEYS = [
    "task_id",
    "type",
    "schema_version",
    "date",
    "prompt",
    "metadata",
    "group",
    "source_references",
    "build_command",
    "test_command",
    "benchmark_command",
    "timing_mode",
    "min_cuda_toolkit",
    "compute_capability",
    "requires_datacenter_gpu",
    "timeout_seconds",
]
# problems.jsonl record keys, in this order.
RECORD_KEYS = [
    "task_id",
    "type",
    "schema_version",
    "date",
    "prompt",
    "metadata",
    "group",
    "context_files",
    "test_files",
    "source_references",
    "build_command",
    "test_command",
    "benchmark_command",
    "timing_mode",
    "min_cuda_toolkit",
    "compute_capability",
    "requires_datacenter_gpu",
    "timeout_seconds",
    "baseline_solution",
]
METADATA_KEYS = ["difficulty", "tags", "releases", "do_not_release"]
SAMPLE_KEYS = {"task_id", "label", "expect_no_gpu", "expect_gpu", "files"}
OUTCOMES = {
    "passed",
    "skipped",
    "invalid_solution",
    "missing_api",
    "build_error",
    "build_timeout",
    "test_failed",
    "test_timeout",
}
IGNORED_NAMES = {"__pycache__", ".DS_Store"}


class PackError(Exception):
    pass


def natural_key(task_id: str):
    """CUDA/2 before CUDA/10; groups in plain string order."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id)]


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"{path}: not UTF-8 ({exc})") from None


def read_tree(root: Path) -> list[dict]:
    """Every file under root as {path, content}, path relative and posix, sorted."""
    if not root.is_dir():
        return []
    files = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in IGNORED_NAMES for part in rel.parts) or path.suffix == ".pyc":
            continue
        if path.is_symlink():
            raise PackError(f"{path}: symlinks are not packed")
        if path.is_file():
            files.append({"path": rel.as_posix(), "content": read_text(path)})
    files.sort(key=lambda f: f["path"])
    return files


def load_yaml(path: Path):
    with path.open("rb") as fh:
        return yaml.safe_load(fh)


def check_type(where: str, key: str, value, *types, allow_none: bool = False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) and bool not in types:
        raise PackError(f"{where}: {key} must be {'/'.join(t.__name__ for t in types)}, got bool")
    if not isinstance(value, types):
        raise PackError(
            f"{where}: {key} must be {'/'.join(t.__name__ for t in types)}"
            f"{' or null' if allow_none else ''}, got {type(value).__name__} {value!r}"
        )


def validate_source_references(where: str, refs) -> None:
    if refs is None or isinstance(refs, str):
        return
    if isinstance(refs, list):
        if not all(isinstance(r, str) for r in refs):
            raise PackError(f"{where}: source_references list must hold strings")
        return
    if isinstance(refs, dict):
        if not refs or set(refs) - {"any", "all"}:
            raise PackError(f"{where}: source_references object takes only 'any' and 'all'")
        for key, value in refs.items():
            if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
                raise PackError(f"{where}: source_references.{key} must be a list of strings")
        return
    raise PackError(f"{where}: source_references must be null, a string, a list or an object")


def load_problem(problem_dir: Path) -> dict:
    where = str(problem_dir.relative_to(HERE) / "problem.yaml")
    data = load_yaml(problem_dir / "problem.yaml")
    if not isinstance(data, dict):
        raise PackError(f"{where}: not a mapping")
    if list(data) != YAML_KEYS:
        raise PackError(f"{where}: keys must be exactly, in order: {', '.join(YAML_KEYS)}; got {', '.join(data)}")

    task_id = data["task_id"]
    check_type(where, "task_id", task_id, str)
    if problem_dir.name != task_id.replace("/", "_"):
        raise PackError(f"{where}: folder name must be {task_id.replace('/', '_')!r}")
    if data["type"] not in ("cuda_cpp", "cuda_python"):
        raise PackError(f"{where}: type must be cuda_cpp or cuda_python")
    if data["schema_version"] != 2 or isinstance(data["schema_version"], bool):
        raise PackError(f"{where}: schema_version must be 2")
    check_type(where, "date", data["date"], str)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["date"]):
        raise PackError(f"{where}: date must be YYYY-MM-DD")
    check_type(where, "prompt", data["prompt"], str)
    metadata = data["metadata"]
    if not isinstance(metadata, dict) or list(metadata) != METADATA_KEYS:
        raise PackError(f"{where}: metadata keys must be, in order: {', '.join(METADATA_KEYS)}")
    check_type(where, "metadata.difficulty", metadata["difficulty"], str)
    for key in ("tags", "releases"):
        if not isinstance(metadata[key], list) or not all(isinstance(t, str) for t in metadata[key]):
            raise PackError(f"{where}: metadata.{key} must be a list of strings")
    if RELEASE not in metadata["releases"]:
        raise PackError(f"{where}: metadata.releases must include {RELEASE}")
    check_type(where, "metadata.do_not_release", metadata["do_not_release"], bool)
    check_type(where, "group", data["group"], str)
    validate_source_references(where, data["source_references"])
    check_type(where, "build_command", data["build_command"], str, allow_none=True)
    check_type(where, "test_command", data["test_command"], str)
    check_type(where, "benchmark_command", data["benchmark_command"], str, allow_none=True)
    check_type(where, "timing_mode", data["timing_mode"], str, allow_none=True)
    check_type(where, "min_cuda_toolkit", data["min_cuda_toolkit"], str)
    check_type(where, "compute_capability", data["compute_capability"], str, allow_none=True)
    check_type(where, "requires_datacenter_gpu", data["requires_datacenter_gpu"], bool)
    check_type(where, "timeout_seconds", data["timeout_seconds"], int, float)

    context_files = read_tree(problem_dir / "context_files")
    test_files = read_tree(problem_dir / "test_files")
    baseline_files = read_tree(problem_dir / "baseline_solution")
    if not test_files:
        raise PackError(f"{problem_dir}: test_files/ is empty")
    if not baseline_files:
        raise PackError(f"{problem_dir}: baseline_solution/ is empty")

    values = dict(data)
    values["context_files"] = context_files
    values["test_files"] = test_files
    values["baseline_solution"] = solution_record(task_id, baseline_files)
    return {key: values[key] for key in RECORD_KEYS}


def solution_record(task_id: str, files: list[dict]) -> dict:
    return {"schema_version": 1, "type": "file", "task_id": task_id, "files": files}


def load_problems() -> list[dict]:
    problems = [load_problem(d) for d in sorted(PROBLEMS_DIR.iterdir()) if d.is_dir()]
    if not problems:
        raise PackError(f"no problems under {PROBLEMS_DIR}")
    seen = set()
    for problem in problems:
        if problem["task_id"] in seen:
            raise PackError(f"duplicate task_id {problem['task_id']}")
        seen.add(problem["task_id"])
    problems.sort(key=lambda p: natural_key(p["task_id"]))
    return problems


def check_outcome(where: str, key: str, value) -> None:
    if value not in OUTCOMES:
        raise PackError(f"{where}: {key} must be one of {', '.join(sorted(OUTCOMES))}; got {value!r}")


def load_baseline_expectations(task_ids: list[str]) -> dict:
    where = "baselines.yaml"
    data = load_yaml(HERE / where)
    if not isinstance(data, dict) or set(data) != set(task_ids):
        raise PackError(f"{where}: must map exactly the task ids {', '.join(task_ids)}")
    for task_id, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != {"no_gpu", "gpu"}:
            raise PackError(f"{where}: {task_id} needs exactly no_gpu and gpu")
        check_outcome(f"{where}: {task_id}", "no_gpu", entry["no_gpu"])
        check_outcome(f"{where}: {task_id}", "gpu", entry["gpu"])
    return data


def sample_file(where: str, entry) -> dict:
    if not isinstance(entry, dict) or "path" not in entry:
        raise PackError(f"{where}: each file needs a path")
    if set(entry) not in ({"path", "content"}, {"path", "content_from"}):
        raise PackError(f"{where}: each file takes path and exactly one of content, content_from")
    check_type(where, "path", entry["path"], str)
    if "content" in entry:
        check_type(where, "content", entry["content"], str)
        return {"path": entry["path"], "content": entry["content"]}
    source = entry["content_from"]
    check_type(where, "content_from", source, str)
    if PurePosixPath(source).is_absolute():
        raise PackError(f"{where}: content_from must be relative to solutions_src/")
    resolved = (SOLUTIONS_SRC / source).resolve()
    if HERE not in resolved.parents or not resolved.is_file():
        raise PackError(f"{where}: content_from {source!r} is not a file under {HERE}")
    return {"path": entry["path"], "content": read_text(resolved)}


def load_samples(task_ids: list[str]) -> list[dict]:
    where = "solutions.yaml"
    data = load_yaml(HERE / where)
    if not isinstance(data, list):
        raise PackError(f"{where}: must be a list")
    samples = []
    labels = set()
    for number, entry in enumerate(data, 1):
        here = f"{where} entry {number}"
        if not isinstance(entry, dict) or set(entry) != SAMPLE_KEYS:
            raise PackError(f"{here}: keys must be exactly {', '.join(sorted(SAMPLE_KEYS))}")
        task_id, label = entry["task_id"], entry["label"]
        if task_id not in task_ids:
            raise PackError(f"{here}: unknown task_id {task_id!r}")
        check_type(here, "label", label, str)
        if label == "baseline" or (task_id, label) in labels:
            raise PackError(f"{here}: label {label!r} is reserved or used twice for {task_id}")
        labels.add((task_id, label))
        check_outcome(here, "expect_no_gpu", entry["expect_no_gpu"])
        check_outcome(here, "expect_gpu", entry["expect_gpu"])
        if not isinstance(entry["files"], list) or not entry["files"]:
            raise PackError(f"{here}: files must be a non-empty list")
        samples.append(
            {
                "task_id": task_id,
                "label": label,
                "no_gpu": entry["expect_no_gpu"],
                "gpu": entry["expect_gpu"],
                "files": [sample_file(here, f) for f in entry["files"]],
            }
        )
    return samples


def jsonl_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def pretty_json(value) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def tar_gz(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="", compresslevel=9) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name in sorted(members):
                data = members[name]
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mtime = 0
                info.mode = 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.type = tarfile.REGTYPE
                tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def build() -> dict[str, bytes]:
    """Every output file name -> its exact bytes."""
    problems = load_problems()
    task_ids = [p["task_id"] for p in problems]
    baselines = load_baseline_expectations(task_ids)
    samples = load_samples(task_ids)

    problem_lines = [jsonl_line(p) for p in problems]
    problems_meta = {
        "release": RELEASE,
        "total_count": len(problems),
        "created_at": CREATED_AT,
        "description": PROBLEMS_DESCRIPTION,
        "task_id_hashes": {
            p["task_id"]: hashlib.md5(line.encode("utf-8")).hexdigest()
            for p, line in zip(problems, problem_lines)
        },
    }

    solution_lines = []
    expected = {}
    for problem in problems:
        task_id = problem["task_id"]
        entries = [
            {"label": "baseline", **baselines[task_id], "files": problem["baseline_solution"]["files"]}
        ]
        entries += [s for s in samples if s["task_id"] == task_id]
        for index, entry in enumerate(entries):
            solution_lines.append(jsonl_line(solution_record(task_id, entry["files"])))
            expected[f"{task_id}[{index}]"] = {
                "label": entry["label"],
                "no_gpu": entry["no_gpu"],
                "gpu": entry["gpu"],
            }
    solutions_meta = {
        "release": RELEASE,
        "total_count": len(solution_lines),
        "created_at": CREATED_AT,
        "description": SOLUTIONS_DESCRIPTION,
        "groups": sorted({p["group"] for p in problems}),
    }

    return {
        PROBLEMS_PACK: tar_gz(
            {
                "metadata.json": pretty_json(problems_meta),
                "problems.jsonl": "".join(problem_lines).encode("utf-8"),
            }
        ),
        SOLUTIONS_PACK: tar_gz(
            {
                "metadata.json": pretty_json(solutions_meta),
                "solutions.jsonl": "".join(solution_lines).encode("utf-8"),
            }
        ),
        EXPECTED_FILE: pretty_json(expected),
    }


def gunzip_or_none(data: bytes):
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 if the committed outputs differ from a fresh pack",
    )
    args = parser.parse_args(argv)

    try:
        outputs = build()
    except PackError as exc:
        print(f"pack.py: error: {exc}", file=sys.stderr)
        return 2

    if args.check:
        stale = []
        for name, data in outputs.items():
            path = HERE / name
            if not path.is_file():
                stale.append(f"{name}: missing")
                continue
            current = path.read_bytes()
            if current == data:
                continue
            why = "differs"
            if name.endswith(".gz") and gunzip_or_none(current) == gunzip_or_none(data):
                why = "same content, different compressed bytes (another zlib?)"
            stale.append(f"{name}: {why}")
        if stale:
            print("pack.py --check: outputs are stale; run `python datasets/computeeval/pack.py`:",
                  file=sys.stderr)
            for line in stale:
                print(f"  {line}", file=sys.stderr)
            return 1
        print(f"pack.py --check: {len(outputs)} outputs are up to date")
        return 0

    for name, data in outputs.items():
        path = HERE / name
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        print(f"{hashlib.sha256(data).hexdigest()}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
