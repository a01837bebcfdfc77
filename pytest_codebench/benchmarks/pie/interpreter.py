"""The interpreter PIE's Python programs run with, and what its start-up costs.

PIE runs each program as ``python FILE``, a plain interpreter as a user's PATH finds it, and
times the whole process: start-up is in every time, and so in every speedup. The interpreter
running pytest is not a plain one: an editable install of the plugin puts a finder in a ``.pth``
file that runs at every start (67.7 ms a start in the sandbox against 32.7 ms for the system's
python3, in issue 35's trial, which turned a mean speedup of 2.233x into 1.759x).

So where commands run this machine's programs (the local runner), the default interpreter is a
clean one of the same version: a virtual environment of the interpreter behind pytest's
(``sys._base_executable``), made once in the cache folder. ``site`` runs there, as it does for
PIE's users (``exit()`` and ``quit()``, which CodeNet's programs call, come from it; ``python -S``
would drop them), but no ``.pth`` file of the harness's environment does: its one ``.pth`` file
names the harness's site-packages folders as plain paths, so that a program imports what it
could import before (numpy, where the harness's environment has it; PIE's users run
``run_eval.py``, with pandas and numpy, from the environment their programs run in) while the
``.pth`` files in those folders (an editable install's finder) never run. The sandbox shows its
folder read-only (``folders``). Where commands run in a container, the image's ``python3``: the
image has no harness in it. ``--codebench-python`` names another.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import shlex
import sys
import sysconfig
import venv
from pathlib import Path

from filelock import FileLock

from pytest_codebench.runners import Runner

# The cache folder's subfolder of clean interpreters, one per base interpreter and version.
CLEAN = "pie-python"
# The start-ups the header's probe times (the median is shown), each a whole process as PIE times it.
PROBES = 9
PROBE = (
    "import subprocess, sys, time\n"
    "runs = []\n"
    "for _ in range(int(sys.argv[2])):\n"
    "    start = time.perf_counter()\n"
    "    subprocess.run([sys.argv[1], '-c', 'pass'], check=True)\n"
    "    runs.append(time.perf_counter() - start)\n"
    "print(round(sorted(runs)[len(runs) // 2] * 1000, 1))\n"
)


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """What runs the Python programs: the command, what it is (for the header), and the host
    folders the sandbox must show for it (read-only)."""

    python: str
    what: str
    folders: tuple[str, ...] = ()


def programs_python(runner: Runner, given: str | None, cache_dir: str) -> Interpreter:
    """The interpreter for PIE's Python programs: ``given`` (``--codebench-python``), else a
    clean one (:func:`clean_python`) where commands run this machine's programs, else the
    runner's own (a container's ``python3``)."""
    if given:
        return Interpreter(given, "--codebench-python")
    if not runner.host_programs:
        return Interpreter(runner.python, f"the {runner.name} runner's own")
    base = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    try:
        python = clean_python(Path(cache_dir), base)
    except OSError as exc:  # a cache folder it cannot write: the harness's own, said so
        return Interpreter(runner.python, f"the harness's own (no clean one could be made: {exc})")
    what = f"Python {platform.python_version()}, a clean environment of {base} without the harness's site hooks"
    return Interpreter(str(python), what, (str(python.parent.parent),))


def clean_python(cache_dir: Path, base: str) -> Path:
    """A virtual environment of ``base`` (made once, under a file lock, for every process of
    every run) whose one ``.pth`` file names this interpreter's site-packages folders as plain
    paths (never processed for ``.pth`` files of their own), and its interpreter."""
    packages = sorted({sysconfig.get_path(name) for name in ("purelib", "platlib")})
    tag = hashlib.sha256("\0".join([base, sys.version, *packages]).encode()).hexdigest()[:12]
    folder = cache_dir / CLEAN / f"{platform.python_version()}-{tag}"
    python, done = folder / "bin" / "python", folder / ".complete"
    if done.exists():
        return python
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not done.exists():
            # venv takes sys._base_executable, the interpreter behind pytest's environment.
            venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt", clear=True).create(folder)
            own = Path(venv_site_packages(folder))
            (own / "_codebench_harness_packages.pth").write_text("".join(f"{path}\n" for path in packages))
            done.write_text(base + "\n")
    return python


def startup_ms(runner: Runner, interpreter: Interpreter, folder: Path) -> float | None:
    """The median start-up of ``interpreter`` (ms), each a whole process started from Python
    as PIE starts its programs, timed where the programs run (in the sandbox); None where the
    probe failed."""
    folder.mkdir(parents=True, exist_ok=True)
    python = shlex.quote(interpreter.python)
    command = f"{python} -c {shlex.quote(PROBE)} {python} {PROBES}"
    shared = {Path(path): False for path in interpreter.folders}
    result = runner.run(command, cwd=folder, timeout=120, shared=shared)
    try:
        return float(result.output.strip().splitlines()[-1]) if result.ok else None
    except (IndexError, ValueError):
        return None


def venv_site_packages(folder: Path) -> str:
    """The site-packages folder of the virtual environment at ``folder``."""
    return sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)})
