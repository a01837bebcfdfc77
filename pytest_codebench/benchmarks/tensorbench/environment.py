"""Where TensorBench items run: the environment of a base commit (provisioned once per
machine), the compiler cache that goes with it, and the baseline run that fills that cache.

The baseline runs once per machine, base commit and environment, with or without a compiler
cache: it tells which tests fail before any patch and which pass (each must run and be reported
in a patched run), and fills the cache, the one run that writes into it. No item's code can write
into what another item reads: the cache is mounted read-only (ccache) or each item gets a copy
of its own (sccache; tensorbench.cache). The baseline's record and the locks are the harness's
own, under the cache directory in a folder of this user's (0700) that no command ever sees, read
and written without following a link, whole or not at all.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from filelock import FileLock

from pytest_codebench import __version__
from pytest_codebench.cases import Case
from pytest_codebench.context import RunContext
from pytest_codebench.errors import HarnessError
from pytest_codebench.grading import Grading
from pytest_codebench.once import lock_folder, write_atomically
from pytest_codebench.options import CACHE_DIR, REPO
from pytest_codebench.runners import PROVISION_SCRIPT, Runner, Toolchain
from pytest_codebench.workspace.checkout import Mirror, resolve_url

from .cache import CompilerCache, choose, probe
from .files import Unreadable, read_back
from .options import COMPILER_CACHE, RUN_TESTS, TENSORBENCH_DOCKERFILE, TENSORBENCH_PYTHON, TORCH
from .suite import PREAMBLE, TESTBED, TreeRun

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


# The harness's own records, under the cache directory, one folder per environment: never a
# folder any command sees (the compiler caches beside it are mounted one by one).
RECORDS = "tensorbench-records"
RECORD_LIMIT = 64 << 20


class Baseline(TypedDict):
    """What the unpatched tree's run found, kept beside the compiler cache it filled."""

    outcome: str
    #: The tests that fail before any patch.
    failed: list[str]
    #: The tests that pass before any patch: each must run and be reported in a patched run.
    passed: list[str]
    #: The hook functions the tree defines (``file:hook``), as the harness's plugin found them.
    hooks: list[str]
    figures: dict[str, float | str]


def mirror(context: RunContext, record: dict[str, Any], dataset_dir: Path) -> Mirror:
    """The mirror of ``--codebench-repo`` (a path relative to where pytest was started), or of
    the task's ``repo_url`` (a path relative to the dataset's folder)."""
    given = context.settings[REPO]
    if given:
        url = resolve_url(given, context.config.invocation_params.dir)
    else:
        url = resolve_url(record["repo_url"], dataset_dir)
    return Mirror(url, Path(context.settings[CACHE_DIR]))


@dataclasses.dataclass(frozen=True)
class Provisioner:
    """The environment, compiler cache and baseline of each base commit, once per run (or
    machine), for the items of a TensorBench run of the dataset in ``dataset_dir``."""

    context: RunContext
    dataset_dir: Path
    #: Per base commit, the time limit of its baseline (load.baseline_limits); else the item's.
    limits: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def key(self, case: Case, runner: Runner) -> str:
        """The key that names the environment of the case's base commit."""
        commit = case.record["base_commit"]
        recipe = self.context.run_dir / "recipes" / commit
        # The recipe reads the commit and asks where commands run: once per run and base
        # commit, not per item.
        key: str = self.context.once(f"recipe-{commit}", lambda: self._write_recipe(case, runner, recipe))
        return key

    def environment(self, case: Case, runner: Runner) -> tuple[Toolchain, CompilerCache | None]:
        """The environment for the case's base commit (provisioned once per machine) and the
        compiler cache that goes with it (None where there is none)."""
        key = self.key(case, runner)
        # Provisioning is once per run and key, so that a failure is reported by every item at
        # once instead of being tried again by each.
        recipe = self.context.run_dir / "recipes" / case.record["base_commit"]
        made = self.context.once(f"env-{key}", lambda: dataclasses.asdict(runner.provision(key, recipe)))
        environment = Toolchain(**made)
        return environment, self._compiler_cache(key, runner, environment)

    def _compiler_cache(self, key: str, runner: Runner, environment: Toolchain) -> CompilerCache | None:
        """The cache of the environment ``key``: what works where the commands run, asked
        there once per run and environment (a container's image may differ from this host)."""
        setting = self.context.settings[COMPILER_CACHE]

        def find() -> tuple[str, str]:
            if setting == "none":
                return "none", ""
            return choose(setting, probe(runner, environment, self.context.run_dir / "probes" / key[:16]))

        kind, program = self.context.once(f"compiler-cache-{key}", find)
        if kind == "none":
            return None
        directory = Path(self.context.settings[CACHE_DIR]) / kind / key
        directory.mkdir(parents=True, exist_ok=True)
        return CompilerCache(kind, program, directory)

    def _write_recipe(self, case: Case, runner: Runner, folder: Path) -> str:
        """Write the recipe's files into ``folder``; returns the key that names the environment."""
        files = self._recipe(case, runner)
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            if not name.startswith("."):
                (folder / name).write_bytes(content)
        hexed = {name: content.hex() for name, content in sorted(files.items())}
        return hashlib.sha256(json.dumps(hexed).encode()).hexdigest()

    def _recipe(self, case: Case, runner: Runner) -> dict[str, bytes]:
        """The files that describe the environment; their hash names it. Dotted names only
        go into the hash: where the commands run and with which Python, since compiled
        objects (-march=native) and venvs do not travel between machines."""
        settings, commit = self.context.settings, case.record["base_commit"]
        files: dict[str, bytes] = {".harness": __version__.encode()}
        dockerfile = settings[TENSORBENCH_DOCKERFILE]
        if dockerfile:
            files["Dockerfile"] = Path(dockerfile).read_bytes()
            return files
        # The setting names a Python of this machine: commands that run elsewhere (a
        # container) make environments with the Python they find there.
        python = settings[TENSORBENCH_PYTHON] if runner.host_programs else runner.python
        files[PROVISION_SCRIPT] = PROVISION.format(python=python).encode()
        requirements = mirror(self.context, case.record, self.dataset_dir).read(commit, "requirements.txt")
        if requirements is not None:
            files["requirements.txt"] = requirements.encode()
        if settings[TORCH]:
            files["constraints.txt"] = f"torch{settings[TORCH]}\n".encode()
        files[".host"] = f"{runner.fingerprint()} {self._python_version(runner, python, commit)}".encode()
        return files

    def _python_version(self, runner: Runner, python: str, commit: str) -> str:
        """``python -VV`` where the commands run: a venv is made for that Python alone."""
        folder = self.context.run_dir / "probes" / f"python-{commit}"
        folder.mkdir(parents=True, exist_ok=True)
        result = runner.run(f"{shlex.quote(python)} -VV", cwd=folder, timeout=60)
        if not result.ok:
            raise HarnessError(
                f"{TENSORBENCH_PYTHON.cli}: cannot run {python} where the commands run: {result.tail(5)}"
            )
        return result.output.strip()

    def baseline(self, case: Case, runner: Runner, environment: Toolchain, cache: CompilerCache | None) -> Baseline:
        """Once per machine, base commit and environment: the unpatched tree built and tested
        (with the compiler cache writable, which fills it for every later item). Returns what it
        found: the tests that fail before any patch, and those that pass."""
        commit, run_tests = case.record["base_commit"], self.context.settings[RUN_TESTS]
        limit = self.limits.get(commit, case.record["test_timeout"])
        case = dataclasses.replace(case, record={**case.record, "test_timeout": limit})
        # Named after how commands go through the cache as well: a harness that compiles
        # another way (other wrappers, paths, settings) would never hit what this one stored.
        # And after what the tree runs: another test command compiles other kernels, and its
        # tests that fail before any patch are other tests.
        steps = json.dumps([case.record.get("setup_commands"), case.record["test_command"], run_tests], default=str)
        through = cache.shell(writable=True) if cache else "no compiler cache"
        layout = hashlib.sha256((PREAMBLE + through + steps).encode()).hexdigest()[:12]
        records = lock_folder(Path(self.context.settings[CACHE_DIR]) / RECORDS / self.key(case, runner))
        name = f"baseline-{commit}-{layout}.json"
        # sccache's local storage takes one writing server at a time: its baselines take turns
        # (later ones then hit what the first compiled); ccache takes concurrent writers.
        lock = f"{cache.kind}.lock" if cache and cache.kind == "sccache" else f"baseline-{commit}.lock"
        with FileLock(str(records / lock)):
            stored = _read_record(records, name)
            if stored is not None:
                return stored
            found, seen = self._run_baseline(case, runner, environment, cache)
            if seen:
                write_atomically(records / name, json.dumps(found))
            # Else the suite never ran (a setup command that could not reach the network, say):
            # nothing was filled or learnt, and the next item tries again rather than every
            # later run trusting an empty baseline.
            return found

    def _run_baseline(
        self, case: Case, runner: Runner, environment: Toolchain, cache: CompilerCache | None
    ) -> tuple[Baseline, bool]:
        """The unpatched tree's run: what it found, and whether its suite ran at all."""
        commit = case.record["base_commit"]
        workspace = self.context.run_dir / "baseline" / commit
        shutil.rmtree(workspace, ignore_errors=True)
        workspace.mkdir(parents=True)
        try:
            mirror(self.context, case.record, self.dataset_dir).worktree(commit, workspace / TESTBED)
            grading = Grading(self.context, dataclasses.replace(case, id=f"baseline-{commit[:12]}"), workspace, runner)
            tree = TreeRun(grading, environment, cache, writable=True)
            verdict = tree.run(self.context.settings[RUN_TESTS], reruns=0)
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
        seen = tree.witnessed
        found = Baseline(
            outcome=verdict.outcome.value,
            failed=str(verdict.figures.get("failed_tests", "")).splitlines(),
            passed=[test for test, outcome in seen.outcomes.items() if outcome == "passed"] if seen else [],
            hooks=list(seen.hooks) if seen else [],
            figures=verdict.figures,
        )
        return found, seen is not None


def _read_record(records: Path, name: str) -> Baseline | None:
    """The baseline stored in ``records``: None where there is none (or not one to trust: it is
    run again, and the record replaced)."""
    try:
        data = read_back(records, name, RECORD_LIMIT)
        stored: Baseline | None = None if data is None else json.loads(data)
    except (Unreadable, ValueError):
        return None
    if not isinstance(stored, dict) or not all(field in stored for field in Baseline.__annotations__):
        return None
    return stored


# The local runner's mark of a finished environment (runners/local.py): written last, so
# nothing in the environment is newer unless something changed it afterwards.
DONE = ".codebench-done"
SHOWN = 5


def check_environment(environment: Toolchain) -> None:
    """Raise :class:`HarnessError` when the shared environment of this machine changed after
    it was provisioned (a file written, added or removed in it: its inode changed after the
    mark): an item's code wrote into it, and every later item would be judged by that code.
    The mark is removed, so that the next run provisions the environment anew."""
    if not environment.prefix or environment.image is not None:
        return  # an image's: read-only to the commands
    prefix = Path(environment.prefix)
    try:
        done = (prefix / DONE).lstat().st_ctime_ns
    except OSError:
        return  # not one the local runner made
    changed = []
    for folder, folders, files in os.walk(prefix):
        for name in [*folders, *files]:
            path = Path(folder) / name
            try:
                if path.lstat().st_ctime_ns > done:
                    changed.append(str(path.relative_to(prefix)))
            except OSError:
                changed.append(str(path.relative_to(prefix)))
    try:
        if prefix.lstat().st_ctime_ns > done:
            changed.append(".")
    except OSError:
        pass
    if changed:
        (prefix / DONE).unlink(missing_ok=True)
        shown = ", ".join(sorted(changed)[:SHOWN]) + (
            f" and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
        )
        raise HarnessError(
            f"the shared environment {prefix} changed after it was provisioned ({shown}): graded code wrote "
            "into it, so it cannot judge this item; the next run provisions it anew"
        )
