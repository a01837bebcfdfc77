"""PIE's metrics, from the results of a run.

%Correct, %Optimized and the mean speedup with PIE's 2024 rule, as best@k and per problem, and
the trials that timing ran (how many of the caps, why they stopped). PIE's own report file is
:mod:`.report_file`'s.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from pytest_codebench.reports.reporting import ItemResult, Summary, examples, outcome_of, scored
from pytest_codebench.stats.bootstrap import item_mean_interval
from pytest_codebench.verdict import Outcome, Status

from ..speedup import describe_run_trials, trial_metrics
from .measure import UNMEASURED
from .row_signal import signal_line, signal_metrics

# PIE's bar for %Optimized.
OPTIMIZED = 1.10
# A row whose slow program spends at least this share of its time starting the interpreter is
# said to: PIE's speedup there (start-up counted) can be little more than 1 / this share.
STARTUP_SHARE = 0.5
# A candidate with one of these outcomes gave the right output on every test case.
CORRECT = (Outcome.PASSED, Outcome.NOT_FASTER)


class BestAtK(TypedDict):
    """PIE's metrics over generation rows, each taking the best of its first k candidates."""

    rows: int
    #: Percent of rows with a correct candidate.
    correct: float
    #: Percent of rows at PIE's bar (1.10x), and at the user's.
    optimized: float
    optimized_at_bar: float
    mean_speedup: float
    #: Each figure's 95% interval [low, high] by name, from a bootstrap over PROBLEMS (a
    #: problem's rows resampled together: stats.bootstrap); only where 2 problems or more.
    intervals: dict[str, list[float]]


def candidate_speedups(results: Sequence[ItemResult], suspect: bool = False) -> dict[str, list[float | None]]:
    """Each generation row's scored candidates in candidate order: a correct one's speedup
    (1.0 where it is suspect and ``suspect`` says to leave such out), None for a wrong one. A
    skip or error counts as wrong unless excused (the machine's doing), which leaves the
    candidate out; a row whose candidates are all left out is too."""
    rows: dict[str, list[float | None]] = defaultdict(list)
    for result in sorted(results, key=lambda r: r["sample"]):
        if scored(result):
            correct = outcome_of(result) in CORRECT
            figures = result["figures"]
            speedup = 1.0 if suspect and "perf_suspect" in figures else float(figures.get("speedup", 1.0))
            rows[result["task_id"]].append(speedup if correct else None)
    return rows


def best_at_k(rows: Mapping[str, Sequence[float | None]], k: int, bar: float) -> BestAtK:
    """PIE 2024: a row's speedup is max(1, slow / best correct of its first k), 1.0 without one.
    A row is optimized at a bar only by a correct candidate that reaches it: the 1.0 a row
    without one is given for the mean never counts (at a bar of 1.0 it would, for every row)."""
    # Each row's figures by problem (a row is PROBLEM/...): the bootstrap's clusters.
    by_problem: dict[str, list[dict[str, float]]] = defaultdict(list)
    for key, candidates in rows.items():
        good = [speedup for speedup in candidates[:k] if speedup is not None]
        speedup = max([1.0, *good])
        by_problem[key.split("/")[0]].append(
            {
                "correct": 100.0 * bool(good),
                "optimized": 100.0 * (bool(good) and speedup >= OPTIMIZED),
                "optimized_at_bar": 100.0 * (bool(good) and speedup >= bar),
                "mean_speedup": speedup,
            }
        )
    figures = [row for problem in by_problem.values() for row in problem]

    def share(name: str) -> float:
        return sum(row[name] for row in figures) / len(figures) if figures else 0.0

    names = ("correct", "optimized", "optimized_at_bar", "mean_speedup")
    found = {
        name: item_mean_interval([[row[name] for row in problem] for problem in by_problem.values()]) for name in names
    }
    return {
        "rows": len(figures),
        "correct": share("correct"),
        "optimized": share("optimized"),
        "optimized_at_bar": share("optimized_at_bar"),
        "mean_speedup": share("mean_speedup") if figures else 1.0,
        "intervals": {name: list(ends) for name, ends in found.items() if ends is not None},
    }


def summarize(results: list[ItemResult], bar: float, ks: list[int], max_speedup: float | None = None) -> Summary:
    """PIE's metrics; a speedup above ``max_speedup`` (None: every speedup counts) as 1.0x."""
    lines, metrics = [], {}
    rows = candidate_speedups(results, suspect=max_speedup is not None)
    for k in ks:
        best = metrics[f"best@{k}"] = best_at_k(rows, k, bar)
        if best["rows"]:
            lines.append(
                f"best@{k}: %Correct {_shown(best, 'correct')}, %Optimized(1.10) {_shown(best, 'optimized')}, "
                f"%Optimized({bar:g}) {_shown(best, 'optimized_at_bar')}, mean speedup {_shown(best, 'mean_speedup')} "
                f"({best['rows']} rows{'; 95% intervals over problems' if best['intervals'] else ''})"
            )
        else:
            lines.append(f"best@{k}: no row has a graded candidate")
    by_problem: dict[str, dict[str, list[float | None]]] = defaultdict(dict)
    for key, candidates in rows.items():
        by_problem[key.split("/")[0]][key] = candidates
    problems = {problem: best_at_k(problem_rows, 1, bar) for problem, problem_rows in sorted(by_problem.items())}
    for problem, best in problems.items():
        if best["rows"]:
            lines.append(f"  {problem}: %Correct {best['correct']:.0f}%, mean speedup {best['mean_speedup']:.3f}x")
    lines += failed_lines(results, bar, ks[0])
    every = sorted({result["task_id"] for result in results})
    if len(rows) < len(every):
        left_out = [row for row in every if row not in rows]
        lines.append(
            f"this machine can grade {len(rows)} of {len(every)} rows; left out (every candidate excused): "
            f"{examples(left_out)}"
        )
    figures = [result["figures"] for result in results]
    suspects = [f"{r['task_id']}[{r['sample']}]" for r in results if "perf_suspect" in r["figures"]]
    if suspects:
        how = "counted as 1.0x (--codebench-accept-suspect counts them)" if max_speedup else "counted"
        lines.append(f"suspect speedups: {len(suspects)}, above --codebench-max-speedup, {how}: {examples(suspects)}")
    lines += _measurement_lines(figures) + startup_lines(results) + describe_run_trials(results)
    signal = signal_metrics([(result["task_id"], result["figures"]) for result in results])
    if signal is not None:
        lines.append(signal_line(signal))
    # The score (what the gate, the JSON report, JUnit and the leaderboard show) is PIE's own
    # %Optimized, at the paper's bar: the user's --codebench-min-speedup decides which candidate
    # passes, not what a figure under PIE's name means.
    first = metrics[f"best@{ks[0]}"]
    score = first["optimized"] if first["rows"] else None
    counted = {"scored": len(rows), "total": len(every)}
    return Summary(
        lines=lines,
        metrics={
            **metrics,
            "problems": problems,
            "rows": counted,
            "trials": trial_metrics(figures),
            **({"row_signal": signal} if signal is not None else {}),
        },
        score=score,
        intervals={"score": first["intervals"]["optimized"]} if "optimized" in first["intervals"] else {},
    )


def _shown(best: Mapping[str, Any], name: str) -> str:
    """A figure of ``best`` with its interval where it has one: ``50.00% [25.00, 75.00]``,
    ``1.200x [1.000, 1.450]`` (a report written before intervals has none)."""
    form = "{:.3f}x" if name == "mean_speedup" else "{:.2f}%"
    ends = best.get("intervals", {}).get(name)
    shown = form.format(best[name])
    return shown + (f" [{form.format(ends[0]).rstrip('x%')}, {form.format(ends[1]).rstrip('x%')}]" if ends else "")


def failed_lines(results: Sequence[ItemResult], bar: float, k: int) -> list[str]:
    """What the headline (best@``k``) counts of the failed items, and why each failed. It
    takes each row's first k candidates alone, so a later candidate's failure is in no
    best@k figure; and a ``not_faster`` candidate fails its item yet gave the right output, so
    %Correct counts it. Without this a run shows %Correct 100% beside failed items and exit 1."""
    failed = [result for result in results if result["status"] == Status.FAILED]
    if not failed:
        return []
    by_outcome: dict[str, list[ItemResult]] = defaultdict(list)
    for result in failed:
        by_outcome[result["outcome"]].append(result)
    lines = [
        f"failed items: {len(failed)}; best@{k} takes each row's first {k} candidate(s): %Correct counts a row "
        f"whose candidate gave the right output on every test case, passed or {Outcome.NOT_FASTER.value}, "
        f"%Optimized one also at least {OPTIMIZED:g}x faster"
    ]
    for outcome, members in sorted(by_outcome.items()):
        why = (
            f"right output, not shown faster than the slow program by the bar ({bar:g}x): in %Correct"
            if outcome == Outcome.NOT_FASTER.value
            else "wrong: not in %Correct"
        )
        first = sum(result["sample"] < k for result in members)
        ids = sorted(result["id"] for result in members)
        lines.append(f"  {outcome} ({len(ids)}, {first} among best@{k}'s candidates): {why} [{examples(ids)}]")
    return lines


def best_at_k_columns(metrics: Mapping[str, Any], bar: float, ks: list[int]) -> dict[str, str]:
    """A model's cells where models are compared: at each k, %Correct, %Optimized (PIE's bar
    and the user's, where it differs) and the mean speedup; ``n/a`` where no row was graded."""
    row = {}
    for k in ks:
        best = metrics.get(f"best@{k}") or {"rows": 0}
        cells = {
            f"%Correct@{k}": "correct",
            f"%Optimized({OPTIMIZED:g})@{k}": "optimized",
            **({f"%Optimized({bar:g})@{k}": "optimized_at_bar"} if bar != OPTIMIZED else {}),
        }
        for column, key in cells.items():
            row[column] = _shown(best, key) if best["rows"] else "n/a"
        row[f"mean speedup@{k}"] = _shown(best, "mean_speedup") if best["rows"] else "n/a"
    return row


def _measurement_lines(figures: list[dict[str, Any]]) -> list[str]:
    """What was measured, and the interpreter's start-up counted in every time."""
    lines = []
    metric = next((f["metric"] for f in figures if f.get("metric", UNMEASURED) != UNMEASURED), None)
    if metric:
        lines.append(f"metric: {metric}")
    startups = [float(f["startup_ms"]) for f in figures if "startup_ms" in f]
    if startups:
        lines.append(
            f"interpreter start-up: {statistics.median(startups):.1f} ms a run, counted in every time as PIE counts "
            "it (net_speedup leaves it out)"
        )
    return lines


def startup_lines(results: Sequence[ItemResult]) -> list[str]:
    """A warning naming the rows whose slow program is mostly the interpreter's start-up
    (``startup_share``): there PIE's speedup, which counts start-up, is bounded by what a
    program doing nothing would reach."""
    shares: dict[str, float] = {}
    for result in results:
        share = result["figures"].get("startup_share")
        if share:
            shares.setdefault(result["task_id"], float(share))
    mostly = {row: share for row, share in sorted(shares.items()) if share >= STARTUP_SHARE}
    if not mostly:
        return []
    shown = [f"{row} ({share:.0%}, at most {1 / share:.2f}x)" for row, share in mostly.items()]
    return [
        f"start-up warning: the interpreter's start-up is at least {STARTUP_SHARE:.0%} of the slow program's time on "
        f"{len(mostly)} of {len(shares)} timed rows, where PIE's speedup (start-up counted) is at most what a program "
        f"doing nothing would reach: {examples(shown)}; net_speedup leaves start-up out"
    ]
