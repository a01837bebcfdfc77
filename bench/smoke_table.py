"""The table bench/smoke.py runs: how each script of bench/ runs at its smallest size, what it
must print (a regular expression per key line) and must not, what it needs of the machine, and
the scripts that cannot run on a CI machine, with the reason."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DOCKER_BASE = os.environ.get("CODEBENCH_DOCKER_BASE", "codebench-base:bookworm")
CHROMIUM = os.environ.get("CODEBENCH_CHROMIUM", "/usr/bin/chromium")
# The cheapest timed candidate of PIE's bundled sample: a C++ row, whose faster candidate passes.
PIE_ONE = "s0000006[0]"
# What no run may print: a bench whose items were skipped, refused or not graded measured nothing.
NEVER = (
    r"Traceback \(most recent call last\)",
    r"this machine cannot grade",
    r"the reference fails too",
)
FLOAT = r"-?\d+(?:\.\d+)?"
# The figures of the canary's and the link check's cost benches.
CANARY = rf"build {FLOAT}, test {FLOAT}, canary build {FLOAT}, canary test {FLOAT} ms; with the canary {FLOAT}x$"
LINKED = rf"item with/without the check: {FLOAT}$"


@dataclasses.dataclass(frozen=True)
class Need:
    """Something a script needs that a machine may lack: ``missing()`` says why it is missing
    (None when it is there); ``required`` names the variable under which CI must have it."""

    name: str
    missing: Callable[[], str | None]
    required: str | None = None


def _docker() -> str | None:
    try:
        import docker  # noqa: PLC0415 - a dependency of the package, needed only here

        client = docker.from_env(version="auto")
        output = client.containers.run(DOCKER_BASE, ["echo", "probe"], remove=True)
        client.close()
    except Exception as exc:  # noqa: BLE001 - any reason the engine cannot serve
        return f"no Docker engine that runs {DOCKER_BASE} ({str(exc)[:120]}); run scripts/docker-setup.sh"
    return None if output.strip() == b"probe" else f"a container of {DOCKER_BASE} said {output!r}"


def _bwrap() -> str | None:
    from pytest_codebench.options import Settings  # noqa: PLC0415
    from pytest_codebench.runners.local import sandbox_state  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as folder:
        state = sandbox_state(Settings({}), Path(folder))
    return None if state.plan is not None else f"bubblewrap cannot run here ({state.why})"


def _git_commit(commit: str) -> Callable[[], str | None]:
    def missing() -> str | None:
        found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True)
        return None if found.returncode == 0 else f"commit {commit} is not in this checkout (a shallow clone?)"

    return missing


DOCKER = Need("docker", _docker, "CODEBENCH_REQUIRE_DOCKER")
BROWSER = Need(
    "chromium",
    lambda: None if os.access(CHROMIUM, os.X_OK) else f"no Chromium at {CHROMIUM} (set CODEBENCH_CHROMIUM)",
    "CODEBENCH_REQUIRE_CHROMIUM",
)
BWRAP = Need("bwrap", _bwrap, "CODEBENCH_REQUIRE_BWRAP")
NVCC = Need("nvcc", lambda: None if shutil.which("nvcc") else "no nvcc on PATH")
NUMPY = Need("numpy", lambda: None if importlib.util.find_spec("numpy") else "no numpy (pip install numpy)")
OLD_RULE = Need("git history", _git_commit("f16fdd8"))


@dataclasses.dataclass(frozen=True)
class Bench:
    """How a script runs here: its arguments (or a function that prepares what the run needs in
    a scratch folder and returns them), the lines it must print (each a regular expression,
    matched per line) and must not, what it needs, and its time limit."""

    args: Sequence[str] | Callable[[Path], Sequence[str]]
    expect: Sequence[str]
    refuse: Sequence[str] = ()
    needs: Sequence[Need] = ()
    timeout: float = 300
    note: str = ""
    # Lines expected only where a need is met, or required (what is measured only where it can be).
    wants: Sequence[tuple[Need, str]] = ()


def _trivial_report(folder: Path) -> list[str]:
    """A JSON report of two trivial ComputeEval tasks (bench/overhead.py's), for the page of
    html_screenshots.py: its own way of grading PIE's sample takes minutes."""
    sys.path.insert(0, str(BENCH))
    from overhead import passed_all, problems, python_first  # noqa: PLC0415

    path = os.environ.get("PATH", "")
    python_first()  # for this run alone
    dataset, report = problems(folder / "tasks.jsonl", 2), folder / "report.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--codebench=computeeval"]
    command += [f"--codebench-dataset={dataset}", "--codebench-run-without-gpu", "--codebench-store=off"]
    command += [f"--codebench-run-dir={folder / 'runs'}", f"--codebench-report={report}"]
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    finally:
        os.environ["PATH"] = path
    why = passed_all(done.stdout, 2)
    if why is not None:
        raise RuntimeError(f"the report to show was not made ({why}): {done.stdout[-1000:]}")
    return ["--report", str(report), "--out", str(folder / "shots")]


BENCHES: dict[str, Bench] = {
    "adaptive_trials.py": Bench(
        ["--rounds", "1", "--trials", "6", "--workers", "1", "-k", PIE_ONE],
        [
            r"^p00005/s0000006\[0\] +passed +passed +\d+ +\d+ ",
            r"^verdicts: the same in all 2 runs$",
            r"^trials run per round: fixed [1-9]\d*, adaptive [1-9]\d*",
            rf"^wall time: fixed {FLOAT} s, adaptive {FLOAT} s; adaptive/fixed {FLOAT}",
        ],
        note="one candidate of PIE's sample",
    ),
    "cluster_makespan.py": Bench(
        [],
        [
            r"^tensorbench\s+16\s+[\d.]+\s+[\d.]+x\s+1\.0\dx\s+0$",
            r"^tensorbench\s+199\s+[\d.]+\s+[\d.]+x\s+1\.0\dx\s+75$",
            r"^plan's worst ratio to the lower bound: 1\.0\d\dx \(goal: within 1\.1x\)$",
        ],
    ),
    "collect_scale.py": Bench(
        ["--tasks", "2", "--samples", "2", "--rerun", "2", "--rounds", "1"],
        [
            r"^collecting 4 items \(2 tasks x 2 samples\), 1 rounds$",
            rf"^  ratio plugin / pytest, whole run: +{FLOAT} x",
            rf"^  ratio plugin / pytest, per item: +{FLOAT} x",
            rf"^  plugin, from the store: +{FLOAT} ms per item$",
            rf"^  ratio plugin / pytest: +{FLOAT} x",
        ],
    ),
    "compare_calibration.py": Bench(
        ["--runs", "20"],
        [
            r"^equal models, 20 runs a cell",
            *(rf"^{cell}.* \d+/20 = +{FLOAT}% +\[" for cell in ("pass@1, 1 sample,", "pass@1, 5 samples,", "geomean")),
        ],
    ),
    "computeeval_canary_cost.py": Bench(
        ["--repeat", "1", "--compilers", "cc,nvcc"],
        [rf"^{cc} +{CANARY}" for cc in ("cc", "nvcc")],
        needs=[NVCC],
    ),
    "computeeval_conformance.py": Bench(
        [str(ROOT / "datasets" / "computeeval" / "sample-problems.tar.gz"), "-n", "1", "-k", "CUDA/1"],
        [
            r"^machine: .*; nvcc ",
            r"^selection: -k ",
            r"^total \([1-9]\d*\): passed \d+ / skipped \d+ / cannot grade here \d+ / failed 0 / error 0$",
            r"^link check: [1-9]\d* test programs read in [1-9]\d* built items; 0 refused$",
            r"^canary: \d+ ran",
        ],
        note="the bundled sample, not a release: one problem (without a GPU: built, then skipped)",
    ),
    "computeeval_gpu.py": Bench(
        ["--dry-run"],
        [
            r"^sample-problems\.tar\.gz: [1-9]\d* problems in cuda-kernels, cuda-runtime, cccl; [1-9]\d* in",
            r"^\$ .* --codebench=computeeval .*--codebench-gpu-share",
            r"^\$ .* --codebench-perf --codebench-profiler=cupti$",
            r"^from compute_eval\.evaluation import evaluate_functional_correctness as run$",  # NVIDIA's harness
        ],
        note="--dry-run: the commands it would time (it needs a GPU)",
    ),
    "computeeval_link_cost.py": Bench(
        ["--repeat", "1", "--compilers", "cc,nvcc"],
        [
            rf"^{cc} +build +{FLOAT} ms +test +{FLOAT} ms +check +{FLOAT} ms \(first, .*\) +{LINKED}"
            for cc in ("cc", "nvcc")
        ],
        needs=[NVCC],
    ),
    "computeeval_pycanary_cost.py": Bench(["--repeat", "1"], [rf"^imports \[\]: {CANARY}"]),
    "docker_overhead.py": Bench(
        ["--commands", "2", "--rounds", "1", "--base", DOCKER_BASE],
        [
            rf"^  local runner per command: +{FLOAT} ms$",
            rf"^  docker runner per command: +{FLOAT} ms$",
            rf"^  ratio docker / local: +{FLOAT} x$",
            *(rf"^    {phase} +{FLOAT} ms$" for phase in ("create", r"attach \+ start", "wait", "remove")),
        ],
        needs=[DOCKER],
    ),
    "html_report.py": Bench(
        ["--models", "1", "--tasks", "10", "--groups", "2", "--chromium", CHROMIUM],
        [
            rf"^loaded at open: {FLOAT} KB$",
            r"^about:blank: JS heap",
            rf"^overview drawn in {FLOAT} s; JS heap",
            rf"^#/speed drawn in {FLOAT} s",
            rf"^#/item/.* drawn in {FLOAT} s",
            r"^console errors: 0$",
        ],
        needs=[BROWSER],
    ),
    "html_screenshots.py": Bench(
        _trivial_report,
        [r"/html-overview\.png: #/$", r"/html-speed\.png: #/speed$", r"/html-item\.png: #/item/", r"^page: "],
        refuse=[r"^console errors:"],
        needs=[BROWSER],
        note="--report of two trivial graded tasks: grading PIE's sample for it takes minutes",
    ),
    "overhead.py": Bench(
        ["--tasks", "2", "--rounds", "1", "--collect", "10", "--breakdown"],
        [
            r"^grading 2 vs 4 trivial tasks, 1 rounds",
            rf"^  plugin \(unconfined\): +{FLOAT} ms wall",
            rf"^  bare loop \+ workspace: +{FLOAT} ms wall",
            rf"^  pytest doing the same: +{FLOAT} ms wall",
            rf"^  ratio plugin / bare \+ workspace: +{FLOAT} x  wall +{FLOAT} x  CPU",
            rf"^  ratio plugin / pytest doing same: +{FLOAT} x  wall",
            r"^where an item's .* ms go",  # item_costs.py's breakdown
            rf"^  commands \(the processes themselves\) +{FLOAT} ms",
            rf"^  main guard \(.*\) +{FLOAT} ms",
            rf"^  canary run \(.*\) +{FLOAT} ms",
            rf"^collecting 10 tasks: {FLOAT} s beyond start-up",
        ],
        wants=[(BWRAP, rf"^  ratio plugin / runner loop: +{FLOAT} x  wall")],  # the sandboxed pair
        note="--breakdown: item_costs.py's parts too",
    ),
    "pie_noise.py": Bench(
        ["--repeats", "1", "--trials", "6", "-k", PIE_ONE],
        [
            *(rf"^identical programs, {metric} *: 1 measurements, speedup " for metric in ("wall", "instructions")),
            r"^p00005/s0000006\[0\] +passed +\d",
            rf"^bundled sample: -n 0 {FLOAT} s, -n 2 {FLOAT} s, ratio {FLOAT}x$",
        ],
        refuse=[r"not meaningful in all"],
        note="one candidate of PIE's sample",
    ),
    "pie_runs.py": Bench(
        ["--pie-python", sys.executable, "-k", "s0000001[0]"],
        [
            r"^outcomes: passed 1$",
            rf"^input 0 +[1-9]\d* +{FLOAT} +{FLOAT} +{FLOAT}$",
            rf"^candidate 0 +[1-9]\d* +{FLOAT}",
            rf"^all +[1-9]\d* +{FLOAT} +{FLOAT} +{FLOAT}$",
        ],
        note="this interpreter runs the programs (PIE's own venv is not needed); one candidate",
    ),
    "pie_sandbox.py": Bench(
        ["--rounds", "1", "--trials", "6", "-k", PIE_ONE],
        [r"^1 rounds of 6 trials", rf"^p00005/s0000006\[0\] +{FLOAT} ±.* {FLOAT}$"],
        needs=[BWRAP],
        note="one candidate of PIE's sample",
    ),
    "sandbox_args.py": Bench(
        ["--commands", "2"],
        [
            rf"through fd {FLOAT} ms, inline {FLOAT} ms",
            rf"^  ratio {FLOAT}$",
            rf"^writing \d+ arguments .*: {FLOAT} us",
        ],
        needs=[BWRAP],
    ),
    "sandbox_overhead.py": Bench(
        ["--commands", "2", "--work", "0.02"],
        [
            r"^sandbox: bubblewrap",
            rf"^`true`, seen by the caller: unconfined {FLOAT} ms, sandboxed {FLOAT} ms, ratio {FLOAT}$",
            rf"^fixed work, RunResult.seconds: unconfined {FLOAT} ms, sandboxed {FLOAT} ms, ratio {FLOAT}$",
        ],
        needs=[BWRAP],
    ),
    "shards_merge.py": Bench(
        ["--tasks", "6", "--samples", "1", "--models", "2", "--shards", "2", "--workers", "1"],
        [
            r"^6 tasks x 2 models x 1 samples: 12 items, 2 shards$",
            r"^metrics\.pass@k\.1 .* yes$",
            r"^figures compared: [1-9]\d*; differing: 0$",
            r"^item outcomes equal: True$",
            rf"^wall: one run {FLOAT} s; shards {FLOAT} \+ {FLOAT} s$",
        ],
    ),
    "speedup_calibration.py": Bench(
        ["--runs", "10", "--old-runs", "5", "--workers", "2"],
        [
            r"^  ComputeEval, cap 20: the port and f16fdd8's code make the same claim in (\d+) of \1 runs$",
            rf"^ComputeEval, cap 20 +lognormal 3% +1\.00 +{FLOAT}% \[",
            rf"^the new rule's worst upper end: {FLOAT}%",
            rf"^10% +2\.0x +{FLOAT}% +{FLOAT}%",
        ],
        needs=[NUMPY, OLD_RULE],
        note="simulated; --real grades PIE's sample and ComputeEval A/A pairs (minutes)",
    ),
    "store.py": Bench(
        ["--tasks", "2", "--functions", "1", "--served", "2", "--rounds", "1"],
        [
            r"^4 items of real compiler work",
            rf"^re-run from the store / first run: {FLOAT} s / {FLOAT} s = {FLOAT}% .*; verdicts identical: yes$",
            r"^resumed after kill -9 at \d+ of 4 stored .*; outcomes and metrics equal a whole run's: yes$",
            rf"^50% duplicates / no duplicates \(store off\): {FLOAT} s / {FLOAT} s",
            rf"^served from the store, per item: {FLOAT} ms; pytest's own trivial item: {FLOAT} ms; ratio {FLOAT}x",
        ],
    ),
    "tensorbench_cache.py": Bench(
        ["--copy", "--rounds", "1", "--python", sys.executable],
        [
            r"^sccache, warm items",
            rf"^shared +{FLOAT} +{FLOAT} +{FLOAT} +{FLOAT} +[1-9]\d*$",
            rf"^copy +{FLOAT} +{FLOAT} +{FLOAT} +{FLOAT} +[1-9]\d*$",
            rf"^ratio copy / shared \(total time\): {FLOAT}x$",
        ],
        note="--copy: sccache alone (the ccache comparison needs ccache, which CI does not install)",
    ),
    "tensorbench_canary.py": Bench(
        ["--rounds", "1", "-k", "not kernel"],
        [
            rf"^test step, +none: median {FLOAT} s$",
            rf"^test step, +canaries: median {FLOAT} s$",
            rf"^test step, canary run: median {FLOAT} s$",
            rf"^ratio canaries/none \(median of rounds\): {FLOAT}x wall",
        ],
    ),
    "tensorbench_reuse.py": Bench(
        ["--tasks", "2", "--naive", "1", "--python", sys.executable],
        [
            rf"^plugin, first task: +{FLOAT} s",
            rf"^plugin, later tasks: +{FLOAT} s median",
            rf"^naive, per task: +{FLOAT} s median",
            rf"^ratio later / naive: +{FLOAT}x",
            r"^verdicts identical: +True \(1 compared\)$",
        ],
        timeout=480,
        note="--naive 1: one task graded the naive way (each takes as long as the plugin's first)",
    ),
}

# Scripts of bench/ that are not run here, and why.
NOT_RUN: dict[str, str] = {
    "computeeval_gpu_aa.py": "needs a GPU (real A/A under CUPTI and ncu), and has no dry run",
    "record_profiles.py": "needs a GPU (records CUPTI's and ncu's output of a CUDA program)",
    "pie_vs_official.py": "needs a checkout of github.com/madaan/pie-perf and an interpreter with its imports",
    "tensorbench_scorch.py": "needs a clone of github.com/bobbyyyan/scorch",
    "item_costs.py": "a pytest plugin, not a script: overhead.py --breakdown loads it (its lines are checked there)",
    "smoke.py": "the smoke itself",
    "smoke_table.py": "the smoke's table of how each script runs",
}
