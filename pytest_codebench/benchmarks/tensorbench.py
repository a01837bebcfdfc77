"""TensorBench: a model's patch to the Scorch repository, graded by Scorch's whole test suite.

One item per (task, prediction); predictions follow SWE-bench (``instance_id``,
``model_name_or_path``, ``model_patch``). Each item gets a work tree of the task's
``base_commit`` from a machine-wide mirror, applies the patch with SWE-bench's fallbacks, then
runs the task's commands in an environment the harness provisions once (a venv per set of
requirements, or an image under the Docker runner): the setup commands, the extension rebuild,
and the suite, whose own JUnit XML gives the verdict.

What makes a later task of a base commit cheap: the environment is built once, and a compiler
cache (ccache) shared by every item of the machine holds the extension's objects and the
kernels the suite compiles at run time. The cache is filled once per base commit by a run of
the unpatched tree (which also tells which tests fail before any patch) and is read-only to
the model's code, so that no item can plant objects another item will link.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import re
import shlex
import shutil
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from .. import __version__, junit
from ..benchmark import Benchmark, Case, Dataset, Summary
from ..checkout import Mirror, resolve_url
from ..errors import DatasetError, HarnessError
from ..metrics import describe_pass_at_k, pass_at_ks
from ..options import Option, bool_option
from ..patches import apply, confined, parse
from ..records import Line, read_records, require, sha256_file
from ..runners import PROVISION_SCRIPT, Environment, Runner, RunResult
from ..vacuous import vacuous_tests
from ..verdict import Outcome, Verdict
from ..workspace import UnsafePath

TESTBED = "testbed"  # the work tree, in the item's workspace (the official image's /testbed)
JUNIT = "junit.xml"
SHOWN_FAILURES = 20
# Where the official image keeps the repository; task commands and run_tests.sh name it.
OFFICIAL_TESTBED = re.compile(r"(?<![\w/])/testbed(?![\w-])")
CCACHE_WRAPPERS = Path("/usr/lib/ccache")  # Debian's compiler masquerade folder

PROVISION = """\
#!/bin/sh
# pytest-codebench: install a grading environment into $1 (a venv with the repository's
# requirements, torch pinned by constraints.txt when they require it).
set -eu
prefix=$1
{python} -m venv "$prefix"
"$prefix/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
set -- pytest
if [ -f requirements.txt ]; then set -- "$@" -r requirements.txt; fi
if [ -f constraints.txt ]; then set -- "$@" -c constraints.txt; fi
"$prefix/bin/python" -m pip install --quiet "$@"
"""

# An item's own venv, layered over the shared environment (a .pth file naming its packages,
# or the system's packages in an image from the dataset's Dockerfile): the patched package is
# installed (editable) there, so items never write into what they share.
OVERLAY = """\
set -eu
{python} -m venv --without-pip {system}.venv
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
{link}
# pip and pytest as commands, run by this venv's python: a script that says `pip install -e .`
# or `pytest` must neither write into the shared environment nor miss the item's install.
for tool in pip:pip pip3:pip pytest:pytest py.test:pytest; do
    printf '#!/bin/sh\nexec "$(dirname "$0")/python" -m %s "$@"\n' "${{tool#*:}}" > ".venv/bin/${{tool%%:*}}"
    chmod +x ".venv/bin/${{tool%%:*}}"
done
"""
LINK_ENV = """{python} -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$site/codebench-env.pth\""""

BUILD = "python -m pip install --quiet --no-deps --no-build-isolation -e ."
SUITE = "python -m pytest"


def _version(text: str) -> str:
    text = text.strip()
    if text.lower() in ("any", "none"):
        return ""
    return text if text[:1] in "=<>!~" else f"=={text}"


@dataclasses.dataclass(frozen=True)
class Step:
    """One command of an item and how its failure reads."""

    phase: str
    command: str
    failed: Outcome
    timed_out: Outcome


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
            return Verdict(Outcome.PATCH_FAILED, "the patch does not apply (git apply, --3way, --reject, patch --fuzz)", output_tail=tail, logs=logs)
        vacuous = vacuous_tests(tree, diff)
        environment, cache = self._environment(case, runner)
        base = self._baseline(case, runner, environment, cache)
        figures: dict[str, float | str] = {"patch_method": applied.method}
        if vacuous:
            figures["vacuous_tests"] = ", ".join(vacuous)
        verdict = self._run(case, workspace, runner, environment, cache, figures, logs, writable=False)
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

    def _steps(self, record: dict[str, Any]) -> list[Step]:
        """Setup commands, then the test command: the dataset's run_tests.sh as given, or the
        harness's own equivalent (rebuild the extension, then the whole suite) in two steps so
        that a build failure reads as one."""
        steps = [Step("setup", command, Outcome.SETUP_FAILED, Outcome.TEST_TIMEOUT) for command in record.get("setup_commands") or []]
        command = record["test_command"]
        if self.settings["run-tests"]:
            return [*steps, Step("test", command, Outcome.TEST_FAILED, Outcome.TEST_TIMEOUT)]
        if command.strip().endswith("run_tests.sh"):
            command = SUITE
        steps.append(Step("build", BUILD, Outcome.BUILD_ERROR, Outcome.BUILD_TIMEOUT))
        steps.append(Step("test", command, Outcome.TEST_FAILED, Outcome.TEST_TIMEOUT))
        return steps

    def _run(
        self,
        case: Case,
        workspace: Path,
        runner: Runner,
        environment: Environment,
        cache: Path | None,
        figures: dict[str, float | str],
        logs: dict[str, str],
        *,
        writable: bool,
    ) -> Verdict:
        """The item's commands in ``workspace`` (its tree at ``testbed``); the verdict."""
        record = case.record
        deadline = time.monotonic() + float(record["test_timeout"])
        if self.settings["run-tests"]:
            script = Path(self.settings["run-tests"]).read_text()
            target = workspace / TESTBED / "run_tests.sh"  # where the official image puts it
            target.write_text(OFFICIAL_TESTBED.sub("${CODEBENCH_TESTBED}", script))
            target.chmod(0o755)
        env = {"CCACHE_NOHASHDIR": "1", "PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        shared: dict[Path, bool] = {}
        if cache is not None:
            env["CCACHE_DIR"] = str(cache)
            if not writable:
                env["CCACHE_READONLY"] = "1"  # ccache reads any value as true, even "0"
            shared[cache] = writable
        overlay = self._overlay(environment)
        result = runner.run(overlay, cwd=workspace, timeout=120, env=env, environment=environment, shared=shared)
        if not result.ok:
            raise HarnessError(f"making the item's venv failed: {result.tail(10)}")

        def execute(phase: str, command: str) -> RunResult:
            (workspace / JUNIT).unlink(missing_ok=True)
            line = f"{PREAMBLE}cd testbed && {OFFICIAL_TESTBED.sub('${CODEBENCH_TESTBED}', command)}"
            remaining = max(deadline - time.monotonic(), 1)
            result = runner.run(line, cwd=workspace, timeout=remaining, env=env, environment=environment, shared=shared)
            logs[phase] = self.context.write_log(case, phase, result)
            figures[f"{phase}_seconds"] = round(result.seconds, 2)
            return result

        for step in self._steps(record):
            result = execute(step.phase, step.command)
            if result.timed_out:
                return Verdict.of_run(step.timed_out, f"{step.phase} ran past the task's test_timeout ({record['test_timeout']:g} s)", result, figures=figures, logs=logs)
            if step.phase == "test":
                verdict = self._suite_verdict(result, junit.read(workspace / JUNIT), figures, logs)
                if verdict.outcome is Outcome.TEST_FAILED and self.settings["reruns"]:
                    verdict = self._rerun(verdict, execute, workspace / JUNIT)
                return verdict
            if not result.ok:
                return Verdict.of_run(step.failed, f"{step.phase} failed: {step.command}", result, figures=figures, logs=logs)
        raise AssertionError("the steps end with the test step")

    def _rerun(self, verdict: Verdict, execute: Callable[[str, str], RunResult], junit_path: Path) -> Verdict:
        """Run the failed tests again, alone: those that pass now are flaky (Scorch has timing
        tests and unseeded random inputs). They are reported, and the verdict stands: the task
        asks for a suite that passes, as the official harness does."""
        failed = str(verdict.figures["failed_tests"]).splitlines()
        if not all("::" in test for test in failed):
            return verdict  # a collection error is not a test to select
        flaky: set[str] = set()
        for _ in range(self.settings["reruns"]):
            result = execute("rerun", SUITE + " " + " ".join(shlex.quote(test) for test in failed))
            report = junit.read(junit_path)
            if result.timed_out or report is None or report.tests != len(failed):
                break  # the rerun could not select exactly those tests: it says nothing
            flaky |= set(failed) - set(report.failed)
        if not flaky:
            return verdict
        listed = [test for test in failed if test in flaky]
        figures = {**verdict.figures, "flaky_tests": "\n".join(listed)}
        return dataclasses.replace(verdict, reason=f"{verdict.reason}; passed when run again (flaky): {', '.join(listed)}", figures=figures)

    @staticmethod
    def _suite_verdict(result: RunResult, report: junit.SuiteReport | None, figures: dict[str, Any], logs: dict[str, str]) -> Verdict:
        """The suite's JUnit XML, cross-checked with its exit code."""
        code = result.exit_code
        if report is None:
            return Verdict.of_run(Outcome.ERROR, f"the suite wrote no JUnit XML (exit {code}): it crashed or never started", result, figures=figures, logs=logs)
        figures.update(tests=report.tests, failures=len(report.failed))
        if report.failed:
            shown = report.failed[:SHOWN_FAILURES]
            more = f" and {len(report.failed) - len(shown)} more" if len(report.failed) > len(shown) else ""
            figures["failed_tests"] = "\n".join(report.failed)  # ids may hold ", " (parameters)
            if code == 0:
                return Verdict.of_run(Outcome.ERROR, f"exit 0, yet the JUnit XML has failures: {', '.join(shown)}", result, figures=figures, logs=logs)
            return Verdict.of_run(Outcome.TEST_FAILED, f"{len(report.failed)} of {report.tests} tests failed: {', '.join(shown)}{more}", result, figures=figures, logs=logs)
        if not report.ran:
            return Verdict.of_run(Outcome.ERROR, f"the suite ran no test ({report.tests} collected, {report.skipped} skipped; exit {code})", result, figures=figures, logs=logs)
        if code != 0:
            return Verdict.of_run(Outcome.ERROR, f"exit {code}, yet the JUnit XML shows no failure", result, figures=figures, logs=logs)
        return Verdict(Outcome.PASSED, f"{report.tests} tests passed ({report.skipped} skipped)", figures=figures, logs=logs)

    # -- environment and caches --------------------------------------------------------------------

    def _environment(self, case: Case, runner: Runner) -> tuple[Environment, Path | None]:
        """The environment for the case's base commit (provisioned once per machine) and the
        compiler cache that goes with it (None where there is no ccache)."""
        commit = case.record["base_commit"]
        recipe = self.context.run_dir / "recipes" / commit
        # The recipe reads the commit and probes the host: once per run and base commit, not
        # per item. Provisioning is once per run and key as well, so that a failure is
        # reported by every item at once instead of being tried again by each.
        key = self.context.once(f"recipe-{commit}", lambda: self._write_recipe(case, runner, recipe))
        environment = Environment(**self.context.once(f"env-{key}", lambda: dataclasses.asdict(runner.provision(key, recipe))))
        if runner.name == "local" and not CCACHE_WRAPPERS.is_dir():
            return environment, None  # no compiler cache on this machine: every item compiles
        cache = Path(self.settings["cache-dir"]) / "ccache" / key
        cache.mkdir(parents=True, exist_ok=True)
        return environment, cache

    def _write_recipe(self, case: Case, runner: Runner, folder: Path) -> str:
        """Write the recipe's files into ``folder``; returns the key that names the environment."""
        files = self._recipe(case, runner)
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            if not name.startswith("."):
                (folder / name).write_bytes(content)
        return hashlib.sha256(json.dumps({name: content.hex() for name, content in sorted(files.items())}).encode()).hexdigest()

    def _recipe(self, case: Case, runner: Runner) -> dict[str, bytes]:
        """The files that describe the environment; their hash names it. Dotted names only
        go into the hash: what the host is, since compiled objects (-march=native) and
        venvs do not travel between machines."""
        mirror = self.mirror(case.record)
        commit = case.record["base_commit"]
        files: dict[str, bytes] = {".harness": __version__.encode(), ".runner": runner.name.encode()}
        dockerfile = self.settings["tensorbench-dockerfile"]
        if dockerfile:
            files["Dockerfile"] = Path(dockerfile).read_bytes()
            return files
        python = "python3" if runner.name != "local" else self.settings["tensorbench-python"]
        files[PROVISION_SCRIPT] = PROVISION.format(python=python).encode()
        requirements = mirror.read(commit, "requirements.txt")
        if requirements is not None:
            files["requirements.txt"] = requirements.encode()
        if self.settings["torch"]:
            files["constraints.txt"] = f"torch{self.settings['torch']}\n".encode()
        files[".host"] = f"{platform.machine()} {_cpu_model()} {_python_version(python) if runner.name == 'local' else ''}".encode()
        return files

    def _overlay(self, environment: Environment) -> str:
        if environment.prefix:
            python = f"{environment.prefix}/bin/python"
            return OVERLAY.format(python=python, system="", link=LINK_ENV.format(python=python))
        return OVERLAY.format(python="python3", system="--system-site-packages ", link="")

    def _baseline(self, case: Case, runner: Runner, environment: Environment, cache: Path | None) -> dict[str, Any] | None:
        """Once per machine and base commit: the unpatched tree built and tested with the
        compiler cache writable, which fills it for every later item. Returns what it found
        (which tests fail before any patch), or None without a compiler cache."""
        if cache is None:
            return None
        commit = case.record["base_commit"]
        marker = cache / f"baseline-{commit}.json"
        with FileLock(str(marker) + ".lock"):
            if not marker.exists():
                workspace = self.context.run_dir / "baseline" / commit
                shutil.rmtree(workspace, ignore_errors=True)
                workspace.mkdir(parents=True)
                try:
                    self.mirror(case.record).worktree(commit, workspace / TESTBED)
                    base_case = dataclasses.replace(case, id=f"baseline-{commit[:12]}")
                    figures: dict[str, float | str] = {}
                    verdict = self._run(base_case, workspace, runner, environment, cache, figures, {}, writable=True)
                finally:
                    shutil.rmtree(workspace, ignore_errors=True)
                failed = str(verdict.figures.get("failed_tests", "")).splitlines()
                found = {"outcome": verdict.outcome.value, "failed": failed, "figures": figures}
                marker.write_text(json.dumps(found))
        return json.loads(marker.read_text())

    # -- results ---------------------------------------------------------------------------------

    def summarize(self, results: list[dict[str, Any]]) -> Summary:
        overall = pass_at_ks(results, self.settings["k"])
        lines = [describe_pass_at_k("all tasks:", overall)]
        vacuous = [f"{result['id']}: {result['figures']['vacuous_tests']}" for result in results if result["figures"].get("vacuous_tests")]
        if vacuous:
            lines.append("added tests that assert nothing: " + "; ".join(vacuous))
        pass1 = overall["pass@k"].get("1")
        return Summary(lines=lines, metrics={**overall, "vacuous": vacuous}, score=None if pass1 is None else 100 * pass1)


PREAMBLE = (
    # Paths as the commands see them (this machine or a container): the work tree is the
    # official image's /testbed, compilers go through ccache, and pytest writes JUnit XML.
    # Temporary files stay in the workspace too: kernels compiled at run time must be
    # loadable (a container's /tmp is noexec) and their paths the same for every item.
    'mkdir -p .tmp && export TMPDIR="$PWD/.tmp" CODEBENCH_TESTBED="$PWD/testbed" '
    'CCACHE_BASEDIR="$PWD" CCACHE_TEMPDIR="$PWD/.tmp/ccache" '
    f'PATH="$PWD/.venv/bin:{CCACHE_WRAPPERS}:$PATH" '
    f'PYTEST_ADDOPTS="--junitxml=$PWD/{JUNIT} -o junit_family=xunit1 -p no:cacheprovider"; '
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def _python_version(python: str) -> str:
    try:
        return subprocess.run([python, "-VV"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        raise HarnessError(f"--codebench-tensorbench-python: cannot run {python}") from None
