"""How much the PIE speedup of a program against itself moves, grading throughput, and the
bundled sample's speedups.

    python bench/pie_noise.py [--repeats 10] [--trials 25] [-k EXPR]
    python bench/pie_noise.py --sample-only     # only 3.: each candidate's speedups

1. Two byte-identical programs (a Python loop of about 50 ms) as the slow program and its
   reference, the whole measurement repeated ``--repeats`` times (one row each, in one pytest
   run): the spread of the reference's measured speedup in wall mode (goal 1.00 +/- 0.03) and in
   instruction mode (goal exactly 1.000), PIE's (start-up included) and net of start-up. PIE's
   own sandbox measured 0.75 to 1.14 for this.
   (A candidate byte-identical to the slow program is not measured at all: it is no edit.)
2. The bundled PIE sample graded with ``-n 2`` and ``-n 0``, side by side: wall time and ratio.
3. The bundled sample graded once (``-n 2``): each candidate's outcome, PIE's speedup with its
   interval, the net-of-start-up one ("-": not meaningful, at the noise floor) and start-up.

``-k EXPR`` grades only the sample's candidates that pytest's ``-k`` selects, in 2. and 3.
(``-k 's0000006[0]'``: one row, one timed candidate; a quick check that the bench runs, as
bench/smoke.py makes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

PROGRAM = "n = int(input())\ntotal = 0\nfor i in range(n):\n    total += i\nprint(total)\n"
N = 1_000_000
METRICS = ("wall", "instructions")


def pytest(*args: str, cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:benchmark",
            "-q",
            "--codebench-store=off",
            *args,
        ],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return time.perf_counter() - started


def identical(root: Path, repeats: int, trials: int, metric: str) -> tuple[list[float], list[float | None]]:
    """The reference's speedups over its byte-identical twin, PIE's and net of start-up, a row each."""
    cases = root / "cases" / "p1"
    cases.mkdir(parents=True, exist_ok=True)
    (cases / "input.0.txt").write_text(f"{N}\n")
    (cases / "output.0.txt").write_text(f"{N * (N - 1) // 2}\n")
    # Row i: a slow program, its byte-identical twin as the reference, and a candidate that
    # differs only by a comment (the rows differ by a comment too: PIE joins on the code).
    slow = [f"{PROGRAM}# row {i}\n" for i in range(repeats)]
    (root / "ref.jsonl").write_text(
        "".join(
            json.dumps(
                {"problem_id": "p1", "submission_id_v0": f"s{i}", "language": "python", "input": code, "target": code}
            )
            + "\n"
            for i, code in enumerate(slow)
        )
    )
    (root / "gen.jsonl").write_text(
        "".join(json.dumps({"input": code, "generated_answers": [code + "# edit\n"]}) + "\n" for code in slow)
    )
    (root / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "model_generated_outputs_path": "gen.jsonl",
                "inputs_outputs_basepath": "cases",
                "reference_file_path": "ref.jsonl",
                "output_report_file_path": "report.jsonl",
                "num_trials": trials,
                "ignore_first_k": 1,
                "max_time_per_run": 30,
            }
        )
    )
    report = root / f"{metric}.json"
    pytest(
        "--codebench=pie",
        "--codebench-config",
        "config.yaml",
        "--codebench-pie-metric",
        metric,
        "--codebench-report",
        str(report),
        cwd=root,
    )
    items = json.loads(report.read_text())["items"]
    return [item["figures"]["reference_speedup"] for item in items], [
        item["figures"].get("reference_net_speedup") for item in items
    ]


def spread(label: str, speedups: Sequence[float | None]) -> str:
    known = [s for s in speedups if s is not None]
    if not known:
        return f"{label}: not meaningful in all {len(speedups)}"
    return (
        f"{label}: {len(known)} measurements, speedup {min(known):.4f} .. {max(known):.4f} "
        f"(max |s - 1| = {max(abs(s - 1) for s in known):.4f})"
    )


def sample_speedups(root: Path, keyword: Sequence[str]) -> None:
    report = root / "sample.json"
    pytest("--codebench=pie", "-n", "2", "--codebench-report", str(report), *keyword, cwd=root)
    print(f"{'candidate':22} {'outcome':14} {'speedup [95% interval]':30} {'net of start-up':28} start-up")
    for item in sorted(json.loads(report.read_text())["items"], key=lambda item: item["id"]):
        figures = item["figures"]
        whole = net = startup = ""
        if isinstance(figures.get("speedup"), float) and figures.get("metric") == "wall":
            whole = f"{figures['speedup']:.2f}x [{figures['ci_low']:.2f}, {figures['ci_high']:.2f}]"
            if "net_speedup" in figures:
                net = (
                    "-"
                    if figures["net_speedup"] is None
                    else (f"{figures['net_speedup']:.2f}x [{figures['net_ci_low']:.2f}, {figures['net_ci_high']:.2f}]")
                )
            startup = f"{figures['startup_ms']:.1f} ms" if "startup_ms" in figures else ""
        print(f"{item['id']:22} {item['outcome']:14} {whole:30} {net:28} {startup}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--trials", type=int, default=25)  # PIE's own default
    parser.add_argument("--sample-only", action="store_true", help="only the bundled sample's speedups")
    parser.add_argument(
        "-k", dest="keyword", help="grade only the sample's candidates this pytest -k expression selects"
    )
    args = parser.parse_args()
    keyword = ["-k", args.keyword] if args.keyword else []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.sample_only:
            sample_speedups(root, keyword)
            return
        for metric in METRICS:
            whole, net = identical(root, args.repeats, args.trials, metric)
            print(spread(f"identical programs, {metric:12s}", whole))
            print(spread(f"  net of start-up, {metric:12s}", net))
        sample_speedups(root, keyword)
        serial = pytest("--codebench=pie", *keyword, cwd=root)
        parallel = pytest("--codebench=pie", "-n", "2", *keyword, cwd=root)
        print(f"bundled sample: -n 0 {serial:.1f} s, -n 2 {parallel:.1f} s, ratio {serial / parallel:.2f}x")


if __name__ == "__main__":
    main()
