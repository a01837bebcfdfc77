"""How much the PIE speedup of a program against itself moves, and grading throughput.

    python bench/pie_noise.py [--repeats 10] [--trials 25]

1. Two byte-identical programs (a Python loop of about 50 ms) as the slow program and its
   reference, the whole measurement repeated ``--repeats`` times (one row each, in one pytest
   run): the spread of the reference's measured speedup in wall mode (goal 1.00 +/- 0.03) and in
   instruction mode (goal exactly 1.000). PIE's own sandbox measured 0.75 to 1.14 for this.
   (A candidate byte-identical to the slow program is not measured at all: it is no edit.)
2. The bundled PIE sample graded with ``-n 2`` and ``-n 0``, side by side: wall time and ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PROGRAM = "n = int(input())\ntotal = 0\nfor i in range(n):\n    total += i\nprint(total)\n"
N = 1_000_000
METRICS = ("wall", "instructions")


def pytest(*args: str, cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-q", *args],
                          cwd=cwd, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return time.perf_counter() - started


def identical(root: Path, repeats: int, trials: int, metric: str) -> list[float]:
    cases = root / "cases" / "p1"
    cases.mkdir(parents=True, exist_ok=True)
    (cases / "input.0.txt").write_text(f"{N}\n")
    (cases / "output.0.txt").write_text(f"{N * (N - 1) // 2}\n")
    # Row i: a slow program, its byte-identical twin as the reference, and a candidate that
    # differs only by a comment (the rows differ by a comment too: PIE joins on the code).
    slow = [f"{PROGRAM}# row {i}\n" for i in range(repeats)]
    (root / "ref.jsonl").write_text("".join(json.dumps({"problem_id": "p1", "submission_id_v0": f"s{i}",
                                    "language": "python", "input": code, "target": code}) + "\n" for i, code in enumerate(slow)))
    (root / "gen.jsonl").write_text("".join(json.dumps({"input": code, "generated_answers": [code + "# edit\n"]}) + "\n"
                                    for code in slow))
    (root / "config.yaml").write_text(yaml.safe_dump({
        "model_generated_outputs_path": "gen.jsonl", "inputs_outputs_basepath": "cases", "reference_file_path": "ref.jsonl",
        "output_report_file_path": "report.jsonl", "num_trials": trials, "ignore_first_k": 1, "max_time_per_run": 30,
    }))
    report = root / f"{metric}.json"
    pytest("--codebench=pie", "--codebench-config", "config.yaml", "--codebench-pie-metric", metric,
           "--codebench-report", str(report), cwd=root)
    return [item["figures"]["reference_speedup"] for item in json.loads(report.read_text())["items"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--trials", type=int, default=25)  # PIE's own default
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for metric in METRICS:
            speedups = identical(root, args.repeats, args.trials, metric)
            print(f"identical programs, {metric:12s}: {len(speedups)} measurements, speedup "
                  f"{min(speedups):.4f} .. {max(speedups):.4f} (max |s - 1| = {max(abs(s - 1) for s in speedups):.4f})")
        serial = pytest("--codebench=pie", cwd=root)
        parallel = pytest("--codebench=pie", "-n", "2", cwd=root)
        print(f"bundled sample: -n 0 {serial:.1f} s, -n 2 {parallel:.1f} s, ratio {serial / parallel:.2f}x")


if __name__ == "__main__":
    main()
