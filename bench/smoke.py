"""Every bench script at its smallest size, one after another: does each still measure what it names?

    python bench/smoke.py [--only NAME,...] [--list] [--strict]

A bench that stops measuring does not fail anything else: its items are skipped, a figure
is left out, a table comes out empty, and the script may still exit 0 (bench/overhead.py's
trivial tasks were refused by the main guard, every item skipped; pie_sandbox.py's default
trials were refused, and it printed an empty table and exited 0). Here each script runs
in a subprocess of its own, with its own flags at their smallest (fewest tasks, rounds,
repeats, one candidate of a sample), under a time limit, and passes only when it exits 0,
every key line it prints is there (a regular expression per line, the figures in it), and no
line says that items were skipped or nothing was graded. One line per script: its name, its
seconds, and ``measured``, ``FAILED (why)`` or ``not run here (why)``; then the tail of each
failed script's output. The exit status is 1 if any failed.

Scripts that cannot run on a CI machine (a GPU, a checkout of a GitHub repository) are listed
in :data:`NOT_RUN` with the reason, and run in the cheapest mode that still exercises them
where they have one (``computeeval_gpu.py --dry-run``). A script of bench/ that is neither
run nor listed fails the smoke, so that a new bench is not forgotten.

A script that needs what a machine may lack (a Docker engine that runs the base image,
Chromium, bubblewrap, nvcc, numpy, the commit speedup_calibration.py reads from git) is not
run where it is missing, with the reason, unless CI must have it: ``CODEBENCH_REQUIRE_DOCKER``,
``CODEBENCH_REQUIRE_CHROMIUM`` and ``CODEBENCH_REQUIRE_BWRAP`` (as .ci/run sets them) or
``--strict`` (every need) make it a failure instead. Nothing here reaches GitHub; the
TensorBench scripts install pytest and setuptools from PyPI into fresh environments, as the
plugin does.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smoke_table import BENCH, BENCHES, NEVER, NOT_RUN, ROOT, Bench, Need


def scripts() -> list[str]:
    return sorted(path.name for path in BENCH.glob("*.py"))


def required(need: Need, strict: bool) -> bool:
    """Whether this machine must have ``need`` (``--strict``, or the variable CI sets)."""
    return strict or bool(need.required and os.environ.get(need.required))


def unmet(bench: Bench, strict: bool) -> tuple[str | None, bool]:
    """Why ``bench`` cannot run here (None: it can), and whether that is a failure."""
    for need in bench.needs:
        why = need.missing()
        if why is not None:
            return why, required(need, strict)
    return None, False


def run(name: str, bench: Bench, strict: bool) -> tuple[str | None, str]:
    """Why the run of ``name`` failed (None: it measured what it names), and its output."""
    with tempfile.TemporaryDirectory(prefix=f"smoke-{name.removesuffix('.py')}-") as scratch:
        try:
            args = list(bench.args(Path(scratch)) if callable(bench.args) else bench.args)
        except Exception as exc:  # noqa: BLE001 - a preparation that failed is this bench's failure
            return f"its preparation failed: {exc}", ""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            [sys.executable, str(BENCH / name), *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=bench.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return f"still running after {bench.timeout:.0f} s", output
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    return verdict(output, process.returncode, bench, strict), output


def verdict(output: str, status: int, bench: Bench, strict: bool = False) -> str | None:
    """Why ``output`` (with exit ``status``) is not a run that measured what ``bench`` names."""
    if status != 0:
        return f"exit status {status}"
    for pattern in (*NEVER, *bench.refuse):
        found = re.search(pattern, output, re.MULTILINE)
        if found:
            return f"it printed {found.group(0)!r}"
    wanted = [pattern for need, pattern in bench.wants if need.missing() is None or required(need, strict)]
    missing = [pattern for pattern in (*bench.expect, *wanted) if not re.search(pattern, output, re.MULTILINE)]
    if missing:
        return f"no line matches {missing[0]!r}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
    return None


def command_line(name: str, bench: Bench) -> str:
    args = "<prepared>" if callable(bench.args) else shlex.join(bench.args)
    return f"python bench/{name} {args}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated script names (with or without .py)")
    parser.add_argument("--list", action="store_true", help="list each script and how it runs here, run nothing")
    parser.add_argument("--strict", action="store_true", help="fail, never skip, a script whose needs are missing")
    args = parser.parse_args()
    present = scripts()
    chosen = present
    if args.only:
        wanted = {name if name.endswith(".py") else f"{name}.py" for name in args.only.split(",") if name}
        unknown = wanted - set(present)
        if unknown:
            parser.error(f"--only: no such script in bench/: {', '.join(sorted(unknown))}")
        chosen = [name for name in present if name in wanted]
    width = max(len(name) for name in present)
    failed = []
    tails: list[str] = []
    started = time.perf_counter()
    for name in chosen:
        bench = BENCHES.get(name)
        if args.list:
            if bench is None and name not in NOT_RUN:
                failed.append(name)
            how = (
                command_line(name, bench) if bench else NOT_RUN.get(name, "FAILED: neither run nor listed in smoke.py")
            )
            note = f"  ({bench.note})" if bench and bench.note else ""
            print(f"{name:{width}}  {'run: ' if bench else 'not run: '}{how}{note}")
            continue
        if bench is None:
            if name in NOT_RUN:
                print(f"{name:{width}}      -  not run here ({NOT_RUN[name]})", flush=True)
            else:
                failed.append(name)
                print(f"{name:{width}}      -  FAILED (neither run nor listed in bench/smoke.py)", flush=True)
            continue
        why, fatal = unmet(bench, args.strict)
        if why is not None:
            if fatal:
                failed.append(name)
            print(f"{name:{width}}      -  {'FAILED' if fatal else 'not run here'} ({why})", flush=True)
            continue
        mark = time.perf_counter()
        why, output = run(name, bench, args.strict)
        seconds = time.perf_counter() - mark
        if why is None:
            print(f"{name:{width}} {seconds:6.1f}  measured", flush=True)
        else:
            failed.append(name)
            print(f"{name:{width}} {seconds:6.1f}  FAILED ({why})", flush=True)
            tail = "\n".join(f"    {line}" for line in output.rstrip().splitlines()[-25:])
            tails.append(f"{name}: {command_line(name, bench)}\n{tail}")
    stale = sorted((set(BENCHES) | set(NOT_RUN)) - set(present))
    for name in stale:
        failed.append(name)
        print(f"{name:{width}}      -  FAILED (listed in bench/smoke.py, but bench/ has no such script)")
    if args.list:
        return 1 if failed else 0
    print(f"{len(chosen)} scripts, {time.perf_counter() - started:.0f} s; failed: {', '.join(failed) or 'none'}")
    for tail in tails:
        print(f"\n{tail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
