"""TensorBench: a model's patch to the Scorch repository, graded by Scorch's whole test suite.

One item per (task, prediction); predictions follow SWE-bench (``instance_id``,
``model_name_or_path``, ``model_patch``). Each item gets a work tree of the task's
``base_commit`` from a machine-wide mirror, applies the patch with SWE-bench's fallbacks, then
runs the task's commands in an environment the harness provisions once (a venv per set of
requirements, or an image under the Docker runner): the setup commands, the extension rebuild,
and the suite, whose own JUnit XML gives the verdict.

What makes a later task of a base commit cheap: the environment is built once, and a compiler
cache (ccache or sccache) shared by every item of the machine holds the extension's objects and
the kernels the suite compiles at run time (tensorbench_env, tensorbench_cache). Running the
commands and reading the suite's verdict: tensorbench_suite.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..benchmark import Benchmark, Case, Dataset, Summary
from ..checkout import Mirror, resolve_url
from ..errors import DatasetError
from ..metrics import describe_pass_at_k, pass_at_ks
from ..options import Option, bool_option
from ..patches import apply, confined, parse
from ..records import Line, read_records, require, sha256_file
from ..runners import Runner, RunResult
from ..vacuous import vacuous_tests
from ..verdict import Outcome, Verdict
from ..workspace import UnsafePath
from .tensorbench_cache import CACHE_HINT, CHOICES
from .tensorbench_env import Provisioner
from .tensorbench_suite import TESTBED, TreeRun


def _version(text: str) -> str:
    text = text.strip()
    if text.lower() in ("any", "none"):
        return ""
    return text if text[:1] in "=<>!~" else f"=={text}"


def _cache_choice(text: str) -> str:
    if text.strip().lower() not in CHOICES:
        raise ValueError(f"expected one of {', '.join(CHOICES)}, not {text!r}")
    return text.strip().lower()


class TensorBench(Benchmark):
    name = "tensorbench"
    default_dataset = "tensorbench/tensorbench.json"
    options = (
        Option("reruns", "Run failed tests again up to N times to report the flaky ones (the verdict stands).", default=1, parse=int, metavar="N"),
        bool_option("fail-vacuous", "Fail items whose patch adds tests that assert nothing (else they are only listed)."),
        Option(
            "torch",
            "Torch version installed where a repository requires torch (a pip constraint); 'any' leaves it free.",
            default="==2.13.0",
            parse=_version,
            metavar="VERSION",
        ),
        Option("tensorbench-python", "Python that local environments are made with.", default="python3.11", metavar="PATH"),
        Option(
            "run-tests",
            "The dataset's run_tests.sh, run as the tasks' test_command (default: the harness's own: rebuild, then pytest).",
            metavar="PATH",
        ),
        Option(
            "tensorbench-dockerfile",
            "The dataset's Dockerfile: environment images are built from it (FROM ${BASE}) under the Docker runner.",
            metavar="PATH",
        ),
        Option(
            "compiler-cache",
            "Compiler cache items compile through: auto (ccache where the commands run, else sccache), ccache, sccache or none.",
            default="auto",
            parse=_cache_choice,
            metavar="KIND",
        ),
    )

    # -- reading -----------------------------------------------------------------------------

    def load(self) -> Dataset:
        path = self.dataset_path()
        tasks: dict[str, tuple[dict[str, Any], int, str | None]] = {}
        for line in read_records(str(path), path.read_bytes()):
            record = line.value or {}
            try:
                if line.error is not None:
                    raise line.error
                task_id = require(record, "instance_id", str, str(path), line.number)
                self._check_task(record, str(path), line)
            except DatasetError as exc:
                key = record.get("instance_id") if isinstance(record.get("instance_id"), str) else f"{path.name}:{line.number}"
                tasks[key] = (record, line.number, str(exc))
                continue
            if task_id in tasks:
                tasks[task_id] = (record, line.number, str(DatasetError(path, f"instance_id {task_id!r} is given twice", line=line.number)))
                continue
            tasks[task_id] = (record, line.number, None)
        order = {task_id: index for index, task_id in enumerate(tasks)}
        cases = []
        numbers: dict[str, int] = defaultdict(int)
        for task_id, prediction, number, error in self._predictions(path, tasks):
            sample = numbers[task_id]
            numbers[task_id] += 1
            record, task_line, task_error = tasks.get(task_id, ({}, 0, None))
            cases.append(self._case(task_id, sample, record, prediction, number or task_line, task_error or error))
        cases.sort(key=lambda case: (order.get(case.task_id, len(order)), case.sample))
        return Dataset(str(path), sha256_file(path), None, cases)

    @staticmethod
    def _check_task(record: dict[str, Any], label: str, line: Line) -> None:
        for field, kind in (("repo_url", str), ("base_commit", str), ("test_command", str), ("test_timeout", (int, float))):
            require(record, field, kind, label, line.number)
        if not re.fullmatch(r"[0-9a-fA-F]{7,40}", record["base_commit"]):
            raise DatasetError(label, "not a commit SHA", line=line.number, field="base_commit")
        commands = record.get("setup_commands") or []
        if not isinstance(commands, list) or not all(isinstance(command, str) for command in commands):
            raise DatasetError(label, "expected a list of strings", line=line.number, field="setup_commands")

    def _predictions(self, dataset: Path, tasks: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], int, str | None]]:
        """(instance id, prediction, line, error) for every prediction, in file order."""
        path = Path(self.settings["solutions"] or dataset.with_name("predictions.jsonl"))
        if not path.exists():
            raise DatasetError(path, "--codebench-solutions: no such file")
        for line in read_records(str(path), path.read_bytes()):
            record = line.value or {}
            instance = record.get("instance_id")
            name = instance if isinstance(instance, str) else f"{path.name}:{line.number}"
            try:
                if line.error is not None:
                    raise line.error
                require(record, "instance_id", str, str(path), line.number)
                require(record, "model_patch", (str, type(None)), str(path), line.number)
                if instance not in tasks:
                    raise DatasetError(path, f"unknown instance_id {instance!r}: no such task in {dataset.name}", line=line.number, field="instance_id")
            except DatasetError as exc:
                yield name, record, line.number, str(exc)
                continue
            yield name, record, line.number, None

    def _case(self, task_id: str, sample: int, record: dict[str, Any], prediction: dict[str, Any], line: int, error: str | None) -> Case:
        timeout = float(record.get("test_timeout") or 3000)
        commit = str(record.get("base_commit", ""))
        return Case(
            id=f"{task_id}[{sample}]",
            task_id=task_id,
            sample=sample,
            record=record,
            solution=prediction,
            group=commit[:12] or None,
            # The backstop: the first item of a base commit may also provision its
            # environment and fill the compiler cache (one run of the unpatched suite).
            timeout=4 * timeout + 3600,
            error=error,
            line=max(line - 1, 0),
        )

    def marks(self, case: Case) -> list[pytest.MarkDecorator]:
        # Under --dist loadgroup, a base commit's items share a worker and its warm caches.
        return [pytest.mark.xdist_group(case.group)] if case.group else []

    # -- checkout and patch ----------------------------------------------------------------------

    def mirror(self, record: dict[str, Any]) -> Mirror:
        """The mirror of ``--codebench-repo`` (a path relative to where pytest was started),
        or of the task's ``repo_url`` (a path relative to the dataset)."""
        given = self.settings["repo"]
        if given:
            url = resolve_url(given, self.context.config.invocation_params.dir)
        else:
            url = resolve_url(record["repo_url"], self.dataset_path().parent)
        return Mirror(url, Path(self.settings["cache-dir"]))

    def prepare(self, case: Case, workspace: Path) -> str | None:
        self.mirror(case.record).worktree(case.record["base_commit"], workspace / TESTBED)
        patch = (case.solution or {}).get("model_patch") or ""
        (workspace / "model.patch").write_text(patch if patch.endswith("\n") or not patch else patch + "\n")
        try:
            confined(workspace / TESTBED, parse(patch))
        except UnsafePath as exc:
            return f"the patch writes outside the repository: {exc}"
        return None

    # -- grading ---------------------------------------------------------------------------------

    def grade(self, case: Case, workspace: Path, rejected: str | None, runner: Runner) -> Verdict:
        if rejected is not None:
            return Verdict(Outcome.INVALID_SOLUTION, rejected)
        diff = parse((case.solution or {}).get("model_patch") or "")
        if diff.empty:
            return Verdict(Outcome.EMPTY_PATCH, "the prediction's model_patch is empty")
        tree = workspace / TESTBED
        applied = apply(tree, workspace / "model.patch")
        logs = {"patch": self._log(case, "patch", applied.log)}
        if applied.method is None:
            tail = "\n".join(applied.log.splitlines()[-15:])
            return Verdict(Outcome.PATCH_FAILED, applied.reason, output_tail=tail, logs=logs)
        vacuous = vacuous_tests(tree, diff)
        provisioner = Provisioner(self.context, self.mirror)
        environment, cache = provisioner.environment(case, runner)
        base = provisioner.baseline(case, runner, environment, cache)
        run = TreeRun(self.context, case, workspace, runner, environment, cache, figures={"patch_method": applied.method}, logs=logs)
        if vacuous:
            run.figures["vacuous_tests"] = ", ".join(vacuous)
        verdict = run.run(self.settings["run-tests"], self.settings["reruns"])
        if verdict.outcome is Outcome.TEST_FAILED and base and base.get("failed"):
            known = sorted(set(str(verdict.figures.get("failed_tests", "")).splitlines()) & set(base["failed"]))
            if known:
                verdict = dataclasses.replace(verdict, reason=f"{verdict.reason}; already failing at the base commit: {', '.join(known)}")
        if verdict.outcome is Outcome.PASSED and vacuous:
            reason = f"{len(vacuous)} added test(s) assert nothing: {', '.join(vacuous)}"
            outcome = Outcome.VACUOUS_TESTS if self.settings["fail-vacuous"] else Outcome.PASSED
            verdict = dataclasses.replace(verdict, outcome=outcome, reason=f"{verdict.reason}; {reason}")
        return verdict

    def _log(self, case: Case, phase: str, text: str) -> str:
        return self.context.write_log(case, phase, RunResult(command=phase, exit_code=0, timed_out=False, seconds=0, output=text))

    # -- results ---------------------------------------------------------------------------------

    def summarize(self, results: list[dict[str, Any]]) -> Summary:
        overall = pass_at_ks(results, self.settings["k"])
        lines = [describe_pass_at_k("all tasks:", overall)]
        vacuous = [f"{result['id']}: {result['figures']['vacuous_tests']}" for result in results if result["figures"].get("vacuous_tests")]
        if vacuous:
            lines.append("added tests that assert nothing: " + "; ".join(vacuous))
        caches = self._caches(results)
        lines += [self._cache_line(kind, figures) for kind, figures in caches.items()]
        pass1 = overall["pass@k"].get("1")
        return Summary(lines=lines, metrics={**overall, "vacuous": vacuous, "compiler_cache": caches}, score=None if pass1 is None else 100 * pass1)

    @staticmethod
    def _caches(results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
        """Per compiler cache kind: the items that compiled through it, its hits and misses."""
        caches: dict[str, Counter[str]] = defaultdict(Counter)
        for result in results:
            figures = result["figures"]
            if "compiler_cache" in figures:
                caches[figures["compiler_cache"]].update(items=1, hits=int(figures.get("compiler_cache_hits", 0)), misses=int(figures.get("compiler_cache_misses", 0)))
        return {kind: dict(counts) for kind, counts in caches.items()}

    def _cache_line(self, kind: str, figures: dict[str, int]) -> str:
        if kind != "none":
            return f"compiler cache: {kind} for {figures['items']} item(s): {figures['hits']} hits, {figures['misses']} misses"
        why = "--codebench-compiler-cache none" if self.settings["compiler-cache"] == "none" else f"neither ccache nor sccache works where the commands run: {CACHE_HINT}"
        return f"compiler cache: NONE for {figures['items']} item(s): each compiled everything from scratch ({why})"

