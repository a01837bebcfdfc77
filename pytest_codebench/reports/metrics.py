"""Benchmark-neutral metrics.

pass@k is a mean over the dataset's problems, not over the items that happened to be graded:
a problem the model never answered counts (``missing_solution``, failed), and so does a skip
or an error the model's code could have caused. Only what the machine cannot grade, every
item of a problem excused (:meth:`~pytest_codebench.verdict.Verdict.leaves_score`), is left
out, and the summary says how many problems this machine can grade. Otherwise a model could
raise its score by answering only the easy problems, or by making the harness give up on the
hard ones.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TypedDict

from ..stats.bootstrap import RESAMPLES, TOO_FEW, mean_interval
from ..verdict import Outcome
from .comparison import bracket as interval_text
from .reporting import ItemResult, counted_as_failed, examples, outcome_of, scored

# pass@k over a set of problems, and what is in and out of it (the JSON report's keys; "pass@k"
# is no identifier, hence the functional form):
#   pass@k: pass@k (a fraction) by k, for each k that could be computed;
#   not_computed: why a k could not be, by k;
#   problems: the problems in the score (the denominator);
#   excluded: the problems left out, every item excused (the machine cannot grade them here);
#   defects: those of them whose record could not be read (the dataset's defect, not the machine's);
#   missing: the problems the solutions never answered (in the score, as failed);
#   counted_failures: the items that skipped or errored and count as failed, by id;
#   intervals: pass@k's 95% interval [low, high] by k (a bootstrap over problems, see
#   stats.bootstrap), for each k computed over at least 2 problems.
PassAtK = TypedDict(
    "PassAtK",
    {
        "pass@k": dict[str, float],
        "intervals": dict[str, list[float]],
        "not_computed": dict[str, str],
        "problems": int,
        "excluded": list[str],
        "defects": list[str],
        "missing": list[str],
        "counted_failures": list[str],
    },
)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) of Chen et al. (2021), computed as a
    product so that it stays exact for large n. Requires n >= k."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_ks(results: list[ItemResult], ks: list[int]) -> PassAtK:
    """pass@k for each k, the mean over every problem with a scored item (passed, failed, or a
    skip or error that is not excused, which counts as failed). A problem without an answer
    scores 0 at every k (no draw of its samples can pass). A k that some problem has too few
    samples for is not computed, with the reason (never silently dropped).

    The samples of a problem are its answers: the ``missing_solution`` item of a set that did
    not answer it is none. So a model's problem is answered or missing, never both, and in a
    sweep's pooled figure a problem one model skipped is scored on the other models' answers
    (zero only when no model answered it). Each model's own score is computed from its items
    alone (:mod:`.comparison`), where a skipped problem scores 0: no model gains by skipping."""
    tasks: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # task -> [answered n, passed c]
    seen: set[str] = set()
    defects: set[str] = set()
    for result in results:
        if not result["task_id"]:
            continue  # no problem of the dataset (an unreadable record, an answer to no task)
        seen.add(result["task_id"])
        if result.get("dataset_defect"):
            defects.add(result["task_id"])
        if scored(result):
            counts = tasks[result["task_id"]]
            counts[0] += outcome_of(result) is not Outcome.MISSING_SOLUTION
            counts[1] += outcome_of(result) is Outcome.PASSED
    missing = {task for task, (n, _) in tasks.items() if n == 0}
    values: dict[str, float] = {}
    not_computed: dict[str, str] = {}
    intervals: dict[str, list[float]] = {}
    for k in ks:
        short = sorted((n, task) for task, (n, _) in tasks.items() if n < k and task not in missing)
        if not tasks:
            not_computed[str(k)] = "no problem has a graded sample"
        elif short:
            n, task = short[0]
            not_computed[str(k)] = (
                f"{len(short)} of {len(tasks)} problems have fewer than {k} graded samples ({task} has {n})"
            )
        else:
            estimates = [0.0 if task in missing else pass_at_k(n, c, k) for task, (n, c) in tasks.items()]
            values[str(k)] = sum(estimates) / len(tasks)
            # Each problem carries its own estimate: its samples are resampled together.
            bounds = mean_interval(estimates)
            if bounds is not None:
                intervals[str(k)] = list(bounds)
    return {
        "pass@k": values,
        "intervals": intervals,
        "not_computed": not_computed,
        "problems": len(tasks),
        "excluded": sorted(seen - set(tasks)),
        "defects": sorted(defects - set(tasks)),
        "missing": sorted(missing),
        "counted_failures": sorted(result["id"] for result in results if counted_as_failed(result)),
    }


def describe_pass_at_k(prefix: str, metrics: PassAtK) -> str:
    """One line: pass@k over the scored problems, and how many problems this machine could
    grade when some were left out (every item excused: the machine's doing)."""
    defects = len(metrics.get("defects") or [])
    machine = len(metrics["excluded"]) - defects
    total = metrics["problems"] + machine
    here = f"; this machine can grade {metrics['problems']} of {total}" if machine else ""
    here += f"; {defects} dataset defect{'s' * (defects != 1)} left out" if defects else ""
    if not metrics["problems"]:
        return f"{prefix} no problem has a graded sample{here}"
    parts = [
        f"pass@{k} {100 * value:.2f}%{interval_text(metrics.get('intervals', {}).get(k))}"
        for k, value in metrics["pass@k"].items()
    ]
    parts += [f"pass@{k} not computed: {why}" for k, why in metrics["not_computed"].items()]
    plural = "s" if metrics["problems"] != 1 else ""
    return f"{prefix} " + "; ".join(parts) + f" ({metrics['problems']} problem{plural}{_how(metrics)}){here}"


def _how(metrics: PassAtK) -> str:
    """What the brackets are, or why there are none (a report written before intervals has
    none, and says nothing of them)."""
    if metrics.get("intervals"):
        return f"; 95% intervals: a bootstrap over problems, {RESAMPLES} resamples"
    return f"; {TOO_FEW}" if "intervals" in metrics and metrics["problems"] < 2 else ""


def describe_excluded(metrics: PassAtK) -> list[str]:
    """What the score counts that no item passed or failed, and what it leaves out, a few
    by name (the skip and error lines say why)."""
    lines = []
    if metrics["missing"]:
        missing = metrics["missing"]
        lines.append(f"counted as failed, no solution given: {len(missing)}: {examples(missing)}")
    if metrics["counted_failures"]:
        failures = metrics["counted_failures"]
        lines.append(
            f"counted as failed, skipped or errored once the model's answer was in play: {len(failures)}: "
            f"{examples(failures)}"
        )
    defects = metrics.get("defects") or []
    if defects:
        lines.append(f"left out of pass@k (the dataset's defects, listed below): {len(defects)}: {examples(defects)}")
    excluded = [task for task in metrics["excluded"] if task not in defects]
    if excluded:
        lines.append(f"left out of pass@k (the machine cannot grade them here): {len(excluded)}: {examples(excluded)}")
    return lines


def score_of(metrics: PassAtK) -> float | None:
    """The score ``--codebench-fail-under`` compares: pass@1 in percent, None without one."""
    pass1 = metrics["pass@k"].get("1")
    return None if pass1 is None else 100 * pass1


def score_intervals(metrics: PassAtK) -> dict[str, list[float]]:
    """The Summary's intervals, in percent: each ``pass@K``'s, and pass@1's as the score's (``score``)."""
    found = {f"pass@{k}": [100 * end for end in bounds] for k, bounds in metrics["intervals"].items()}
    if "pass@1" in found:
        found["score"] = found["pass@1"]
    return found
