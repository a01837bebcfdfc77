"""Reading NVIDIA's authoring format: a tree of problem folders, each with ``problem-spec.yaml``
and ``context/``, ``test/`` and ``solution/`` folders, into the problem records (with their
baseline solutions) a datapack's ``problems.jsonl`` holds.

Folders nest at any depth; a folder holding ``problem-spec.yaml`` is a problem, named as its
task_id with ``/`` written ``-`` (NVIDIA's ``data/loaders.py``). A spec is checked field by
field against NVIDIA's schema (``ProblemSpecBase``); its defects are errors naming the spec's
file, the line and the field, where NVIDIA's loader would stop the whole tree. A field NVIDIA's
schema does not know is dropped, as NVIDIA's loader drops it, with a warning; but one that is a
near miss of a known field is an error: a misspelt ``timeout_seconds`` would otherwise grade with
the default.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
import os
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_codebench.benchmarks.records import Line, load_yaml
from pytest_codebench.cases import Case
from pytest_codebench.errors import DatasetError

from ... import tree_files
from ...records import sha256_file
from .datapacks import read_problems
from .records import Problem, check_problem

SPEC = "problem-spec.yaml"
# A spec is a page of YAML; one past this is refused unread.
MAX_SPEC = 1 << 20
PATCH_SUFFIXES = (".patch", ".diff")
PROBLEM_TYPES = ("cuda_cpp", "cuda_python")
# NVIDIA's ValidGroup (data/data_model.py, 2026.2).
GROUPS = ("cuda-runtime", "cuda-kernels", "cccl", "cublas", "mathlibs", "cutile", "cutlass", "cute-dsl", "cudnn")
REQUIRED = ("task_id", "date", "prompt", "group", "metadata", "problem_type")
_TEXT = (str,)
_NUMBER = (int, float)
# Each field of ProblemSpecBase and the YAML values it takes (None is allowed where it is optional).
FIELDS: dict[str, tuple[type, ...]] = {
    "task_id": _TEXT,
    "date": _TEXT,
    "prompt": _TEXT,
    "group": _TEXT,
    "problem_type": _TEXT,
    "build_command": _TEXT,
    "test_command": _TEXT,
    "benchmark_command": _TEXT,
    "base_image": _TEXT,
    "timeout_seconds": _NUMBER,
    "source_references": (str, list, dict),
    "min_cuda_toolkit": _TEXT,
    "metadata": (dict,),
    "compute_capability": _TEXT,
    "requires_datacenter_gpu": (bool,),
    "timing_mode": (dict,),
    "arch_list": (list,),  # cuda_cpp only
    "schema_version": (int,),  # not in the spec's schema, but a problem record's own field
}
_NAMES = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "a mapping", bool: "true or false"}


def read_dataset(path: Path) -> tuple[dict[str, Problem], str | None, list[Case], str]:
    """The problems of a datapack, a ``problems.jsonl`` or a tree (see read_problems,
    read_tree), the release (None for a tree), the error cases and the dataset's sha256."""
    if is_tree(path):
        problems, broken = read_tree(path)
        return problems, None, broken, tree_hash(path)
    problems, release, broken = read_problems(path)
    return problems, release, broken, sha256_file(path)


def is_tree(path: Path) -> bool:
    """Whether ``path`` is a folder holding a problem folder."""
    return path.is_dir() and next(problem_folders(path), None) is not None


def tree_argument(config: pytest.Config) -> Path | None:
    """The tree named as pytest's argument (``pytest --codebench=computeeval problems/``): the
    first folder given that holds a problem folder; None when the arguments name none."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return None  # no paths given: pytest's own default is not a choice of dataset
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.partition("::")[0])
        if is_tree(path):
            return path.resolve()
    return None


def problem_folders(root: Path) -> Iterator[Path]:
    """Every problem folder under ``root``, depth first in name order (as NVIDIA's loader).
    ``root`` itself is never one: pytest imports the conftest.py of a folder given as its
    argument and of its ``test*`` folders, where a Python problem keeps its tests. No link is
    followed: a link to a folder is yielded as a problem folder, which read_problem refuses."""
    with os.scandir(root) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        folder = root / entry.name
        if entry.is_symlink():
            if entry.is_dir():
                yield folder
        elif entry.is_dir(follow_symlinks=False):
            if os.path.lexists(folder / SPEC):
                yield folder
            else:
                yield from problem_folders(folder)


def read_tree(root: Path) -> tuple[dict[str, Problem], list[Case]]:
    """The problems of the tree by task id (a defective one with its error, so that its items
    report it) and error cases for folders whose task id cannot be read or is taken."""
    problems: dict[str, Problem] = {}
    folders: dict[str, str] = {}
    broken: list[Case] = []
    for number, folder in enumerate(problem_folders(root), start=1):
        name = folder.relative_to(root).as_posix()
        record, error = read_problem(folder)
        task_id = record.get("task_id")
        if isinstance(task_id, str) and task_id in problems:
            error = f"{folder / SPEC}: field 'task_id': task {task_id!r} appears twice (also in {folders[task_id]})"
            task_id = None
        if not isinstance(task_id, str) or not task_id:
            broken.append(Case(id=name, task_id="", sample=0, error=error or "no task_id", line=number - 1))
            continue
        problems[task_id], folders[task_id] = Problem(record, number, error), name
    return problems, broken


def read_problem(folder: Path) -> tuple[dict[str, Any], str | None]:
    """The folder's problem record (what of it could be read) and why it cannot be graded."""
    spec = folder / SPEC
    record: dict[str, Any] = {}
    try:
        tree_files.check(folder)
        values, lines = _read_spec(spec)
        record["task_id"] = values.get("task_id") if isinstance(values.get("task_id"), str) else None
        _check_fields(spec, values, lines)
        record = _record(folder, values, lines)
        try:
            check_problem(Line(1, b"", record, None), str(spec))
        except DatasetError as exc:  # what grading needs of the record, placed in the spec
            field = exc.field or ""
            raise DatasetError(spec, exc.message, line=lines.get(field, 1), field=exc.field) from None
        record["baseline_solution"] = read_solution(folder, record)
    except DatasetError as exc:
        return record, str(exc)
    return record, None


def read_solution(folder: Path, record: dict[str, Any]) -> dict[str, Any]:
    """``solution/`` as a solution record: its files, or its one ``.patch``/``.diff``."""
    where = folder / "solution"
    if not tree_files.is_dir(where):
        raise DatasetError(where, "no solution folder (the reference answer goes there)")
    files = tree_files.files_under(where)
    patches = [p for p in files if p.suffix.lower() in PATCH_SUFFIXES]
    task_id = record["task_id"]
    if len(patches) == 1 and len(files) == 1:
        return {"type": "patch", "task_id": task_id, "patch": _text(patches[0])}
    if patches:
        names = ", ".join(p.relative_to(where).as_posix() for p in files)
        raise DatasetError(
            where, f"holds {names}: give either exactly one .patch/.diff and nothing else, or files without one"
        )
    if not files:
        raise DatasetError(where, "is empty: give the reference's files, or one .patch/.diff")
    solution = _files(where)
    tests = {f["path"] for f in record["test_files"]}
    clash = sorted(tests & {f["path"] for f in solution})
    if clash:
        raise DatasetError(where, f"{', '.join(clash)} would replace a test file")
    return {"schema_version": 1, "type": "file", "task_id": task_id, "files": solution}


def tree_hash(root: Path) -> str:
    """sha256 over every problem folder's files (relative path and content, in order)."""
    digest = hashlib.sha256()
    for folder in problem_folders(root):
        found = [(folder, os.lstat(folder))] if folder.is_symlink() else tree_files.walk(folder)
        for path, info in found:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            # A link (refused when read) is hashed by its target, never read through.
            data = tree_files.read_file(path) if stat.S_ISREG(info.st_mode) else _link_text(path)
            digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def _link_text(path: Path) -> bytes:
    try:
        return b"link\0" + os.fsencode(os.readlink(path))
    except OSError:
        return b"not a file\0"


def _read_spec(spec: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The spec's mapping and the line of each key; duplicate keys are refused."""
    try:
        text = tree_files.read_file(spec, MAX_SPEC).decode("utf-8")
        node, values = load_yaml(text)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DatasetError(spec, f"not valid YAML ({exc})", line=mark.line + 1 if mark else None) from None
    if not isinstance(node, yaml.MappingNode) or not isinstance(values, dict):
        raise DatasetError(spec, "expected a mapping of the problem's fields", line=1)
    lines: dict[str, int] = {}
    for key, _ in node.value:
        name = str(key.value)
        if name in lines:
            raise DatasetError(
                spec, f"given twice (first on line {lines[name]})", line=key.start_mark.line + 1, field=name
            )
        lines[name] = key.start_mark.line + 1
    return values, lines


def _check_fields(spec: Path, values: dict[str, Any], lines: dict[str, int]) -> None:
    """Raise DatasetError for the first defect of the spec's fields (in NVIDIA's schema); drop
    (with a warning) a field the schema does not know and that is no misspelling of one."""
    for name in [str(name) for name in values if str(name) not in FIELDS]:
        typo = difflib.get_close_matches(name, FIELDS, n=1, cutoff=0.8)
        if typo:
            raise DatasetError(spec, f"unknown field (did you mean {typo[0]!r}?)", line=lines[name], field=name)
        warnings.warn(
            pytest.PytestWarning(f"{spec}:{lines[name]}: field {name!r} is not in NVIDIA's schema; ignored"),
            stacklevel=2,
        )
        del values[name]
    for name in REQUIRED:
        if values.get(name) is None:
            raise DatasetError(spec, "missing: required", line=1, field=name)
    for name, value in values.items():
        types = FIELDS[name]
        wrong = value is not None and (not isinstance(value, types) or (bool not in types and isinstance(value, bool)))
        if wrong:
            hint = " (quote it)" if isinstance(value, (int, float, datetime.date)) and str in types else ""
            expected = " or ".join(dict.fromkeys(_NAMES[t] for t in types))
            raise DatasetError(spec, f"expected {expected}, got {value!r}{hint}", line=lines[name], field=name)
    choices = {"problem_type": PROBLEM_TYPES, "group": GROUPS}
    for name, allowed in choices.items():
        if values[name] not in allowed:
            raise DatasetError(
                spec, f"{values[name]!r} is not one of {', '.join(allowed)}", line=lines[name], field=name
            )
    arch = values.get("arch_list") or []
    if not all(isinstance(each, str) for each in arch):
        raise DatasetError(spec, "expected a list of strings", line=lines["arch_list"], field="arch_list")


def _record(folder: Path, values: dict[str, Any], lines: dict[str, int]) -> dict[str, Any]:
    """The record problems.jsonl would hold: problem_type as ``type``, the folders' files."""
    record = {name: value for name, value in values.items() if name != "problem_type"}
    record["type"] = values["problem_type"]
    record["context_files"] = _files(folder / "context")
    record["test_files"] = _files(folder / "test")
    expected = str(values["task_id"]).replace("/", "-")
    if folder.name.replace("/", "-") != expected:
        raise DatasetError(
            folder / SPEC,
            f"task_id {values['task_id']!r} does not match its folder {folder.name!r} (expected {expected!r})",
            line=lines["task_id"],
            field="task_id",
        )
    return record


def _files(folder: Path) -> list[dict[str, str]]:
    """The folder's files (relative paths, text), as a record's file list; none when it is absent."""
    if not tree_files.is_dir(folder):
        return []
    return [
        {"path": path.relative_to(folder).as_posix(), "content": _text(path)} for path in tree_files.files_under(folder)
    ]


def _text(path: Path) -> str:
    # NVIDIA's loader reads undecodable bytes as replacement characters, and so does this.
    return tree_files.read_file(path).decode("utf-8", errors="replace")
