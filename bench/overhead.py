"""What the plugin costs per item, measured side by side with a bare loop in one run.

    python bench/overhead.py [--tasks 300] [--collect 10000] [--rounds 5] [--store] [--breakdown]
                             [--against PYTHON] [--profile PATH]

Grading: N trivial tasks through ``pytest --codebench=computeeval`` against a bare loop doing
the same work: a fresh workspace of the task's 3 files, its build command (``true``) and its
test command (``python3 test/test_main.py``, a script that does nothing), each through
``sh -c`` (what any harness must do; NVIDIA's does). The tasks are ``cuda_python`` ones, the
lightest a real problem can be: the plugin runs a Python test's script under the main guard's
Python runner (``python3`` in the command is a shell function that starts the script under
``guard/pyrunner.py``), whose records prove the script ran to its end; a test command that
starts no ``python``/``python3`` script proves nothing and is refused (tampered, and so is the
reference: every item would be skipped). A passing item also pays for its canary run
(``guard/pycanary.py``: a fresh workspace, the build and the test once more), the plugin's
own cost, shown apart against twice the bare loop. The interpreter running this script is
first on ``PATH`` for every way (:func:`python_first`): ``python3`` is then the same program
everywhere, never a tool manager's shim (pyenv's added 70 ms to each start where this was
measured). Fixed costs
(interpreter and pytest start-up) cancel out by timing two sizes: per item = (T(2N) - T(N)) / N.
Each plugin run has a run folder of its own (under the default one, each run removes the logs
of the run ten runs back: a cost of keeping ten runs, not of grading this one's items), and
must pass every item (any skip or failure stops the bench: it would time nothing).

Side by side, each way timed next to the others in every round:

- the headline, unconfined: the plugin with ``--codebench-sandbox none`` against the bare
  loop (``subprocess.run(["/bin/sh", "-c", COMMAND])`` for the build and the test commands),
  both starting commands as this machine's user; and pytest itself running the bare loop's
  work as one parametrized test an item, which splits the plugin's cost into pytest's own
  share and the plugin's;
- sandboxed (where bwrap runs here): the plugin with its default sandbox against the local
  runner alone, in a loop doing the same workspace and the same two commands: the sandbox's
  own cost (``bench/sandbox_overhead.py``) is on both sides, what is left is the plugin's.

Each figure is given as wall time and as the CPU time of every process involved (on a shared
machine the wall time follows the load, the CPU time much less); each ratio is the median of
the rounds' own ratios. Collection: ``pytest --collect-only`` of a dataset of 10,000 tasks,
minus the same run on a one-task dataset (``bench/collect_scale.py`` compares 100,000 items
with pytest's own). With ``--against PYTHON`` (the interpreter of another virtual environment,
holding the plugin at another commit: ``git worktree add DIR COMMIT``, then ``pip install -e
DIR`` there), that plugin is timed too, interleaved, and both are printed with their ratio.
``--store`` also times the plugin with its verdict store on (the default) and empty, so that
every verdict is graded and written. ``--breakdown`` prints where an unconfined item's time
goes, part by part (the commands, the runner around them, the workspace, logs, quota, store,
locks, report hooks, the main guard, the canary run, and what is left to pytest's own item
protocol: bench/item_costs.py). ``--profile PATH`` writes a cProfile of one unconfined plugin
run of N tasks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pytest_codebench.context import RunContext
from pytest_codebench.options import Settings
from pytest_codebench.runners.local import LocalRunner, sandbox_state

# A trivial task: its files (a context header, the solution, the test script) and commands. The
# test command starts a Python script that does nothing, so that the main guard's Python runner
# has a script to vouch for (a command that starts none is refused: tampered).
CONTEXT, SOLUTION, TEST = "include/x.h", "solution.py", "test/test_main.py"
FILES = {CONTEXT: "int x;\n", SOLUTION: "\n", TEST: "pass\n"}
BUILD = "true"
TEST_COMMAND = f"python3 {TEST}"
COMMANDS = (BUILD, TEST_COMMAND)


def problems(path: Path, count: int, *, baseline: bool = True) -> Path:
    """``count`` trivial ``cuda_python`` tasks (:data:`FILES`, :data:`COMMANDS`), each with a
    reference answer unless not ``baseline``. The other benches of per-item cost
    (collect_scale.py, store.py) grade the same; run them with :func:`python_first`."""
    with path.open("w") as out:
        for index in range(count):
            record = {
                "task_id": f"B/{index}",
                "type": "cuda_python",
                "group": "bench",
                "context_files": [{"path": CONTEXT, "content": FILES[CONTEXT]}],
                "test_files": [{"path": TEST, "content": FILES[TEST]}],
                "build_command": BUILD,
                "test_command": TEST_COMMAND,
                "timeout_seconds": 30,
            }
            if baseline:
                files = [{"path": SOLUTION, "content": FILES[SOLUTION]}]
                record["baseline_solution"] = {"task_id": f"B/{index}", "files": files}
            out.write(json.dumps(record) + "\n")
    return path


def python_first() -> None:
    """The folder of the interpreter running this first on ``PATH``, for this process and every
    one it starts: the tasks' ``python3`` is then this interpreter (never a tool manager's
    shim, which costs more than the script), the same for the plugin and the loops beside it."""
    folder = os.path.dirname(sys.executable)
    if os.path.exists(os.path.join(folder, "python3")):
        os.environ["PATH"] = os.pathsep.join([folder, os.environ.get("PATH", "")])


def outcomes(output: str) -> dict[str, int]:
    """The counts of pytest's last summary line (``4 passed, 1 warning in 1.2s``), by word
    (``warnings`` counted as ``warning``)."""
    lines = output.strip().splitlines()
    counts = re.findall(r"(\d+) (\w+)", lines[-1].rpartition(" in ")[0]) if lines else []
    return {word.rstrip("s") if word.startswith("warning") else word: int(n) for n, word in counts}


def passed_all(output: str, count: int) -> str | None:
    """Why pytest's ``output`` is not a run whose ``count`` items all passed (warnings aside),
    else None: a bench of skipped or failed items measures nothing."""
    found = {word: n for word, n in outcomes(output).items() if word != "warning"}
    return (
        None if found == {"passed": count} else f"expected {count} passed, the run ended {found or 'without a summary'}"
    )


def pytest_seconds(
    dataset: Path, *extra: str, python: str = sys.executable, env: Mapping[str, str] | None = None
) -> Cost:
    """``pytest --codebench=computeeval`` on ``dataset``, with the plugin ``python`` has, in a
    run folder of its own: under the default one, each run removes the logs of the run ten
    runs back, which is a cost of keeping ten runs, not of grading this one's items. ``env``
    adds to the environment (:func:`store_on`)."""
    runs = tempfile.mkdtemp(prefix="runs-", dir=dataset.parent)
    command = [
        python,
        "-m",
        "pytest",
        "--codebench=computeeval",
        f"--codebench-dataset={dataset}",
        "--codebench-run-without-gpu",
        f"--codebench-run-dir={runs}",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        *extra,
    ]
    # Every item graded, none read from the verdict store (by the environment: a plugin from
    # before the store, timed with --against, knows no such option and ignores the variable).
    environ = {**os.environ, "CODEBENCH_STORE": "off", **(env or {})}
    with Clock() as clock:
        done = subprocess.run(command, cwd=dataset.parent, capture_output=True, text=True, env=environ)
    count = sum(1 for _ in dataset.open())
    why = f"exit status {done.returncode}" if done.returncode != 0 else None
    if why is None and "--collect-only" not in extra:
        why = passed_all(done.stdout, count)
    if why is not None:
        sys.exit(f"pytest failed ({why}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return clock.cost


class Cost(NamedTuple):
    """Wall seconds, and CPU seconds of this process and the children it waited for: on a
    shared machine the wall time follows the load, the CPU time much less."""

    wall: float
    cpu: float


class Clock:
    """Times its ``with`` block: ``cost`` once it is left."""

    def __enter__(self) -> Clock:
        self._start = self._now()
        return self

    def __exit__(self, *_: object) -> None:
        end = self._now()
        self.cost = Cost(end.wall - self._start.wall, end.cpu - self._start.cpu)

    @staticmethod
    def _now() -> Cost:
        own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime
        return Cost(time.perf_counter(), cpu)


def write_workspace(cwd: Path) -> None:
    for name, content in FILES.items():
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        (cwd / name).write_text(content)


def bare_seconds(count: int, workspace: Path, fresh: bool = True) -> Cost:
    """The commands the plugin runs, in a plain loop: ``sh -c`` of the build and of the test
    command, a task. ``fresh``: also what any harness must do around them (the official one
    does): write the task's three files into a fresh directory of ``workspace`` and remove it
    afterwards; otherwise every task runs in ``workspace`` itself, its files written once."""
    if not fresh:
        write_workspace(workspace)
    with Clock() as clock:
        for index in range(count):
            cwd = workspace
            if fresh:
                cwd = workspace / str(index)
                write_workspace(cwd)
            for command in COMMANDS:
                subprocess.run(
                    ["/bin/sh", "-c", command],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    check=True,
                )
            if fresh:
                shutil.rmtree(cwd)
    return clock.cost


# pytest itself doing the bare loop's work, one parametrized test an item: what any harness
# built on pytest pays, before anything of the plugin.
PLAIN = """\
import os, shutil, subprocess
from pathlib import Path
import pytest

@pytest.mark.parametrize("index", range(int(os.environ["BENCH_ITEMS"])))
def test_item(index):
    cwd = Path(os.environ["BENCH_WORK"]) / str(index)
    for name, content in {files!r}.items():
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        (cwd / name).write_text(content)
    for command in {commands!r}:
        subprocess.run(["/bin/sh", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, start_new_session=True, check=True)
    shutil.rmtree(cwd)
"""


def plain_seconds(count: int, folder: Path) -> Cost:
    """:data:`PLAIN` with ``count`` items, in ``folder``."""
    test = folder / "test_plain_harness.py"
    if not test.exists():
        test.write_text(PLAIN.format(files=FILES, commands=COMMANDS))
    work = tempfile.mkdtemp(prefix="work-", dir=folder)
    env = {**os.environ, "BENCH_ITEMS": str(count), "BENCH_WORK": work}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", test.name]
    with Clock() as clock:
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    why = passed_all(done.stdout, count)
    if done.returncode != 0 or why is not None:
        sys.exit(f"pytest's plain loop failed ({why or done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return clock.cost


def runner_seconds(count: int, local: LocalRunner, workspace: Path) -> Cost:
    """The local runner alone, in the loop of :func:`bare_seconds` with a workspace."""
    with Clock() as clock:
        for index in range(count):
            cwd = workspace / str(index)
            write_workspace(cwd)
            for command in COMMANDS:
                result = local.run(command, cwd=cwd, timeout=60)
                if not result.ok:
                    sys.exit(f"the sandboxed runner failed {command!r}: {result.output[-2000:]}")
            shutil.rmtree(cwd)
    return clock.cost


def sandboxed_runner(run_dir: Path) -> LocalRunner | None:
    """The local runner with its default sandbox, or None where bwrap cannot run here."""
    settings = Settings({})  # every option at its default, as the plugin's run has them
    if sandbox_state(settings, run_dir).plan is None:
        return None
    return LocalRunner(RunContext(None, settings, run_dir, run_dir, 1))  # type: ignore[arg-type]  # no pytest config


def per_item(seconds: Callable[[int], Cost], tasks: int) -> Cost:
    """Seconds per item beyond fixed costs: (T(2N) - T(N)) / N."""
    large, small = seconds(2 * tasks), seconds(tasks)
    return Cost((large.wall - small.wall) / tasks, (large.cpu - small.cpu) / tasks)


def profile(dataset: Path, path: Path) -> None:
    """A cProfile of one unconfined plugin run on ``dataset``, written to ``path``."""
    command = [sys.executable, "-m", "cProfile", "-o", str(path), "-m", "pytest", "--codebench=computeeval"]
    command += [f"--codebench-dataset={dataset}", "--codebench-run-without-gpu", "-q", "-p", "no:cacheprovider"]
    env = {**os.environ, "CODEBENCH_STORE": "off"}
    subprocess.run([*command, *UNCONFINED], cwd=dataset.parent, capture_output=True, check=True, env=env)


UNCONFINED = ("--codebench-sandbox", "none")


def store_on(base: Path) -> dict[str, str]:
    """The verdict store on, as by default, and empty (a cache dir of its own): every
    verdict is graded and written."""
    return {"CODEBENCH_STORE": "on", "CODEBENCH_CACHE_DIR": tempfile.mkdtemp(prefix="cache-", dir=base)}


def breakdown(dataset: Path) -> list[str]:
    """Where an unconfined plugin item's time goes, part by part (bench/item_costs.py)."""
    costs = dataset.parent / "costs.json"
    env = {"CODEBENCH_ITEM_COSTS": str(costs), "PYTHONPATH": str(Path(__file__).parent)}
    pytest_seconds(dataset, *UNCONFINED, "-p", "item_costs", env=env)
    return costs_table(json.loads(costs.read_text()))


def costs_table(costs: dict[str, Any]) -> list[str]:
    """Each part's own time per item, largest first."""
    parts: dict[str, float] = costs["ms_per_item"]
    total = sum(parts.values())
    heading = f"where an item's {total:.2f} ms go (own time of each part; {costs['items']} items, over which one-time"
    lines = [heading, "  probes are spread; timers on):"]
    for part, ms in sorted(parts.items(), key=lambda entry: -entry[1]):
        lines.append(f"  {part:58s} {ms:6.3f} ms  {100 * ms / total:4.1f}%")
    return lines


def measure(args: argparse.Namespace, base: Path) -> dict[str, list[Cost]]:
    """Seconds per item of each way, one figure a round. The ways compared are timed next to
    each other in every round, so that a ratio is taken within a round (the machine is shared:
    its speed drifts between rounds more than between neighbours)."""
    sizes = {args.tasks: problems(base / "small.jsonl", args.tasks)}
    sizes[2 * args.tasks] = problems(base / "large.jsonl", 2 * args.tasks)
    work, once = base / "bare", base / "once"
    work.mkdir()
    once.mkdir()
    local = sandboxed_runner(base)
    timed: dict[str, Callable[[int], Cost]] = {
        "plugin": lambda n: pytest_seconds(sizes[n], *UNCONFINED),
        "harness": lambda n: bare_seconds(n, work),
        "pytest": lambda n: plain_seconds(n, base),
        "bare": lambda n: bare_seconds(n, once, fresh=False),
    }
    if args.store:
        timed["plugin store"] = lambda n: pytest_seconds(sizes[n], *UNCONFINED, env=store_on(base))
    if args.against:
        timed["other"] = lambda n: pytest_seconds(sizes[n], *UNCONFINED, python=args.against)
    if local is not None:
        timed["plugin sandboxed"] = lambda n: pytest_seconds(sizes[n])
        timed["runner sandboxed"] = lambda n: runner_seconds(n, local, work)
    figures: dict[str, list[Cost]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, seconds in timed.items():
            figures[name].append(per_item(seconds, args.tasks))
    if args.profile:
        path = Path(args.profile).resolve()
        profile(sizes[args.tasks], path)
        print(f"profile of one unconfined run of {args.tasks} tasks: {path} (python -m pstats {path})")
    return figures


def ratio(figures: dict[str, list[Cost]], top: str, bottom: str, field: str = "wall") -> float:
    """The median over rounds of each round's ratio."""
    pairs = zip(figures[top], figures[bottom], strict=True)
    return statistics.median(float(getattr(a, field) / getattr(b, field)) for a, b in pairs)


def report(args: argparse.Namespace, figures: dict[str, list[Cost]]) -> None:
    ms = {name: 1000 * statistics.median(cost.wall for cost in costs) for name, costs in figures.items()}
    cpu = {name: 1000 * statistics.median(cost.cpu for cost in costs) for name, costs in figures.items()}
    print(f"grading {args.tasks} vs {2 * args.tasks} trivial tasks, {args.rounds} rounds, {os.cpu_count()} cores")
    print("per item, medians of the rounds (wall, and CPU of every process involved); a ratio is the")
    print("median of the rounds' own ratios")

    def line(title: str, name: str, note: str = "") -> None:
        print(f"  {title:31s} {ms[name]:7.2f} ms wall {cpu[name]:7.2f} ms CPU{note}")

    def compared(title: str, top: str, bottom: str, note: str = "") -> None:
        wall, spent = ratio(figures, top, bottom), ratio(figures, top, bottom, "cpu")
        print(f"  ratio {title:25s} {wall:7.2f} x  wall {spent:7.2f} x  CPU{note}")

    def twice(title: str, top: str, bottom: str, note: str) -> None:
        pairs = list(zip(figures[top], figures[bottom], strict=True))
        wall = statistics.median(a.wall / (2 * b.wall) for a, b in pairs)
        spent = statistics.median(a.cpu / (2 * b.cpu) for a, b in pairs)
        print(f"  ratio {title:25s} {wall:7.2f} x  wall {spent:7.2f} x  CPU{note}")

    line("plugin (unconfined):", "plugin")
    line("bare loop + workspace:", "harness", "  (a fresh directory of 3 files, sh -c build, sh -c test)")
    line("bare loop:", "bare", f"  (sh -c {BUILD!r}, sh -c {TEST_COMMAND!r})")
    line("pytest doing the same:", "pytest", "  (the bare loop + workspace as a parametrized test)")
    compared("plugin / bare + workspace:", "plugin", "harness", "  (target <= 1.5 x)")
    twice("plugin / 2 x bare + wksp:", "plugin", "harness", "  (a pass runs its canary: the work twice)")
    compared("plugin / bare loop:", "plugin", "bare")
    compared("pytest / bare + workspace:", "pytest", "harness", "  (pytest's own share)")
    compared("plugin / pytest doing same:", "plugin", "pytest", "  (the plugin's own share)")
    if "plugin store" in figures:
        line("plugin, store on (empty):", "plugin store", "  (the default: each verdict written)")
        compared("store on / store off:", "plugin store", "plugin")
    if "plugin sandboxed" in figures:
        line("plugin (sandboxed):", "plugin sandboxed")
        line("runner loop + workspace:", "runner sandboxed", "  (the same 2 commands, sandboxed)")
        compared("plugin / runner loop:", "plugin sandboxed", "runner sandboxed", "  (both sandboxed)")
    else:
        print("  sandboxed: bwrap cannot run here, not measured")
    if "other" in figures:
        line(f"plugin at {args.against}:", "other")
        compared("this plugin / that one:", "plugin", "other")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--collect", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", help="the Python of another environment whose plugin is timed side by side")
    parser.add_argument("--store", action="store_true", help="also time the plugin with its verdict store on")
    parser.add_argument("--breakdown", action="store_true", help="also print where an item's time goes, part by part")
    parser.add_argument("--profile", metavar="PATH", help="also write a cProfile of one unconfined plugin run there")
    args = parser.parse_args()
    python_first()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        report(args, measure(args, base))
        if args.breakdown:
            print("\n".join(breakdown(base / "large.jsonl")))
        one = problems(base / "one.jsonl", 1)
        many = problems(base / "many.jsonl", args.collect)
        collect = statistics.median(
            pytest_seconds(many, "--collect-only").wall - pytest_seconds(one, "--collect-only").wall
            for _ in range(args.rounds)
        )
        print(f"collecting {args.collect} tasks: {collect:.2f} s beyond start-up (target <= 2 s)")


if __name__ == "__main__":
    main()
