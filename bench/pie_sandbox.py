"""PIE's bundled sample graded with the local runner's sandbox off and on, side by side: each
candidate's speedup (PIE's, start-up counted) and the interpreter's start-up under each.

    python bench/pie_sandbox.py [--rounds 3] [--trials 6] [-k EXPR]     # each run with -n 2

The local runner clocks a command inside its bubblewrap sandbox (``RunResult.seconds``), so
the sandbox's own start-up (5-9 ms a command) is not in a program's time: the speedups and
the start-up should come out the same with ``--codebench-sandbox none`` and ``bwrap``, within
the noise of the rounds (the spread column). The two modes alternate round by round, so that
what drifts on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MODES = ("none", "bwrap")


def grade(root: Path, mode: str, args: argparse.Namespace, round_: int) -> dict[str, dict[str, float]]:
    """{item id: figures} of one graded run of the bundled sample (correct candidates only)."""
    report = root / f"{mode}-{round_}.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-n",
            "2",
            "--codebench=pie",
            "--codebench-store=off",
        ]
        + [
            "--codebench-sandbox",
            mode,
            "--codebench-pie",
            f"num_trials={args.trials}",
            "--codebench-report",
            str(report),
        ]
        + (["-k", args.keyword] if args.keyword else []),
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
    )
    if not report.exists():
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    items = json.loads(report.read_text())["items"]
    return {item["id"]: item["figures"] for item in items if isinstance(item["figures"].get("speedup"), float)}


def cell(values: list[float]) -> str:
    spread = max(values) - min(values) if len(values) > 1 else 0.0
    return f"{statistics.median(values):8.3f} ±{spread / 2:6.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    # 6: one ignored (the sample's ignore_first_k), and the 5 timed trials a speedup needs at least.
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("-k", dest="keyword", help="grade only the candidates this pytest -k expression selects")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, dict[str, float]]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for mode in MODES if round_ % 2 == 0 else reversed(MODES):
                runs[mode].append(grade(Path(tmp), mode, args, round_))
    ids = sorted(set.intersection(*(set(run) for mode in MODES for run in runs[mode])))
    if not ids:
        sys.exit("no candidate was timed in every run (a speedup in each): nothing to compare")
    print(f"{args.rounds} rounds of {args.trials} trials; median over rounds ± half their spread")
    print(f"{'candidate':22} {'speedup, sandbox none':>22} {'speedup, bwrap':>22} {'ratio':>7}")
    for item in ids:
        speedups = {mode: [run[item]["speedup"] for run in runs[mode]] for mode in MODES}
        ratio = statistics.median(speedups["bwrap"]) / statistics.median(speedups["none"])
        print(f"{item:22} {cell(speedups['none']):>22} {cell(speedups['bwrap']):>22} {ratio:7.3f}")
    startup = {
        mode: [run[item]["startup_ms"] for run in runs[mode] for item in ids if "startup_ms" in run[item]]
        for mode in MODES
    }
    if all(startup.values()):
        print(f"{'start-up (ms a run)':22} {cell(startup['none']):>22} {cell(startup['bwrap']):>22}")


if __name__ == "__main__":
    main()
