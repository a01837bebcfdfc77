"""PIE graded by PIE's own harness (``src/codenet_eval/run_eval.py`` of madaan/pie-perf) and by
ours (``pytest --codebench=pie``, serial and ``-n 2``), on the same eval config, side by side.

    python bench/pie_vs_official.py --pie-perf /tmp/pie-perf --pie-python /work/pievenv/bin/python [--rounds 1]

``--pie-perf``: a checkout of https://github.com/madaan/pie-perf (its ``src`` is enough);
``--pie-python``: an interpreter with what ``run_eval.py`` imports (pandas, numpy, psutil, tqdm,
pyyaml), kept apart from the plugin's. The config is issue 24's: 3 problems of the bundled sample
(its Python rows ``p00001/s0000001``, ``p00002/s0000003``, ``p00003/s0000004``) x 6 candidates
each, every candidate correct (the row's own correct ones, then the target, the target and the
slow program with a comment added), ``num_trials: 6``, ``ignore_first_k: 1``, core 0: every
program of both harnesses pinned to the same core. Both harnesses take the same ``reference.jsonl``,
``generations.jsonl`` and test cases. Ours runs with ``--codebench-store=off`` (no cached verdict).
Within a round the three runs go in an order that rotates from round to round, so that what
drifts on the machine hits each alike. It prints each run's wall time, the medians over the
rounds, and ours over PIE's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "pie"
ROWS = ("p00001/s0000001", "p00002/s0000003", "p00003/s0000004")
CANDIDATES = 6
TRIALS = 6
RUNS = ("PIE run_eval.py", "ours, serial", "ours, -n 2")


def build_pack(folder: Path) -> Path:
    """The config, its rows, 6 correct candidates a row and their test cases in ``folder``."""
    expected = json.loads((SAMPLE / "expected.json").read_text())
    references = [json.loads(line) for line in (SAMPLE / "reference.jsonl").read_text().splitlines() if line]
    generations = [json.loads(line) for line in (SAMPLE / "generations.jsonl").read_text().splitlines() if line]
    chosen_refs, chosen_gens = [], []
    for reference, generation in zip(references, generations, strict=True):
        name = f"{reference['problem_id']}/{reference['submission_id_v0']}"
        if name not in ROWS:
            continue
        correct = [
            code
            for index, code in enumerate(generation["generated_answers"])
            if expected[f"{name}[{index}]"]["outcome"] in ("passed", "not_faster")
            and expected[f"{name}[{index}]"]["label"] != "identical"
        ]
        fillers = [reference["target"], reference["target"] + "\n# a comment\n", reference["input"] + "\n# a comment\n"]
        answers = (correct + fillers * CANDIDATES)[:CANDIDATES]
        # PIE's summary reads CodeNet's own times of the two submissions.
        chosen_refs.append({**reference, "cpu_time_v0": 100, "cpu_time_v1": 50})
        chosen_gens.append({"input": reference["input"], "generated_answers": answers})
        shutil.copytree(
            SAMPLE / "test_cases" / reference["problem_id"], folder / "test_cases" / reference["problem_id"]
        )
    (folder / "reference.jsonl").write_text("".join(json.dumps(row) + "\n" for row in chosen_refs))
    (folder / "generations.jsonl").write_text("".join(json.dumps(row) + "\n" for row in chosen_gens))
    config = folder / "eval_config.yaml"
    settings = {
        "model_generated_outputs_path": folder / "generations.jsonl",
        "inputs_outputs_basepath": folder / "test_cases",
        "reference_file_path": folder / "reference.jsonl",
        "output_report_file_path": folder / "report.jsonl",
        "language": "python",
        "num_problems_to_evaluate": -1,
        "num_trials": TRIALS,
        "ignore_first_k": 1,
        "max_time_per_run": 5,
        "temp_dir": "null",
        "model_generated_potentially_faster_code_col": "generated_answers",
        "slow_code_col": "input",
        "reference_code_col": "target",
        "is_prompt_based": "false",
        "cpu_number": 0,
        "return_if_acc_below": "null",
        "cflags": "--std=c++17 -O1",
        "cpp_results_path": "null",
    }
    config.write_text("".join(f"{key}: {value}\n" for key, value in settings.items()))
    return config


def run_pie(config: Path, pie_perf: Path, python: Path) -> tuple[float, float]:
    """Wall time, and the seconds PIE spent running the slow programs alone (its report's mean
    run time of each, times its runs: every test case, ``num_trials`` times)."""
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}  # its "python"
    start = time.perf_counter()
    done = subprocess.run(
        [str(python), "-m", "src.codenet_eval.run_eval", "--eval_config", str(config)],
        cwd=pie_perf,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    report = config.parent / "report.jsonl"
    if done.returncode != 0 or not report.exists():
        sys.exit(f"run_eval.py failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in report.read_text().splitlines() if line]
    accuracies = [row[f"generated_answers_{i}_acc"] for row in rows for i in range(CANDIDATES)]
    if len(rows) != len(ROWS) or any(acc != 1.0 for acc in accuracies):
        sys.exit(f"run_eval.py graded {len(rows)} rows, accuracies {accuracies}")
    tests = {
        row["problem_id"]: len(list((config.parent / "test_cases" / row["problem_id"]).glob("input.*.txt")))
        for row in rows
    }
    slow = sum(row["input_time_mean"] * tests[row["problem_id"]] * TRIALS for row in rows) / 1000
    report.unlink()
    return took, slow


def run_ours(config: Path, workers: int, python: Path) -> tuple[float, str]:
    """Wall time, and the summary's lines on trials and the row signal. The programs run with
    the interpreter PIE's harness runs them with: the harnesses are compared, not interpreters
    (this plugin's own, in an editable install, starts 30 ms slower)."""
    report = config.parent / f"ours-{workers}.json"
    args = [
        "--codebench=pie",
        "--codebench-config",
        str(config),
        "--codebench-store=off",
        "--codebench-python",
        str(python),
    ]
    args += ["--codebench-report", str(report), *(["-n", str(workers)] if workers > 1 else [])]
    # Its folder on PATH: the sandbox shows the folders of PATH (and the plugin's own Python's).
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if not report.exists():
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    items = json.loads(report.read_text())["items"]
    wrong = [item["id"] for item in items if item["outcome"] not in ("passed", "not_faster")]
    if len(items) != len(ROWS) * CANDIDATES or wrong:
        sys.exit(f"ours graded {len(items)} items; not correct: {wrong}\n{done.stdout[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith(("trials:", "row signal:"))]
    report.unlink()
    return took, "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pie-perf", type=Path, required=True)
    parser.add_argument("--pie-python", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    times: dict[str, list[float]] = {run: [] for run in RUNS}
    with tempfile.TemporaryDirectory() as tmp:
        config = build_pack(Path(tmp))
        print(f"{len(ROWS)} rows x {CANDIDATES} candidates, num_trials 6 (1 ignored), core 0; {args.rounds} round(s)")
        for round_ in range(args.rounds):
            order = [*RUNS[round_ % 3 :], *RUNS[: round_ % 3]]
            for run in order:
                if run == RUNS[0]:
                    took, slow = run_pie(config, args.pie_perf.resolve(), args.pie_python)
                    note = f"of which the slow programs' own runs: {slow:.1f} s ({slow / took:.0%})"
                else:
                    took, note = run_ours(config, 1 if run == RUNS[1] else 2, args.pie_python)
                times[run].append(took)
                print(f"round {round_ + 1}: {run:16} {took:7.1f} s")
                if note:
                    print("  " + note.replace("\n", "\n  "))
    pie = statistics.median(times[RUNS[0]])
    print()
    print(f"| harness | wall time (median of {args.rounds}) | ratio to PIE's run_eval.py |")
    print("|---|---|---|")
    for run in RUNS:
        print(f"| {run} | {statistics.median(times[run]):.1f} s | {statistics.median(times[run]) / pie:.2f} |")


if __name__ == "__main__":
    main()
