"""On a GPU machine: real A/A in the profiler-timed modes, and the trials the calibrated rule needs.

    python bench/computeeval_gpu_aa.py [--dataset 2026-1|PATH] [--profilers cupti:2,ncu:1]
        [--deadline S] [--state FILE] [--out FILE]

NVIDIA's problems time their benchmark in two modes, ``kernels`` and ``region`` (every problem
with a ``benchmark_command`` in the four releases uses one of them), and both need a profiler.
For the first N cuda-kernels problems of each mode (``PROFILER:N``), the solution is the reference with one
statement added that does nothing (an edit, so it is timed: the timing rule's own real A/A).
For each profiler, one plugin run with ``--codebench-perf`` grades them, and this prints per
mode and profiler: the trials the reference's A/A took (``aa_trials``) and its spread
(high/low), the trials the A/A solution took and why it stopped, and how many A/A solutions
claimed "faster" (low bound above 1.0) or "slower" (high bound below 1.0). Either is a false
claim; the rule promises each at most 5% of the time.

Preparation and the device call: as bench/computeeval_gpu.py's docstring says (its wheels in
.whl, carried). Each plugin run is stopped at the --deadline (seconds from the start), and the
figures are saved to --state after each, so a device command cut short keeps what it measured;
a run stopped at the deadline gives nothing. On an H200, CUPTI took 196 s for 2 problems a
mode, and ncu gave no result for 1 a mode within 350 s (bench/results/computeeval_gpu_aa-h200.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from computeeval_gpu import machine, problems_pack, read_pack, write_packs  # bench/ is on sys.path

MODES = ("kernels", "region")
FIGURES = (
    "perf_mode",
    "trials",
    "trials_stop",
    "speedup",
    "speedup_low",
    "speedup_high",
    "aa_low",
    "aa_high",
    "aa_trials",
)
WHY = ("perf_skipped", "perf_failed", "perf_suspect")
# A statement that does nothing, appended after the includes: an edit (perf/no_edit.py compares
# code lines), so the solution is timed.
NOOP = "\nstatic const int codebench_aa_unused_ = 0;\n"


def packs(pack: Path, per_mode: int, folder: Path) -> tuple[Path, Path, list[str]]:
    """A problems datapack of the first ``per_mode`` cuda-kernels problems of each timing mode,
    and a solutions datapack of their references, each with NOOP added to its first file."""
    metadata, lines = read_pack(pack)
    chosen: list[bytes] = []
    for mode in MODES:
        chosen += [
            line
            for line in lines
            if (record := json.loads(line)).get("group") == "cuda-kernels"
            and record.get("benchmark_command")
            and (record.get("timing_mode") or {}).get("type") == mode
        ][:per_mode]
    records = [json.loads(line) for line in chosen]
    solutions = []
    for record in records:
        solution = dict(record["baseline_solution"])
        first, *rest = solution["files"]
        solution["files"] = [{**first, "content": first["content"] + NOOP}, *rest]
        solutions.append(solution)
    problems, answers = write_packs(folder / "aa", metadata, chosen, solutions, {"description": "A/A"})
    return problems, answers, [record["task_id"] for record in records]


def run(profiler: str, problems: Path, answers: Path, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    report = folder / f"{profiler}.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN", "--codebench=computeeval"]
    command += ["--codebench-store=off", f"--codebench-dataset={problems}", f"--codebench-solutions={answers}"]
    command += ["--codebench-perf", f"--codebench-profiler={profiler}", f"--codebench-report={report}"]
    command += [f"--codebench-cache-dir={folder / 'cache'}", "-n", str(args.workers)]
    left = args.deadline - (time.monotonic() - args.started)
    print(f"$ {' '.join(command)}  (at most {left:.0f} s)", flush=True)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=max(left, 1))
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - started, "error": "stopped at the deadline"}
    seconds = time.perf_counter() - started
    if not report.exists():
        return {"seconds": seconds, "error": output[-3000:]}
    items = json.loads(report.read_text())["items"]
    return {
        "seconds": seconds,
        "items": [
            {
                "task_id": item["task_id"],
                "status": item["status"],
                "reason": (item.get("reason") or "")[:300],
                **{key: item["figures"][key] for key in FIGURES if key in item["figures"]},
                **{key: str(item["figures"][key])[:300] for key in WHY if key in item["figures"]},
            }
            for item in items
        ],
    }


def summary(state: dict[str, Any]) -> list[str]:
    lines = [f"machine: {state.get('machine', '?')}", ""]
    for profiler, result in state.get("runs", {}).items():
        if "error" in result:
            lines.append(
                f"{profiler} on {result['problems']}: {result['seconds']:.0f} s, no result: {result['error'][-600:]}"
            )
            continue
        lines.append(f"{profiler}: {result['seconds']:.0f} s for {len(result['items'])} items")
        for mode in MODES:
            items = [item for item in result["items"] if item.get("perf_mode") == mode]
            timed = [item for item in items if "trials" in item]
            spreads = [item["aa_high"] / item["aa_low"] for item in items if item.get("aa_low")]
            faster = sum(float(item["speedup_low"]) > 1.0 for item in timed)
            slower = sum(float(item["speedup_high"]) < 1.0 for item in timed)
            lines.append(
                f"  {mode:8} {len(timed)} of {len(items)} timed;"
                f" A/A trials {[item.get('aa_trials') for item in items]},"
                f" spread median {statistics.median(spreads) if spreads else float('nan'):.4f};"
                f" solution trials {[item['trials'] for item in timed]}"
                f" (stops {sorted({str(item.get('trials_stop')) for item in timed})});"
                f" false faster {faster}, false slower {slower}"
            )
        for item in result["items"]:
            shown = {key: item[key] for key in FIGURES[1:] if key in item}
            why = {key: item[key] for key in WHY if key in item}
            lines.append(f"    {item['task_id']:10} {item['status']:8} {item.get('perf_mode', '-'):8} {shown} {why}")
            if item["status"] != "passed":
                lines.append(f"      {item['reason']}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="2026-1", help="a release name in the installed compute_eval, or a path")
    parser.add_argument("--profilers", default="cupti:2,ncu:1", help="PROFILER:N (problems a mode), in this order")
    parser.add_argument("-n", dest="workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds from the start for all runs")
    parser.add_argument("--state", type=Path, help="the figures, saved after each run")
    parser.add_argument("--out", type=Path, help="also write the summary to this file")
    args = parser.parse_args()
    args.started = time.monotonic()
    state: dict[str, Any] = {"machine": machine(), "runs": {}}
    with tempfile.TemporaryDirectory(prefix="computeeval-gpu-aa-") as temporary:
        folder = Path(temporary)
        pack = problems_pack(args.dataset)
        for each in filter(None, args.profilers.split(",")):
            profiler, _, count = each.partition(":")
            run_folder = folder / profiler
            run_folder.mkdir()
            problems, answers, ids = packs(pack, int(count or 1), run_folder)
            state["runs"][profiler] = {"problems": ids, **run(profiler, problems, answers, run_folder, args)}
            if args.state:
                args.state.write_text(json.dumps(state, indent=1) + "\n")
    lines = summary(state)
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
