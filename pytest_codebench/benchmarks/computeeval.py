"""ComputeEval (NVIDIA): CUDA problems in datapacks, graded by building and running held-out tests.

A problem datapack is a ``.tar.gz`` holding ``metadata.json`` and ``problems.jsonl`` (or a bare
``problems.jsonl``); solutions come as a ``-solutions.tar.gz`` datapack, a ``.jsonl`` file, or
``baseline`` (each problem's reference answer). See ``datasets/computeeval/README.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import cuda
from ..benchmark import Benchmark, Case, Dataset, RunContext, Summary
from ..errors import DatasetError
from ..metrics import describe_pass_at_k, pass_at_ks
from ..once import SlotPool
from ..options import bool_option
from ..records import Line, archive_members, file_list, is_archive, optional, read_jsonl, require, sha256_file
from ..runners import Runner, RunResult
from ..sourcecode import missing_references
from ..verdict import Outcome, Verdict
from ..workspace import UnsafePath, guarded_paths, normalise, write_file

DEFAULT_TIMEOUT = 60.0
MACHINE_KEY = "computeeval-machine"
# pytest-timeout's backstop sits this far above an item's own budget.
BACKSTOP_SLACK = 30.0
# What a CUDA program or PyTorch prints when it cannot reach a GPU: the machine's fault.
NO_GPU_OUTPUT = re.compile(
    r"CUDA driver version is insufficient|no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE"
    r"|cudaErrorNoDevice|cudaErrorInsufficientDriver|Found no NVIDIA driver|No CUDA GPUs are available"
    r"|Torch not compiled with CUDA enabled"
)
# About 50 real test harnesses print a SKIP line and exit 0 when the GPU or a library is too old.
SKIP_LINE = re.compile(r"^\W*(skip(ped|ping)?\b|tests? skipped\b)", re.IGNORECASE | re.MULTILINE)
# The oldest harnesses exit with this code for "skipped (architecture)".
SKIP_EXIT_CODE = 200


@dataclasses.dataclass(frozen=True)
class _Problem:
    record: dict[str, Any]
    line: int
    error: str | None  # set when the record is invalid or fails its integrity check


def _check_problem(line: Line, label: str) -> None:
    if line.error is not None:
        raise line.error
    record, number = line.value or {}, line.number
    require(record, "task_id", str, label, number)
    require(record, "test_command", str, label, number)
    optional(record, "build_command", str, label, number)
    optional(record, "timeout_seconds", (int, float), label, number)
    for field in ("min_cuda_toolkit", "compute_capability", "group", "type"):
        optional(record, field, str, label, number)
    file_list(record, "test_files", label, number)
    if record.get("context_files") is not None:
        file_list(record, "context_files", label, number)


def _check_solution(line: Line, label: str, problems: dict[str, _Problem]) -> None:
    if line.error is not None:
        raise line.error
    record, number = line.value or {}, line.number
    task_id = require(record, "task_id", str, label, number)
    if task_id not in problems:
        raise DatasetError(label, f"{task_id!r} is not a task of the dataset", line=number, field="task_id")
    kind = record.get("type", "file")
    if kind != "file":
        raise DatasetError(label, f"solution type {kind!r} is not supported (only 'file')", line=number, field="type")
    file_list(record, "files", label, number)


def _hash_mismatch(task_id: str, line: Line, hashes: dict[str, Any]) -> str | None:
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


class ComputeEval(Benchmark):
    name = "computeeval"
    default_dataset = "computeeval/sample-problems.tar.gz"
    options = (
        bool_option(
            "run-without-gpu",
            "Run test commands even without a usable CUDA GPU (for host-only test programs).",
        ),
        bool_option("gpu-share", "Let tests of several items use one GPU at the same time."),
    )

    def __init__(self, context: RunContext) -> None:
        super().__init__(context)
        self._machine: dict[str, Any] | None = None

    # -- loading --------------------------------------------------------------------------------

    def load(self) -> Dataset:
        path = self.dataset_path()
        problems, release, broken = self._read_problems(path)
        order = {task_id: index for index, task_id in enumerate(problems)}
        numbers: dict[str, int] = defaultdict(int)
        cases = []
        for task_id, solution, line, error in self._samples(problems):
            sample = numbers[task_id]
            numbers[task_id] += 1
            problem = problems.get(task_id)
            error = (problem.error if problem else None) or error  # a broken task breaks its samples
            cases.append(self._case(task_id, sample, problem, solution, line, error))
        cases.sort(key=lambda case: (order.get(case.task_id, len(order)), case.sample))
        return Dataset(str(path), sha256_file(path), release, broken + cases)

    def _samples(self, problems: dict[str, _Problem]) -> Iterator[tuple[str, dict[str, Any], int, str | None]]:
        """(task id, solution, line, error) for every sample, in the order they were given."""
        solutions = self.settings["solutions"] or "baseline"
        if solutions == "baseline":
            for task_id, problem in problems.items():
                solution = problem.record.get("baseline_solution")
                missing = None if isinstance(solution, dict) else f"{task_id} has no baseline_solution"
                yield task_id, solution or {}, problem.line, missing
            return
        path = Path(solutions)
        if not path.exists():
            raise DatasetError(path, "--codebench-solutions: no such file")
        if is_archive(path):
            data = archive_members(path, ["solutions.jsonl"])["solutions.jsonl"]
            label = f"{path}:solutions.jsonl"
        else:
            data, label = path.read_bytes(), str(path)
        for line in read_jsonl(label, data):
            record = line.value or {}
            task_id = record.get("task_id")
            name = task_id if isinstance(task_id, str) else f"{path.name}:{line.number}"
            try:
                _check_solution(line, label, problems)
            except DatasetError as error:
                yield name, {}, line.number, str(error)
                continue
            yield name, record, line.number, None

    def _read_problems(self, path: Path) -> tuple[dict[str, _Problem], str | None, list[Case]]:
        """Problems by task id in file order, the release, and cases for unreadable lines."""
        if is_archive(path):
            members = archive_members(path, ["metadata.json", "problems.jsonl"])
            label = f"{path}:problems.jsonl"
            metadata = self._metadata(path, members["metadata.json"])
            data = members["problems.jsonl"]
        else:
            label, metadata, data = str(path), {}, path.read_bytes()
        hashes = metadata.get("task_id_hashes")
        problems: dict[str, _Problem] = {}
        broken: list[Case] = []
        for line in read_jsonl(label, data):
            task_id = (line.value or {}).get("task_id")
            try:
                _check_problem(line, label)
                if task_id in problems:
                    raise DatasetError(label, f"task {task_id!r} appears twice", line=line.number, field="task_id")
                mismatch = None if hashes is None else _hash_mismatch(task_id, line, hashes)
                error = None if mismatch is None else str(DatasetError(label, mismatch, line=line.number))
            except DatasetError as exc:
                if not isinstance(task_id, str) or task_id in problems:
                    broken.append(Case(id=f"problems.jsonl:{line.number}", task_id="", sample=0, error=str(exc), line=line.number - 1))
                    continue
                error = str(exc)
            problems[task_id] = _Problem(line.value or {}, line.number, error)
        return problems, metadata.get("release"), broken

    @staticmethod
    def _metadata(path: Path, data: bytes) -> dict[str, Any]:
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

    def _case(
        self,
        task_id: str,
        sample: int,
        problem: _Problem | None,
        solution: dict[str, Any],
        line: int,
        error: str | None,
    ) -> Case:
        record = problem.record if problem else {}
        timeout = float(record.get("timeout_seconds") or DEFAULT_TIMEOUT)
        budget = 2 * timeout  # build and test get one timeout each
        # Under xdist an item may queue for a build slot or the GPU behind every other worker.
        waits = (self.context.workers - 1) * budget
        return Case(
            id=f"{task_id}[{sample}]",
            task_id=task_id,
            sample=sample,
            record=record,
            solution=solution,
            group=record.get("group"),
            timeout=budget + waits + BACKSTOP_SLACK,
            error=error,
            line=line - 1,
        )

    # -- workspace ------------------------------------------------------------------------------

    def prepare(self, case: Case, workspace: Path) -> str | None:
        """Context files, then the solution's files, then the held-out tests, written last
        so that nothing the solution names can replace them."""
        record, label = case.record, f"task {case.task_id}"
        try:
            context = [(normalise(f["path"]), f["content"]) for f in record.get("context_files") or ()]
            tests = [(normalise(f["path"]), f["content"]) for f in record["test_files"]]
        except UnsafePath as exc:
            raise DatasetError(label, f"a problem file path is unsafe: {exc}") from None
        for path, content in context:
            write_file(workspace, path, content)
        rejected = None
        files = (case.solution or {}).get("files", [])
        try:
            paths = guarded_paths([f["path"] for f in files], [path for path, _ in tests])
            for path, entry in zip(paths, files, strict=True):
                write_file(workspace, path, entry["content"])
        except UnsafePath as exc:
            rejected = f"solution file {exc}"
        try:
            for path, content in tests:
                write_file(workspace, path, content)
        except UnsafePath as exc:
            raise DatasetError(label, f"cannot write a held-out test: {exc}") from None
        return rejected

    # -- grading --------------------------------------------------------------------------------

    def grade(self, case: Case, workspace: Path, rejected: str | None, runner: Runner) -> Verdict:
        record = case.record
        if rejected is not None:
            return Verdict(Outcome.INVALID_SOLUTION, rejected)
        files = {f["path"]: f["content"] for f in (case.solution or {}).get("files", [])}
        try:
            missing = missing_references(files, record.get("source_references"))
        except ValueError as exc:
            raise DatasetError(f"task {case.task_id}", str(exc), field="source_references") from None
        if missing:
            return Verdict(Outcome.MISSING_API, "; ".join(missing))
        machine = self.machine(runner)
        unmet = self._unmet_requirement(record, machine)
        if unmet is not None:
            return Verdict(Outcome.SKIPPED, unmet)

        timeout = float(record.get("timeout_seconds") or DEFAULT_TIMEOUT)
        wait = case.timeout or timeout
        figures: dict[str, float] = {}
        logs: dict[str, str] = {}
        build = record.get("build_command")
        if build:
            with self._build_slots.acquire(wait):
                result = runner.run(build, cwd=workspace, timeout=timeout)
            figures["build_seconds"] = round(result.seconds, 3)
            logs["build"] = self.context.write_log(case, "build", result)
            if not result.ok:
                outcome = Outcome.BUILD_TIMEOUT if result.timed_out else Outcome.BUILD_ERROR
                reason = f"build exceeded {timeout:g} s" if result.timed_out else "build failed"
                return Verdict.of_run(outcome, reason, result, figures=figures, logs=logs)

        gpus = machine["gpu"].get("gpus") or []
        if not gpus and not self.settings["run-without-gpu"]:
            built = f"build ok in {figures['build_seconds']:.1f} s" if build else "nothing to build"
            why = machine["gpu"].get("error") or "none found"
            return Verdict(Outcome.SKIPPED, f"no usable CUDA GPU; {built} ({why})", figures=figures, logs=logs)
        with self._gpu(gpus, wait) as gpu:
            result = runner.run(record["test_command"], cwd=workspace, timeout=timeout, gpu=gpu)
        figures["test_seconds"] = round(result.seconds, 3)
        logs["test"] = self.context.write_log(case, "test", result)
        return self._judge_test(result, bool(gpus), figures, logs, timeout)

    @staticmethod
    def _judge_test(
        result: RunResult, have_gpu: bool, figures: dict[str, float], logs: dict[str, str], timeout: float
    ) -> Verdict:
        if result.timed_out:
            return Verdict.of_run(Outcome.TEST_TIMEOUT, f"test exceeded {timeout:g} s", result, figures=figures, logs=logs)
        no_gpu = NO_GPU_OUTPUT.search(result.output)
        if result.exit_code != 0 and no_gpu:
            # Never the model's failure: the test could not reach a GPU.
            if have_gpu:
                return Verdict.of_run(Outcome.ERROR, f"the test could not use the GPU: {no_gpu.group(0)}", result, figures=figures, logs=logs)
            return Verdict(Outcome.SKIPPED, f"no usable CUDA GPU; the test reported {no_gpu.group(0)!r}", figures=figures, logs=logs)
        if result.exit_code == SKIP_EXIT_CODE:
            return Verdict(Outcome.SKIPPED, f"the test exited {SKIP_EXIT_CODE} (skipped)", figures=figures, logs=logs)
        skip = SKIP_LINE.search(result.output)
        if result.exit_code == 0 and skip:
            line = result.output[skip.start() :].splitlines()[0].strip()
            return Verdict(Outcome.SKIPPED, f"the test skipped itself: {line}", figures=figures, logs=logs)
        if result.exit_code == 0:
            return Verdict(Outcome.PASSED, figures=figures, logs=logs)
        return Verdict.of_run(Outcome.TEST_FAILED, "test failed", result, figures=figures, logs=logs)

    # -- the machine ----------------------------------------------------------------------------

    def machine(self, runner: Runner) -> dict[str, Any]:
        """The toolkit and the GPUs that ``runner``'s commands get, probed once per run for
        every process of it."""
        if self._machine is None:
            config = self.context.config

            def probe() -> dict[str, Any]:
                workdir = self.context.run_dir / "probe"
                workdir.mkdir(exist_ok=True)
                return {
                    "toolkit": cuda.probe_toolkit(runner, workdir),
                    "gpu": config.hook.pytest_codebench_probe_gpus(config=config),
                }

            self._machine = self.context.once(MACHINE_KEY, probe)
        return self._machine

    def report_info(self) -> dict[str, Any]:
        return self.context.stored(MACHINE_KEY) or {}

    def _unmet_requirement(self, record: dict[str, Any], machine: dict[str, Any]) -> str | None:
        """Why this machine cannot grade the problem, checked before building."""
        toolkit = machine["toolkit"]
        needed = record.get("min_cuda_toolkit")
        build = record.get("build_command") or ""
        if "error" in toolkit:
            if needed or re.search(r"\bnvcc\b", build):
                return toolkit["error"]
        elif needed and cuda.version_tuple(toolkit["version"]) < cuda.version_tuple(needed):
            return f"requires CUDA toolkit >= {needed}; nvcc here is {toolkit['version']}"
        else:
            for library in re.findall(r"(?<!\S)-l(\w+)", build):
                if not cuda.has_library(toolkit, library):
                    return f"the CUDA toolkit here has no lib{library} (the build links -l{library})"
        gpus = machine["gpu"].get("gpus")
        if gpus:
            capability = record.get("compute_capability")
            best = max(cuda.version_tuple(gpu["compute_capability"]) for gpu in gpus)
            if capability and best < cuda.version_tuple(capability):
                return f"requires compute capability {capability}; the GPU here has {'.'.join(map(str, best))}"
            if record.get("requires_datacenter_gpu") and not any(cuda.is_datacenter(g["name"]) for g in gpus):
                return f"requires a data-centre GPU; here: {', '.join(g['name'] for g in gpus)}"
        return None

    @functools.cached_property
    def _build_slots(self) -> SlotPool:
        jobs = self.settings["build-jobs"]
        return SlotPool(self.context.lock_dir, "build", [str(i) for i in range(jobs)])

    @contextlib.contextmanager
    def _gpu(self, gpus: list[dict[str, Any]], wait: float) -> Iterator[str | None]:
        """The GPU a test may use: one of its own (a machine-wide lock per GPU), or None when
        there is none or the user lets tests share."""
        if not gpus or self.settings["gpu-share"]:
            yield None
            return
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else [str(gpu["index"]) for gpu in gpus]
        with SlotPool(self.context.lock_dir, "gpu", ids[: len(gpus)]).acquire(wait) as gpu:
            yield gpu

    # -- metrics --------------------------------------------------------------------------------

    def summarize(self, results: list[dict[str, Any]]) -> Summary:
        ks = self.settings["k"]
        overall = pass_at_ks(results, ks)
        lines = [describe_pass_at_k("all problems:", overall)]
        groups: dict[str, Any] = {}
        by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for result in results:
            by_group[result.get("group") or "(no group)"].append(result)
        for group, members in sorted(by_group.items()):
            groups[group] = pass_at_ks(members, ks)
            lines.append(describe_pass_at_k(f"  {group}:", groups[group]))
        if overall["excluded"]:
            lines.append("left out of pass@k (no graded sample): " + ", ".join(overall["excluded"]))
        pass1 = overall["pass@k"].get("1")
        return Summary(
            lines=lines,
            metrics={**overall, "groups": groups},
            score=None if pass1 is None else 100 * pass1,
        )
