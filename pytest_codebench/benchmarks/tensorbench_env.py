"""Where TensorBench items run: the environment of a base commit (provisioned once per
machine), the compiler cache that goes with it, and the baseline run that fills that cache.

The cache is filled once per base commit by a run of the unpatched tree (which also tells
which tests fail before any patch) and is read-only to the model's code, so that no item can
plant objects another item will link.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from .. import __version__
from ..benchmark import Case, RunContext
from ..checkout import Mirror
from ..errors import HarnessError
from ..runners import PROVISION_SCRIPT, Environment, Runner
from .tensorbench_cache import CompilerCache, choose, probe
from .tensorbench_suite import PREAMBLE, TESTBED, TreeRun

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


class Provisioner:
    """The environment, compiler cache and baseline of each base commit, once per run (or
    machine), for the items of a TensorBench run."""

    def __init__(self, context: RunContext, mirror: Callable[[dict[str, Any]], Mirror]) -> None:
        self.context = context
        self.settings = context.settings
        self.mirror = mirror

    def environment(self, case: Case, runner: Runner) -> tuple[Environment, CompilerCache | None]:
        """The environment for the case's base commit (provisioned once per machine) and the
        compiler cache that goes with it (None where there is none)."""
        commit = case.record["base_commit"]
        recipe = self.context.run_dir / "recipes" / commit
        # The recipe reads the commit and probes the host: once per run and base commit, not
        # per item. Provisioning is once per run and key as well, so that a failure is
        # reported by every item at once instead of being tried again by each.
        key = self.context.once(f"recipe-{commit}", lambda: self._write_recipe(case, runner, recipe))
        environment = Environment(**self.context.once(f"env-{key}", lambda: dataclasses.asdict(runner.provision(key, recipe))))
        return environment, self._compiler_cache(key, runner, environment)

    def _compiler_cache(self, key: str, runner: Runner, environment: Environment) -> CompilerCache | None:
        """The cache of the environment ``key``: what works where the commands run, asked
        there once per run and environment (a container's image may differ from this host)."""
        setting = self.settings["compiler-cache"]

        def find() -> tuple[str, str]:
            if setting == "none":
                return "none", ""
            return choose(setting, probe(runner, environment, self.context.run_dir / "probes" / key[:16]))

        kind, program = self.context.once(f"compiler-cache-{key}", find)
        if kind == "none":
            return None
        directory = Path(self.settings["cache-dir"]) / kind / key
        directory.mkdir(parents=True, exist_ok=True)
        return CompilerCache(kind, program, directory)

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

    def baseline(self, case: Case, runner: Runner, environment: Environment, cache: CompilerCache | None) -> dict[str, Any] | None:
        """Once per machine and base commit: the unpatched tree built and tested with the
        compiler cache writable, which fills it for every later item. Returns what it found
        (which tests fail before any patch), or None without a compiler cache."""
        if cache is None:
            return None
        commit = case.record["base_commit"]
        # Named after how commands go through the cache as well: a harness that compiles
        # another way (other wrappers, paths, settings) would never hit what this one stored.
        # And after what the tree runs: another test command compiles other kernels, and its
        # tests that fail before any patch are other tests.
        steps = json.dumps([case.record.get("setup_commands"), case.record["test_command"], self.settings["run-tests"]], default=str)
        layout = hashlib.sha256((PREAMBLE + cache.shell(writable=True) + steps).encode()).hexdigest()[:12]
        marker = cache.directory / f"baseline-{commit}-{layout}.json"
        with FileLock(str(cache.baseline_lock(commit))):
            if not marker.exists():
                workspace = self.context.run_dir / "baseline" / commit
                shutil.rmtree(workspace, ignore_errors=True)
                workspace.mkdir(parents=True)
                try:
                    self.mirror(case.record).worktree(commit, workspace / TESTBED)
                    base_case = dataclasses.replace(case, id=f"baseline-{commit[:12]}")
                    run = TreeRun(self.context, base_case, workspace, runner, environment, cache, writable=True)
                    verdict = run.run(self.settings["run-tests"], reruns=0)
                finally:
                    shutil.rmtree(workspace, ignore_errors=True)
                failed = str(verdict.figures.get("failed_tests", "")).splitlines()
                found = {"outcome": verdict.outcome.value, "failed": failed, "figures": verdict.figures}
                marker.write_text(json.dumps(found))
        return json.loads(marker.read_text())


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
        return subprocess.run([python, "-VV"], check=False, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        raise HarnessError(f"--codebench-tensorbench-python: cannot run {python}") from None
