"""ComputeEval's performance metrics as the terminal summary says them (the metrics
themselves: :mod:`.scores`)."""

from __future__ import annotations

from collections import defaultdict

from pytest_codebench.reports.reporting import examples

from .scores import Calibration, PerfMetrics, PerfScore, Suspect


def describe_perf(metrics: PerfMetrics) -> list[str]:
    """Lines for the terminal summary; none when the run did not measure performance."""
    if not metrics["items"]:
        return []
    lines = []
    for index, (k, score) in enumerate(metrics["best_at_k"].items()):
        lines.append(f"perf best@{k}: {_describe_score(score)}")
        if index == 0:  # by group at the first k alone: enough to compare groups, short
            lines += [f"  {group}: {_describe_score(each)}" for group, each in score["groups"].items()]
    lines.append(_describe_counts(metrics))
    lines += describe_calibration(metrics["calibration"])
    if metrics["suspect"]:
        counted = "counted: --codebench-accept-suspect" if metrics["accept_suspect"] else "left out of the scores"
        by_why: dict[str, list[str]] = defaultdict(list)
        for suspect in metrics["suspect"]:  # grouped by the why's first clause: details vary by item
            by_why[suspect["why"].split(";")[0]].append(f"{suspect['id']} {_times(suspect)}")
        for why, items in sorted(by_why.items()):
            lines.append(f"perf suspect ({len(items)}, {counted}): {why} [{examples(sorted(items))}]")
    if metrics["wall_capped"]:
        capped = sorted(metrics["wall_capped"])
        lines.append(
            f"perf custom mode ({len(capped)}): a fast_p bar the custom times' interval lies above is not credited:"
            f" the wall clock's does not (see each item's perf_credit) [{examples(capped)}]"
        )
    for label, reasons in (("skipped", metrics["skipped"]), ("failed", metrics["failed"])):
        for why, ids in sorted(reasons.items()):
            lines.append(f"perf {label} ({len(ids)}): {why} [{examples(sorted(ids))}]")
    return lines


def describe_calibration(calibration: Calibration) -> list[str]:
    """The machine's calibration line; none when no reference was timed against itself."""
    if not calibration["problems"] or calibration["median_spread"] is None:
        return []
    count = calibration["problems"]
    line = (
        f"perf calibration: the reference against itself on {count} problem{'s' if count != 1 else ''}, "
        f"median spread {calibration['median_spread']:.3f}x (high/low); {calibration['timeable']} of {count} "
        f"({calibration['share']:g}%) can be timed here"
    )
    if calibration["untimeable"]:
        named = ", ".join(f"{task} ({spread})" for task, spread in calibration["untimeable"].items())
        line += f"; cannot time here: {named}"
    return [line]


def _describe_score(score: PerfScore) -> str:
    plural = "s" if score["speedups"] != 1 else ""
    intervals = score.get("intervals", {})
    ends = intervals.get("geomean")
    geomean = (
        f"geomean speedup {score['geomean']:.3f}x{f' [{ends[0]:.3f}, {ends[1]:.3f}]' if ends else ''} over "
        f"{score['speedups']} problem{plural}"
        if score["geomean"] is not None
        else "no measured speedup"
    )
    if not score["problems"]:
        return f"{geomean}; fast_p not computed: no problem's perf could be measured here"
    fast = ", ".join(
        f"fast_{p} {value:.2f}%" + (f" [{b[0]:.2f}, {b[1]:.2f}]" if (b := intervals.get(f"fast_{p}")) else "")
        for p, value in score["fast_p"].items()
    )
    return f"{geomean}; {fast} (of {score['problems']} problem{'s' if score['problems'] != 1 else ''})"


def _describe_counts(metrics: PerfMetrics) -> str:
    skipped = sum(len(ids) for ids in metrics["skipped"].values())
    failed = sum(len(ids) for ids in metrics["failed"].values())
    line = (
        f"perf items: {metrics['measured']} measured ({len(metrics['suspect'])} suspect), "
        f"{skipped} skipped, {failed} failed"
    )
    if metrics["no_benchmark"]:
        count = len(metrics["no_benchmark"])
        line += f"; {count} problem{' declares' if count == 1 else 's declare'} no benchmark_command (left out)"
    return line


def _times(suspect: Suspect) -> str:
    if suspect["solution_ms"] is None or suspect["baseline_ms"] is None:
        return f"{suspect['speedup']:.2f}x"
    return f"{suspect['speedup']:.2f}x ({suspect['baseline_ms']:.3g} ms -> {suspect['solution_ms']:.3g} ms)"
