"""How often a speedup claim is wrong, and what it costs to make a true one: the old rule (a
percentile bootstrap of the median ratio, as shipped at f16fdd8) beside the new one (exact
sign-test bounds, their level spent over the looks: pytest_codebench/stats/signs.py), side by
side in one run.

    python bench/speedup_calibration.py [--runs 10000] [--quick] [--workers 2]
    python bench/speedup_calibration.py --real [--repeats 5]

Simulated (the default): each run is the shipped adaptive timing (``speedup.timed_trials``,
interleaved pairs, the rotation, the looks, the cap) with a simulated measure. The candidate is
exactly ``truth`` times as fast as the slow program (the median of its per-trial ratio), under
noise shapes taken from real trials: lognormal 3% and 10%, a heavy tail (Student t, 3 degrees
of freedom), a slow drift of the machine (the second run of a pair sees more of it), and one
trial in 20 hit by a stall (one run of the pair 2-5x slower). The false-positive rate of a cell
is the share of runs whose low bound lies above the truth ("faster" at a tie, "above p" at a
bar p), with its 95% Wilson interval. The new rule runs the shipped code; the old one is a
numpy port of f16fdd8's (2000 resamples, percentile interval, the same decisions), checked
against that code itself, loaded from git, on the first runs of each setting (agreement
printed). Needs numpy (``pip install numpy``) and git.

Power: a true 1.2x, 1.5x and 2x at 1% (profiler-timed), 3% and 10% noise: the share of runs
called faster (low bound above 1) at ComputeEval's cap, and the trials a call takes with a
cap of 60 (median and 90th percentile).

Real A/A (``--real``): PIE's bundled sample with every slow program as its own candidate, and
host-only ComputeEval problems (tests/perf_packs.py) whose solution is the reference: each
byte-identical, with a comment added (both made no edit, and are not timed) and with a statement
added that does nothing (an edit: timed, the timing rule's own real A/A), graded ``--repeats``
times with adaptive trials; counts how many pass as faster, and how many were timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import multiprocessing
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from pytest_codebench.benchmarks.speedup import Stopping, decision, ratio_interval, timed_trials

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "f16fdd8"
RESAMPLES = 2000
# (slow, fast) multipliers of one trial's two runs; ``first_slow``: which ran first.
Noise = Callable[[random.Random, int, bool], tuple[float, float]]


def lognormal(sigma: float) -> Noise:
    def noise(rng: random.Random, trial: int, first_slow: bool) -> tuple[float, float]:
        return rng.lognormvariate(0, sigma), rng.lognormvariate(0, sigma)

    return noise


def heavy_tail(rng: random.Random, trial: int, first_slow: bool) -> tuple[float, float]:
    def t3() -> float:
        return rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)

    return math.exp(0.03 * t3()), math.exp(0.03 * t3())


def drift(rng: random.Random, trial: int, first_slow: bool) -> tuple[float, float]:
    """The machine slows by 0.5% a run, all along the trials: the second run of a pair sees more."""
    slow, fast = lognormal(0.03)(rng, trial, first_slow)
    first, second = 1 + 0.005 * 2 * trial, 1 + 0.005 * (2 * trial + 1)
    return (slow * first, fast * second) if first_slow else (slow * second, fast * first)


def stalls(rng: random.Random, trial: int, first_slow: bool) -> tuple[float, float]:
    """One trial in 20 has one of its runs stalled, 2-5x as long."""
    slow, fast = lognormal(0.03)(rng, trial, first_slow)
    if rng.random() < 0.05:
        if rng.random() < 0.5:
            slow *= rng.uniform(2, 5)
        else:
            fast *= rng.uniform(2, 5)
    return slow, fast


NOISES: dict[str, Noise] = {
    "lognormal 3%": lognormal(0.03),
    "lognormal 10%": lognormal(0.10),
    "heavy tail (t3)": heavy_tail,
    "slow drift": drift,
    "stall 1 in 20": stalls,
}
# name: (stopping, the truths whose "above" claims are false positives)
SETTINGS: dict[str, tuple[Stopping, tuple[float, ...]]] = {
    "ComputeEval, cap 20": (Stopping(bars=(1.0, 1.5, 2.0), cap=20), (1.0, 1.5, 2.0)),
    "PIE sample, 6 trials, 1 ignored": (Stopping(bars=(1.0, 1.1), min_trials=5, cap=6, ignore=1), (1.0, 1.1)),
    "PIE's default, 25 trials": (Stopping(bars=(1.0, 1.1), cap=25), (1.0, 1.1)),
}


# -- one simulated run -----------------------------------------------------------------------------


def simulate(noise: Noise, truth: float, stopping: Stopping, seed: int) -> tuple[list[float], list[float]]:
    """The per-trial times of a slow program (10 ms) and a candidate ``truth`` times as fast,
    for the most trials the setting allows: each rule reads as many as it runs."""
    rng = random.Random(seed)
    slow, fast = [], []
    for trial in range(stopping.cap):
        a, b = noise(rng, trial, trial % 2 == 0)  # the rotation: the slow program first on even trials
        slow.append(10.0 * a)
        fast.append(10.0 / truth * b)
    return slow, fast


def new_rule(slow: list[float], fast: list[float], stopping: Stopping) -> tuple[float, int]:
    """The shipped code: its low bound and the trials it ran."""
    measures = {"slow": iter(slow), "fast": iter(fast)}
    trials = timed_trials(["slow", "fast"], [None], lambda side, _: next(measures[side]), stopping, ("slow", "fast"))
    _, low, _ = ratio_interval(trials.totals["slow"], trials.totals["fast"], trials.looks)
    return low, trials.run


def _old_interval(ratios: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    point = float(np.median(ratios))
    if len(ratios) < 2:
        return point, point, point
    picks = rng.integers(0, len(ratios), size=(RESAMPLES, len(ratios)))
    medians = np.sort(np.median(ratios[picks], axis=1))
    return point, float(medians[int(0.025 * RESAMPLES)]), float(medians[int(0.975 * RESAMPLES) - 1])


def old_rule(slow: list[float], fast: list[float], stopping: Stopping, seed: int) -> tuple[float, int]:
    """f16fdd8's rule in numpy: at least ``min_trials`` kept, then the bootstrap interval
    after every trial until ``decision`` decides, else the cap; its low bound and the trials."""
    rng = np.random.default_rng(seed)
    ratios = np.array(slow) / np.array(fast)
    kept = ratios[stopping.ignore :]
    interval = (1.0, 0.0, math.inf)
    for n in range(min(max(stopping.min_trials, 1), len(kept)), len(kept) + 1):
        interval = _old_interval(kept[:n], rng)
        if stopping.adaptive and decision(interval, stopping) is not None:
            return interval[1], n + stopping.ignore
    return interval[1], stopping.cap


def load_old() -> ModuleType:
    """speedup.py as shipped at OLD_COMMIT, importable beside today's."""
    source = subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:pytest_codebench/benchmarks/speedup.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    name = "pytest_codebench.benchmarks._speedup_old"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "pytest_codebench.benchmarks"
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(source, f"{OLD_COMMIT}:speedup.py", "exec"), module.__dict__)
    return module


def old_shipped(old: ModuleType, slow: list[float], fast: list[float], stopping: Stopping) -> tuple[float, int]:
    measures = {"slow": iter(slow), "fast": iter(fast)}
    kept = stopping.cap - stopping.ignore
    was = old.Stopping(
        bars=stopping.bars, min_trials=min(stopping.min_trials, kept), cap=stopping.cap, ignore=stopping.ignore
    )
    trials = old.timed_trials(["slow", "fast"], [None], lambda side, _: next(measures[side]), was, ("slow", "fast"))
    _, low, _ = old.bootstrap_ratio(trials.totals["slow"], trials.totals["fast"])
    return low, trials.run


# -- cells -----------------------------------------------------------------------------------------


def wilson(hits: int, runs: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a binomial share."""
    if not runs:
        return 0.0, 1.0
    z, share = 1.959964, hits / runs
    centre = (share + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(share * (1 - share) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, runs: int) -> str:
    low, high = wilson(hits, runs)
    return f"{100 * hits / runs:5.2f}% [{100 * low:4.2f}, {100 * high:5.2f}]"


def fpr_cell(job: tuple[str, str, float, int, int]) -> tuple[str, str, float, int, int, int, int]:
    """False positives of each rule in one cell: runs whose low bound lies above the truth (the
    old rule on the first ``old_runs`` of the same runs: its bootstrap costs far more)."""
    setting, noise_name, truth, runs, old_runs = job
    stopping, _ = SETTINGS[setting]
    noise = NOISES[noise_name]
    old = new = 0
    for seed in range(runs):
        slow, fast = simulate(noise, truth, stopping, seed)
        new += new_rule(slow, fast, stopping)[0] > truth
        if seed < old_runs:
            old += old_rule(slow, fast, stopping, seed)[0] > truth
    return setting, noise_name, truth, old_runs, old, runs, new


POWER_NOISES = {"1% (profiler)": lognormal(0.01), "3%": lognormal(0.03), "10%": lognormal(0.10)}
POWER_SPEEDS = (1.2, 1.5, 2.0)
# The question alone (faster or not), never "narrow": the trials it takes to call faster.
LONG = Stopping(bars=(1.0,), width=0.0, cap=60)


def power_cell(job: tuple[str, float, int, int]) -> tuple[str, float, int, int, int, int, list[int]]:
    """At ComputeEval's cap: runs called faster (low bound above 1), old and new; with a cap of
    60 and faster-or-not the only question, the trials the new rule took where it called it."""
    noise_name, speed, runs, old_runs = job
    stopping = SETTINGS["ComputeEval, cap 20"][0]
    noise = POWER_NOISES[noise_name]
    old = new = 0
    taken = []
    for seed in range(runs):
        slow, fast = simulate(noise, speed, LONG, seed)
        new += new_rule(slow[:20], fast[:20], stopping)[0] > 1.0
        if seed < old_runs:
            old += old_rule(slow[:20], fast[:20], stopping, seed)[0] > 1.0
        low, run = new_rule(slow, fast, LONG)
        if low > 1.0:
            taken.append(run)
    return noise_name, speed, old_runs, old, runs, new, taken


def agreement(runs: int) -> list[str]:
    """The numpy port against f16fdd8's own code, on the first runs of each setting at a tie
    and at a bar under 3% noise: how often both claim the same."""
    old = load_old()
    lines = []
    for setting, (stopping, truths) in SETTINGS.items():
        same = total = 0
        for truth in (truths[0], truths[-1]):
            for seed in range(runs):
                slow, fast = simulate(NOISES["lognormal 3%"], truth, stopping, seed)
                shipped = old_shipped(old, slow, fast, stopping)[0] > truth
                ported = old_rule(slow, fast, stopping, seed)[0] > truth
                same += shipped == ported
                total += 1
        lines.append(f"  {setting}: the port and f16fdd8's code make the same claim in {same} of {total} runs")
    return lines


def simulated(args: argparse.Namespace) -> None:
    runs = 1000 if args.quick else args.runs
    old_runs = min(runs, args.old_runs)
    started = time.perf_counter()
    print(f"# python bench/speedup_calibration.py --runs {runs} --old-runs {old_runs}")
    print("old rule: percentile bootstrap of the median ratio, read at every look (f16fdd8)")
    print("new rule: exact sign-test bounds, 5% one-sided, spent over the looks (pytest_codebench/stats/signs.py)")
    print()
    print("the numpy port of the old rule, checked against its own code (loaded from git):")
    print("\n".join(agreement(min(runs, 500))))
    print()
    jobs = [
        (setting, noise, truth, runs, old_runs)
        for setting, (_, truths) in SETTINGS.items()
        for noise in NOISES
        for truth in truths
    ]
    power_jobs = [(noise, speed, runs, old_runs) for noise in POWER_NOISES for speed in POWER_SPEEDS]
    with multiprocessing.Pool(args.workers) as pool:
        cells = pool.map(fpr_cell, jobs)
        power = pool.map(power_cell, power_jobs)
    print(
        f"false positives: the low bound above the truth, {runs} runs a cell (the old rule: the first "
        f"{old_runs}), with the 95% Wilson interval"
    )
    print(f"{'setting':34} {'noise':17} {'truth':>5}  {'old rule':24} {'new rule':24}")
    worst = 0.0
    for setting, noise, truth, n_old, old, n, new in cells:
        print(f"{setting:34} {noise:17} {truth:5.2f}  {rate(old, n_old):24} {rate(new, n):24}")
        worst = max(worst, wilson(new, n)[1])
    print(f"the new rule's worst upper end: {100 * worst:.2f}% (goal: at most 6%)")
    print()
    print(f"power: a true speedup called faster (low bound above 1) at ComputeEval's cap of 20, {runs} runs a cell;")
    print("and, with a cap of 60, the trials the new rule took to call it (median, 90th percentile)")
    print(f"{'noise':14} {'speedup':>7}  {'old, cap 20':>12} {'new, cap 20':>12}  {'trials (new)':>14}")
    for noise, speed, n_old, old, n, new, taken in power:
        trials = f"{statistics.median(taken):.0f}, {np.percentile(taken, 90):.0f}" if taken else "never"
        share = f"{100 * len(taken) / n:.1f}%"
        print(
            f"{noise:14} {speed:6.1f}x  {100 * old / n_old:11.1f}% {100 * new / n:11.1f}%  {trials:>14} ({share} by 60)"
        )
    print()
    print(f"{time.perf_counter() - started:.0f} s")


# -- real A/A --------------------------------------------------------------------------------------


def pytest_run(folder: Path, args: list[str], report: Path) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--codebench-store=off"]
    done = subprocess.run(
        [*command, *args, "--codebench-report", str(report)], cwd=folder, capture_output=True, text=True
    )
    if not report.exists():
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    items: list[dict[str, Any]] = json.loads(report.read_text())["items"]
    return items


# The kinds of A/A candidate, by sample number: the slow program (the reference) itself, with a
# comment added (both made no edit: never timed), and with a statement added that does nothing
# (an edit, timed: the timing rule's own real A/A).
KINDS = ("identical", "comment-only", "no-op statement")


def pie_aa(folder: Path, repeats: int) -> list[str]:
    """PIE's bundled sample, each slow program its own candidate: byte-identical, commented, and
    with a statement added that does nothing."""
    sample = ROOT / "datasets" / "pie"
    rows = []
    for line in (sample / "reference.jsonl").read_text().splitlines():
        reference = json.loads(line)
        slow = reference["input"]
        noop = f"_aa = 0\n{slow}" if reference.get("language", "python") == "python" else f"int aa_unused_ = 0;\n{slow}"
        rows.append({**reference, "generated_answers": [slow, f"# the same program\n{slow}", noop]})
    (folder / "aa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = ["--codebench=pie", "--codebench-config", str(sample / "eval_config.yaml"), "--codebench-dataset"]
    args += [str(folder / "aa.jsonl"), "-n", "2"]
    faster = dict.fromkeys(KINDS, 0)
    timed = dict.fromkeys(KINDS, 0)
    for repeat in range(repeats):
        for item in pytest_run(folder, args, folder / f"pie-{repeat}.json"):
            kind = KINDS[item["sample"]]
            faster[kind] += item["outcome"] == "passed"
            timed[kind] += "trials" in item["figures"]
    total = len(rows) * repeats
    return [
        f"PIE's bundled sample, {len(rows)} rows x {repeats} runs: passed as faster: "
        + ", ".join(f"{kind} {faster[kind]} of {total} ({timed[kind]} timed)" for kind in KINDS)
    ]


def computeeval_aa(folder: Path, repeats: int) -> list[str]:
    """Host-only problems whose solution is the reference, byte-identical and commented."""
    sys.path.insert(0, str(ROOT / "tests"))
    import packs  # noqa: PLC0415
    import perf_packs  # noqa: PLC0415

    problems = [perf_packs.problem(f"AA/{index}") for index in range(3)]
    solutions = []
    for record in problems:
        code = record["baseline_solution"]["files"][0]["content"]
        for variant in (code, f"/* the same code */\n{code}", f"static int aa_unused;\n{code}"):
            solutions.append(perf_packs.solution(record["task_id"], variant))
    args = [*packs.pack_args(folder, problems, solutions), "--codebench=computeeval", "--codebench-perf"]
    args += ["--codebench-run-without-gpu", "-n", "2"]
    counts = {kind: [0, 0, 0] for kind in KINDS}
    for repeat in range(repeats):
        for item in pytest_run(folder, args, folder / f"ce-{repeat}.json"):
            kind = KINDS[item["sample"]]
            low = float(item["figures"].get("speedup_low", 0.0))
            counts[kind][0] += low > 1.0
            counts[kind][1] += low > 1.5
            counts[kind][2] += "trials" in item["figures"]
    total = len(problems) * repeats
    return [
        f"ComputeEval host-only problems, {len(problems)} x {repeats} runs: low bound above 1.0 (fast_1) / 1.5: "
        + ", ".join(f"{kind} {above}/{bar} of {total} ({timed} timed)" for kind, (above, bar, timed) in counts.items())
    ]


def real(args: argparse.Namespace) -> None:
    print(f"# python bench/speedup_calibration.py --real --repeats {args.repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        for each in (pie_aa, computeeval_aa):
            folder = Path(tmp) / each.__name__
            folder.mkdir()
            print("\n".join(each(folder, args.repeats)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000, help="simulated runs a cell")
    parser.add_argument("--old-runs", type=int, default=2000, help="of those, the runs the old rule reads")
    parser.add_argument("--quick", action="store_true", help="1000 runs a cell")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--real", action="store_true", help="real A/A pairs instead of simulations")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    (real if args.real else simulated)(args)


if __name__ == "__main__":
    main()
