"""Running a TensorBench work tree's commands and reading the verdict from its suite's JUnit XML.

A run (an item's patched tree, or the unpatched baseline that fills the compiler cache) is the
task's setup commands, the extension rebuild and the repository's own pytest suite, each
through the item's :class:`~pytest_codebench.grading.Grading`, in the workspace that holds the
tree at ``testbed``.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import shlex
import time
from pathlib import Path
from typing import Any

from pytest_codebench.errors import HarnessError
from pytest_codebench.grading import Grading, Step
from pytest_codebench.runners import RunHow, RunResult, Toolchain
from pytest_codebench.runners.quota import WORKSPACE_MAX_SIZE
from pytest_codebench.verdict import Outcome, Verdict

from . import additions, canary, twin, witness
from .cache import STATE, CompilerCache, statistics
from .files import fresh_folder, write_new
from .rules import suite_verdict, with_canaries, with_tripwires

TESTBED = "testbed"  # the work tree, in the item's workspace (the official image's /testbed)
REPORTS = f"{STATE}/report"  # the suite's JUnit XML and the witness's record: outside the tree, made anew per command
# Where the official image keeps the repository; task commands and run_tests.sh name it.
OFFICIAL_TESTBED = re.compile(r"(?<![\w/])/testbed(?![\w-])")
BUILD = "python -m pip install --quiet --no-deps --no-build-isolation -e ."
SUITE = "python -m pytest"
SHOWN = 5  # environment edits named in a reason


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
    printf '#!/bin/sh\\nexec "$(dirname "$0")/python" -m %s "$@"\\n' "${{tool#*:}}" > ".venv/bin/${{tool%%:*}}"
    chmod +x ".venv/bin/${{tool%%:*}}"
done
"""
LINK_ENV = """{python} -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$site/codebench-env.pth\""""

# Sourced by every command (this machine or a container), in the workspace. Paths as the
# commands see them: the work tree is the official image's /testbed and pytest writes JUnit
# XML. Temporary files stay in the workspace too: kernels compiled at run time must be
# loadable (a container's /tmp is noexec) and their paths the same for every item. The suite's
# rootdir is the work tree, whose own pytest configuration applies; STOP_INI ends pytest's
# search for one at the workspace, so none of the folders above it (the caller's checkout,
# with its addopts) is ever read. The harness's own reporting plugin (the witness) is loaded
# as $codebench_plugin (a name drawn per command) from $codebench_witness, a folder of the
# harness's outside the workspace, both set just before.
PREAMBLE = f"""\
# pytest-codebench: sourced before each command of this workspace.
mkdir -p .tmp {STATE}
export TMPDIR="$PWD/.tmp" CODEBENCH_TESTBED="$PWD/{TESTBED}" PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1
export PATH="$PWD/.venv/bin:$PATH"
export PYTHONPATH="$codebench_witness${{PYTHONPATH:+:$PYTHONPATH}}" {witness.ENV}="$PWD/{REPORTS}/witness.jsonl"
export PYTEST_ADDOPTS="--junitxml=$PWD/{REPORTS}/junit.xml -o junit_family=xunit1 -p no:cacheprovider \
--rootdir=$PWD/{TESTBED} -p $codebench_plugin"
"""
STOP_INI = "pytest.ini"  # in the workspace, the work tree's parent
STOP_INI_TEXT = """\
# pytest-codebench: pytest looks for its configuration from the work tree (testbed/) upwards.
# The repository's own (pytest.ini, pyproject.toml, tox.ini, setup.cfg...) is found first when
# it has one; otherwise the search ends here, at this empty one, and never reaches the folders
# above (the checkout that started the grading, with its own addopts).
[pytest]
"""


def steps(record: dict[str, Any], own_script: bool) -> list[Step]:
    """Setup commands, then the test command: the dataset's run_tests.sh as given
    (``own_script``), or the harness's own equivalent (rebuild the extension, then the whole
    suite) in two steps so that a build failure reads as one."""
    listed = [
        Step("setup", line, Outcome.SETUP_FAILED, Outcome.TEST_TIMEOUT) for line in record.get("setup_commands") or []
    ]
    command = record["test_command"]
    if own_script:
        return [*listed, Step("test", command, Outcome.TEST_FAILED, Outcome.TEST_TIMEOUT)]
    if command.strip().endswith("run_tests.sh"):
        command = SUITE
    listed.append(Step("build", BUILD, Outcome.BUILD_ERROR, Outcome.BUILD_TIMEOUT))
    listed.append(Step("test", command, Outcome.TEST_FAILED, Outcome.TEST_TIMEOUT))
    return listed


def overlay(environment: Toolchain) -> str:
    if environment.prefix:
        python = f"{environment.prefix}/bin/python"
        return OVERLAY.format(python=python, system="", link=LINK_ENV.format(python=python))
    return OVERLAY.format(python="python3", system="--system-site-packages ", link="")


@dataclasses.dataclass
class TreeRun:
    """The commands of the work tree in the grading's workspace, in ``environment`` and through
    ``cache`` (``writable``: whether they may fill it); each logs and counts in ``grading``."""

    grading: Grading
    environment: Toolchain
    cache: CompilerCache | None
    writable: bool = False
    #: The tree's test files (read before the build): every test in them is run again made to
    #: fail (twin). None: no canary run (the baseline, which runs no patch).
    tests: tuple[str, ...] | None = None
    deadline: float = dataclasses.field(default=0.0, init=False)  # of the task's test_timeout
    #: What the harness's reporting plugin saw of the test step, canaries left out (None: nothing).
    witnessed: witness.Witnessed | None = dataclasses.field(default=None, init=False)
    #: The canary tests written into the tree for the test step, and the plugin's last copy.
    canaries: canary.Canaries | None = dataclasses.field(default=None, init=False)
    installed: witness.Installed | None = dataclasses.field(default=None, init=False)
    twins: twin.Twins | None = dataclasses.field(default=None, init=False)
    plugins: str = dataclasses.field(default_factory=lambda: secrets.token_hex(8), init=False)
    #: The item's venv after the dataset's setup commands: what a later command adds is checked.
    venv: additions.Listing | None = dataclasses.field(default=None, init=False)
    #: What the plugin's tripwires named, in the test step and the canary run.
    tripped: tuple[str, ...] = dataclasses.field(default=(), init=False)

    @property
    def plugin(self) -> Path:
        """This run's folder of the plugin's copies, one per command."""
        folder = self.grading.context.run_dir / "witness" / self.plugins
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def shared(self) -> dict[Path, bool]:
        """Folders of this machine the commands see: the witness's (read-only) and the compiler
        cache (writable for the baseline alone; an item's copy is in its workspace). Never the
        environment, which items share."""
        shared = {self.plugin: False}
        if self.cache and not self.cache.copied:
            shared[self.cache.directory] = self.writable
        return checked_shared(shared, self.environment)

    def run(self, run_tests: str | None, reruns: int) -> Verdict:
        """The task's commands (with the dataset's ``run_tests`` script, if given); the verdict,
        with every figure and log of the grading."""
        grading, record = self.grading, self.grading.case.record
        self.deadline = time.monotonic() + float(record["test_timeout"])
        if run_tests:
            # Where the official image puts it; the patch may have put a link there.
            script = OFFICIAL_TESTBED.sub("${CODEBENCH_TESTBED}", Path(run_tests).read_text())
            write_new(grading.workspace, f"{TESTBED}/run_tests.sh", script.encode(), 0o755)
        if self.cache and self.cache.copies and not self.writable:
            # No command has run in the workspace yet: the copy goes where nothing was planted.
            self.cache = self.cache.copy_into(grading.workspace, grading.context.settings[WORKSPACE_MAX_SIZE])
        how: RunHow = {"toolchain": self.environment, "shared": self.shared}
        result = grading.runner.run(overlay(self.environment), cwd=grading.workspace, timeout=120, **how)
        if not result.ok:
            raise HarnessError(f"making the item's venv failed: {result.tail(10)}")
        verdict = self._steps(steps(record, bool(run_tests)), reruns)
        grading.figures.update(self._cache_figures())
        return grading.conclude(verdict)

    def _steps(self, listed: list[Step], reruns: int) -> Verdict:
        for step in listed:
            if step.phase != "setup" and self.venv is None and self.tests is not None:
                self.venv = additions.listing(self.grading.workspace)
            first = self._twin_first(step.command) if step.phase == "test" else None
            if isinstance(first, Verdict) and first.outcome is Outcome.TAMPERED:
                return first
            result = self.execute(step.phase, step.command)
            added = self._added(result)
            if added is not None:
                return added
            if result.timed_out:
                limit = self.grading.case.record["test_timeout"]
                return self.grading.verdict(
                    step.timed_out, f"{step.phase} ran past the task's test_timeout ({limit:g} s)", result
                )
            if step.phase == "test":
                verdict = with_tripwires(self._twin_run(step.command, self._judge(result), first), self.tripped, result)
                return self._rerun(verdict, reruns) if verdict.outcome is Outcome.TEST_FAILED and reruns else verdict
            if not result.ok:
                return self.grading.verdict(step.failed, f"{step.phase} failed: {step.command}", result)
        raise AssertionError("the steps end with the test step")

    def _judge(self, result: RunResult) -> Verdict:
        """The test step's verdict, from the witness's record (the JUnit XML adds failures),
        checked against the canary tests."""
        back = self._read_back()
        code = result.exit_code
        if back.refused:
            why = f"the suite's reports could not be read back: {'; '.join(back.refused)}"
            return Verdict.of_run(Outcome.TEST_FAILED, why, result)
        if back.witnessed is None:
            if back.suite is None:
                return suite_verdict(result, None)
            why = (
                f"the harness's reporting plugin recorded nothing, yet JUnit XML was written (exit {code}): "
                "the plugin was kept out or replaced, and the JUnit XML alone is not trusted"
            )
            return Verdict.of_run(Outcome.TAMPERED, why, result)
        if self.installed is None or not self.installed.wrote(back.witnessed):
            writers = ", ".join(module for _, module in back.witnessed.writers) or "nothing said"
            why = f"the suite's record was not written by the harness's reporting plugin ({writers}): it was replaced"
            return Verdict.of_run(Outcome.TAMPERED, why, result)
        self.witnessed = back.witnessed.without(self.canaries.ids() if self.canaries else set())
        self.tripped += back.witnessed.tripwires
        if back.witnessed.finished is None and back.suite is not None:
            # pytest writes its JUnit XML as the session ends, after the plugin's last record.
            why = (
                f"the harness's reporting plugin stopped recording, yet the suite went on to its end (exit {code}): "
                "the plugin was unregistered or cut off"
            )
            return Verdict.of_run(Outcome.TAMPERED, why, result)
        if back.witnessed.finished is None:
            why = f"the suite stopped before its end (exit {code}): the harness's reporting plugin never saw it finish"
            return Verdict.of_run(Outcome.ERROR, why, result)
        wrong = self.canaries.check(back.witnessed.outcomes) if self.canaries else []
        return with_canaries(suite_verdict(result, self.witnessed.report(back.suite)), wrong)

    def _twin_first(self, command: str) -> dict[str, str] | Verdict | None:
        """The canary run before the verdict run, where the item drew that order: its
        outcomes, or why they say nothing (None: no canary run first)."""
        self._plant()
        if self.twins is None or not self.twins.canary_first:
            return None
        return self._canary_run(command)

    def _canary_run(self, command: str) -> dict[str, str] | Verdict:
        """The test command again, the tree's tests made to fail: per test id its outcome
        (None where the suite's record says nothing), with the task's whole test_timeout."""
        deadline, started = self.deadline, time.monotonic()
        self.deadline = started + float(self.grading.case.record["test_timeout"])
        result = self.execute("canary", command)
        self.deadline = deadline + (time.monotonic() - started)  # the verdict run's time is its own
        added = self._added(result)
        if added is not None:
            return added
        back = self._read_back()
        seen = back.witnessed
        if result.timed_out or seen is None or self.installed is None or not self.installed.wrote(seen):
            why = "the canary run (the tree's tests made to fail) ran past the task's test_timeout or left no record"
            return Verdict.of_run(Outcome.ERROR, why, result)
        self.tripped += seen.tripwires
        return seen.outcomes

    def _twin_run(self, command: str, verdict: Verdict, ran: dict[str, str] | Verdict | None) -> Verdict:
        """The verdict, checked against the canary run (``ran``: its outcomes, where it went
        first). Only a passing verdict needs it: a run after the verdict's is skipped else."""
        if verdict.outcome is not Outcome.PASSED or self.twins is None or self.witnessed is None:
            return verdict
        canary_run = self._canary_run(command) if ran is None else ran
        if isinstance(canary_run, Verdict):
            return canary_run
        wrong = self.twins.check(self.witnessed.outcomes, canary_run)
        if self.canaries:
            wrong += self.canaries.check(canary_run)
        return with_canaries(verdict, wrong)

    def _added(self, result: RunResult) -> Verdict | None:
        """``tampered`` where the last command added to the item's venv what an editable install
        does not write (additions); None where it added nothing else."""
        if self.venv is None:
            return None
        found = additions.edits(self.grading.workspace, self.venv, TESTBED)
        if not found:
            return None
        self.grading.figures["harness_edits"] = "\n".join(found)
        shown = ", ".join(found[:SHOWN]) + (f" and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
        why = f"the patch's code changed the item's environment, which every later command starts from: {shown}"
        return Verdict.of_run(Outcome.TAMPERED, why, result)

    def _plant(self) -> None:
        """After the build, so no code of the patch ran while they were in the tree: the
        canary module, and the tests of the tree's test files found."""
        if self.canaries is None:
            self.canaries = canary.plant(self.grading.workspace, TESTBED)
            self.twins = twin.find(self.grading.workspace, TESTBED, self.tests) if self.tests is not None else None

    def _read_back(self) -> witness.ReadBack:
        """The test command's record and JUnit XML, the canary tests left out of the JUnit XML
        (the record keeps them until checked)."""
        back = witness.read(self.grading.workspace, REPORTS)
        if back.suite is None or self.canaries is None:
            return back
        ids = self.canaries.ids()
        suite = back.suite
        failed = [test for test in suite.failed if test not in ids]
        kept = dataclasses.replace(suite, tests=suite.tests - len(suite.failed) + len(failed), failed=failed)
        return dataclasses.replace(back, suite=kept)

    def execute(self, phase: str, command: str) -> RunResult:
        """One command in the work tree, after the preamble (and the compiler cache's lines)."""
        workspace = self.grading.workspace
        # The commands before this one ran the model's code in this workspace: whatever it left
        # at these names (a link to a host file, say) is removed, never written through.
        fresh_folder(workspace, REPORTS)
        write_new(workspace, STOP_INI, STOP_INI_TEXT.encode())
        if phase in ("test", "rerun", "canary"):
            self._plant()
        if self.twins and phase in ("test", "rerun", "canary"):
            self.twins.write(workspace, TESTBED, fail=phase == "canary")
        forgive = self.twins.ids() if self.twins else []
        self.installed = witness.install(self.plugin, self.canaries.settings(forgive) if self.canaries else {})
        where = f"codebench_witness={shlex.quote(str(self.plugin))} codebench_plugin={self.installed.module}\n"
        env = where + PREAMBLE + (self.cache.shell(self.writable) if self.cache else "")
        write_new(workspace, f"{STATE}/env.sh", env.encode())
        line = f". ./{STATE}/env.sh && cd {TESTBED} && {OFFICIAL_TESTBED.sub('${CODEBENCH_TESTBED}', command)}"
        remaining = max(self.deadline - time.monotonic(), 1)
        # The task's setup commands install what its suite needs (real Scorch's: pip install
        # pytest-xdist), as the official image's build does: they alone reach the network.
        how: RunHow = {"toolchain": self.environment, "shared": self.shared, "network": phase == "setup"}
        return self.grading.run(phase, line, timeout=remaining, **how)

    def _rerun(self, verdict: Verdict, reruns: int) -> Verdict:
        """Run the failed tests again, alone: those that pass now are flaky (Scorch has timing
        tests and unseeded random inputs). They are reported, and the verdict stands: the task
        asks for a suite that passes, as the official harness does."""
        failed = str(verdict.figures.get("failed_tests", "")).splitlines()
        if not failed or not all("::" in test for test in failed):
            return verdict  # a collection error is not a test to select
        flaky: set[str] = set()
        for _ in range(reruns):
            result = self.execute("rerun", SUITE + " " + " ".join(shlex.quote(test) for test in failed))
            back = self._read_back()
            seen = back.witnessed
            ours = seen is not None and self.installed is not None and self.installed.wrote(seen)
            canaries = self.canaries.ids() if self.canaries else set()
            report = seen.without(canaries).report(back.suite) if seen and ours and seen.finished is not None else None
            if result.timed_out or report is None or report.tests != len(failed):
                break  # the rerun could not select exactly those tests: it says nothing
            flaky |= set(failed) - set(report.failed)
        if not flaky:
            return verdict
        listed = [test for test in failed if test in flaky]
        self.grading.figures["flaky_tests"] = "\n".join(listed)
        return dataclasses.replace(
            verdict, reason=f"{verdict.reason}; passed when run again (flaky): {', '.join(listed)}"
        )

    def _cache_figures(self) -> dict[str, float | str]:
        """Which compiler cache the commands went through, and what it served them."""
        if self.cache is None:
            return {"compiler_cache": "none"}
        hits, misses = statistics(self.grading.workspace)
        return {"compiler_cache": self.cache.kind, "compiler_cache_hits": hits, "compiler_cache_misses": misses}


def checked_shared(shared: dict[Path, bool], environment: Toolchain) -> dict[Path, bool]:
    """``shared``, once sure that no folder writable by the commands holds the environment
    (or lies in it): items share it, so one item's write would judge the next ones."""
    if environment.prefix and environment.image is None:
        prefix = Path(environment.prefix).resolve()
        for folder, writable in shared.items():
            where = folder.resolve()
            if writable and (where == prefix or where in prefix.parents or prefix in where.parents):
                raise HarnessError(f"{folder} would be writable to the commands, and it holds the environment {prefix}")
    return shared
