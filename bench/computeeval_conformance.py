"""Grade a whole ComputeEval release's reference solutions through the plugin, and tally them.

    python bench/computeeval_conformance.py 2026-1 [-n N] [-k EXPR] [--cache-dir DIR] [--out FILE]

The release is a name the plugin resolves (installed compute_eval, cached or downloaded wheel)
or the path of a ``*-problems.tar.gz``. Every reference is graded with ``--codebench-solutions
baseline``; the JSON report is read back and printed per group as ``passed / skipped (reason)
/ cannot grade here (reason) / failed / error``, then totals, under a header naming the
machine (its GPU, or "nogpu"). Reasons are grouped by cause: task ids, file positions,
durations and paths are taken out. ``--out`` also writes the table (commit it as
``datasets/computeeval/conformance-<release>-<gpu>.txt``). A reference that fails or errors is
listed by id: on a machine that can grade the problem, that is a fault of the data or of
the plugin.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

CANNOT_GRADE = re.compile(r"^this machine cannot grade \S+: ")
COLUMNS = ("passed", "skipped", "cannot grade here", "failed", "error")


def cause(reason: str, task_id: str) -> str:
    """A reason without what differs from task to task (ids, positions, durations, paths)."""
    line = (reason or "no reason given").splitlines()[0]
    line = CANNOT_GRADE.sub("", line).replace(task_id, "<task>")
    line = re.sub(r"(?<![\w/])[\w./+-]*\.(?:cu|cpp|cuh|h|hpp|c|py|o)(?::\d+){1,2}:?\s*", "", line)
    line = re.sub(r"\b\d+(\.\d+)? s\b", "N s", line)
    line = re.sub(r"/\S+/", "", line)
    # "no usable CUDA GPU; build ok in N s (none found)": the part before the details.
    if line.startswith(("no usable CUDA GPU", "requires ")):
        line = re.split(r";| \(", line)[0]
    elif " (the build links" in line:
        line = line.split(" (")[0]
    return line.strip()[:160]


def column(item: dict[str, Any]) -> str:
    if item["status"] == "skipped" and CANNOT_GRADE.match(item["reason"] or ""):
        return "cannot grade here"
    return item["status"]


def tally(report: dict[str, Any]) -> list[str]:
    """The table: a line per group with its counts, then each column's causes, then totals."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    causes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    broken: list[str] = []
    for item in report["items"]:
        group, where = item.get("group") or "(no group)", column(item)
        groups[group][where] += 1
        if where != "passed":
            causes[group, where][cause(item["reason"], item["task_id"])] += 1
        if where in ("failed", "error"):
            first = (item["reason"] or "").splitlines()[:1]
            broken.append(f"  {item['id']} {where} ({item['outcome']}): {first[0] if first else ''}"[:300])
    lines = []
    total: Counter[str] = Counter()
    for group in sorted(groups):
        counts = groups[group]
        total.update(counts)
        lines.append(f"{group} ({sum(counts.values())}): " + " / ".join(f"{name} {counts[name]}" for name in COLUMNS))
        for name in COLUMNS[1:]:
            for text, count in causes[group, name].most_common():
                lines.append(f"    {name} {count}: {text}")
    lines.append(f"total ({sum(total.values())}): " + " / ".join(f"{name} {total[name]}" for name in COLUMNS))
    lines.append(link_check(report["items"]))
    lines.append(canary(report["items"]))
    if broken:
        lines += ["failed or error:", *sorted(broken)]
    return lines


def link_check(items: list[dict[str, Any]]) -> str:
    """The link check's line: how many built test programs it read, and which references it
    refused (each is also under "cannot grade here" as "tampered: ..."; on NVIDIA's own
    references every one is a false positive of the rule)."""
    read = sum(int((item.get("figures") or {}).get("linked_programs") or 0) for item in items)
    checked = sum("linked_programs" in (item.get("figures") or {}) for item in items)
    refused = sorted(item["id"] for item in items if "tampered: the test program" in (item.get("reason") or ""))
    return f"link check: {read} test programs read in {checked} built items; {len(refused)} refused" + (
        f": {', '.join(refused)}" if refused else ""
    )


def canary(items: list[dict[str, Any]]) -> str:
    """The canary runs' line: how many passing items ran one, how many passed it, why the
    others were skipped, and which references it refused (each is also under "cannot grade
    here"; on NVIDIA's own references every one is a false positive)."""
    figures = [str((item.get("figures") or {}).get("canary")) for item in items]
    ran = [figure for figure in figures if figure in ("passed", "failed")]
    skipped = Counter(figure.removeprefix("skipped: ") for figure in figures if figure.startswith("skipped: "))
    refused = sorted(item["id"] for item in items if "tampered: the canary" in (item.get("reason") or ""))
    line = f"canary: {len(ran)} ran, {ran.count('passed')} passed, refused [{', '.join(refused)}]"
    return line + "".join(f"; skipped {count}: {why}" for why, count in skipped.most_common())


def header(report: dict[str, Any], release: str, selection: str, seconds: float, workers: str) -> list[str]:
    environment = report.get("environment", {})
    gpus = (environment.get("gpu") or {}).get("gpus") or []
    toolkit = environment.get("toolkit") or {}
    origin = environment.get("release") or {}
    dataset = report.get("dataset") or {}
    source = (
        f"{origin.get('package')} {origin.get('version')} ({origin.get('source')})" if origin else dataset.get("path")
    )
    return [
        f"ComputeEval {release}: reference solutions graded by pytest-codebench",
        f"machine: {', '.join(gpu['name'] for gpu in gpus) or 'nogpu'};"
        f" nvcc {toolkit.get('version') or toolkit.get('error')}",
        f"dataset: {source}; datapack sha256 {dataset.get('sha256')}",
        f"selection: {selection}; -n {workers}; {seconds:.0f} s",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", help="a release name (2026-1) or the path of a *-problems.tar.gz")
    parser.add_argument("-n", dest="workers", default="2", help="xdist workers (default 2)")
    parser.add_argument("-k", dest="keyword", help="grade only the items this -k expression selects")
    parser.add_argument("--cache-dir", help="--codebench-cache-dir (where releases are cached)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    dataset = str(Path(args.release).resolve()) if Path(args.release).exists() else args.release
    with tempfile.TemporaryDirectory(prefix="conformance-") as temporary:
        report_path = Path(temporary) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rN",
            "--codebench=computeeval",
            "--codebench-store=off",  # every run grades: none is served from an earlier one
            f"--codebench-dataset={dataset}",
            "--codebench-solutions=baseline",
            f"--codebench-report={report_path}",
            "-n",
            args.workers,
        ]
        command += ["-k", args.keyword] if args.keyword else []
        command += [f"--codebench-cache-dir={Path(args.cache_dir).resolve()}"] if args.cache_dir else []
        started = time.perf_counter()
        done = subprocess.run(command, cwd=temporary, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seconds = time.perf_counter() - started
        if not report_path.exists():
            sys.exit(f"pytest wrote no report (exit {done.returncode}):\n{done.stdout[-4000:]}")
        report = json.loads(report_path.read_text())
    if not report["items"]:
        sys.exit(f"no item was graded (exit {done.returncode}):\n{done.stdout[-4000:]}")
    selection = f"-k {args.keyword!r}" if args.keyword else "every problem"
    lines = header(report, args.release, selection, seconds, args.workers) + tally(report)
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
