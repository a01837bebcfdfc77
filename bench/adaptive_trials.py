"""PIE's bundled sample graded with fixed trials and with adaptive ones, side by side: the
verdicts of both (which must be the same), the trials each ran, and the wall time of the
adaptive run against the fixed one.

    python bench/adaptive_trials.py [--rounds 3] [--trials 25] [--workers 2] [-k EXPR]

Both runs take at most ``--trials`` trials (PIE's own default is 25; the sample's config says
5, too few to stop early): the fixed run (``--no-codebench-adaptive-trials``) runs them all,
the adaptive one stops each candidate once its speedup's interval has decided the verdict.
The two modes alternate round by round, so that what drifts on the machine hits both alike.
Wall times are whole pytest runs, checks, compiles and timeouts included (the same in both).
``-k EXPR`` grades only the candidates that pytest's ``-k`` selects (``-k 's0000006[0]'``: one
row, one timed candidate; a quick check that the bench runs, as bench/smoke.py makes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = {"fixed": ["--no-codebench-adaptive-trials"], "adaptive": ["--codebench-adaptive-trials"]}


def grade(root: Path, mode: str, args: argparse.Namespace, round_: int) -> tuple[float, list[dict[str, Any]]]:
    """The wall time of one graded run of the bundled sample, and its items."""
    report = root / f"{mode}-{round_}.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--codebench=pie",
        "--codebench-store=off",
    ]
    command += ["-n", str(args.workers)] if args.workers > 1 else []
    command += ["--codebench-pie", f"num_trials={args.trials}", "--codebench-report", str(report), *MODES[mode]]
    command += ["-k", args.keyword] if args.keyword else []
    start = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if not report.exists():
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    items: list[dict[str, Any]] = json.loads(report.read_text())["items"]
    return seconds, items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=25)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (1: none)")
    parser.add_argument("-k", dest="keyword", help="grade only the candidates this pytest -k expression selects")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {mode: [] for mode in MODES}
    runs: dict[str, list[dict[str, dict[str, Any]]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for mode in MODES if round_ % 2 == 0 else reversed(list(MODES)):
                seconds, items = grade(Path(tmp), mode, args, round_)
                walls[mode].append(seconds)
                runs[mode].append({item["id"]: item for item in items})
                print(f"round {round_ + 1} {mode:8} {seconds:7.1f} s", file=sys.stderr)
    print(f"{args.rounds} rounds, at most {args.trials} trials, {args.workers} workers; PIE's bundled sample")
    print(f"{'candidate':22} {'verdict, fixed':15} {'adaptive':15} {'trials fixed':>12} {'adaptive':>9} {'stops'}")
    differ = []
    for name in sorted(runs["fixed"][0]):
        verdicts = {mode: {run[name]["outcome"] for run in runs[mode]} for mode in MODES}
        if len(verdicts["fixed"] | verdicts["adaptive"]) > 1:
            differ.append(name)
        figures = {mode: [run[name]["figures"] for run in runs[mode]] for mode in MODES}
        trials = {mode: [int(f["trials"]) for f in figures[mode] if "trials_stop" in f] for mode in MODES}
        stops = sorted({str(f["trials_stop"]) for f in figures["adaptive"] if "trials_stop" in f})
        shown = {mode: "/".join(sorted(verdicts[mode])) for mode in MODES}
        counts = {mode: "/".join(str(n) for n in trials[mode]) or "-" for mode in MODES}
        print(
            f"{name:22} {shown['fixed']:15} {shown['adaptive']:15} {counts['fixed']:>12} {counts['adaptive']:>9} "
            f"{', '.join(stops)}"
        )
    total = {
        mode: [
            sum(int(item["figures"].get("trials", 0)) for item in run.values() if "trials_stop" in item["figures"])
            for run in runs[mode]
        ]
        for mode in MODES
    }
    same = f"the same in all {2 * args.rounds} runs"
    print(f"verdicts: {same if not differ else 'NOT ' + same + ': ' + ', '.join(differ)}")
    print(
        f"trials run per round: fixed {statistics.median(total['fixed']):g}, adaptive "
        f"{statistics.median(total['adaptive']):g} (median over rounds)"
    )
    ratios = [adaptive / fixed for adaptive, fixed in zip(walls["adaptive"], walls["fixed"], strict=True)]
    fixed, adaptive = statistics.median(walls["fixed"]), statistics.median(walls["adaptive"])
    print(
        f"wall time: fixed {fixed:.1f} s, adaptive {adaptive:.1f} s; adaptive/fixed {statistics.median(ratios):.3f}"
        f" (median of the rounds' ratios: {', '.join(f'{ratio:.3f}' for ratio in ratios)})"
    )


if __name__ == "__main__":
    main()
