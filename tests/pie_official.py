"""PIE's own harness on an eval config, for tests that compare our PIE report with PIE's.

``run_eval(config, python)`` runs ``src/codenet_eval/run_eval.py`` of madaan/pie-perf where
``CODEBENCH_PIE_PERF`` names a checkout of it and an interpreter with its imports (pandas, numpy,
psutil, tqdm, pyyaml) is at hand (``CODEBENCH_PIE_PYTHON``, else the one running the tests). PIE's
repository has no licence, so none of its code is copied here: where there is no checkout (CI
reaches no GitHub), ``reproduce`` computes its Python report as its code does, step by step,
each step citing the file and lines of madaan/pie-perf it follows (at its stored HEAD, 8f74491).
What PIE leaves to pandas (the join, NaN written as null) is spelled out.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

CHECKOUT = "CODEBENCH_PIE_PERF"
PYTHON = "CODEBENCH_PIE_PYTHON"


def checkout() -> tuple[Path, str] | None:
    """PIE's checkout and an interpreter that can run its run_eval.py, or None."""
    root = os.environ.get(CHECKOUT)
    if not root or not (Path(root) / "src" / "codenet_eval" / "run_eval.py").exists():
        return None
    python = os.environ.get(PYTHON, sys.executable)
    imports = "import pandas, numpy, psutil, tqdm, yaml"
    if subprocess.run([python, "-c", imports], capture_output=True, check=False).returncode != 0:
        return None
    return Path(root), python


def run_eval(config: Path, programs_python: str) -> list[dict[str, Any]]:
    """PIE's report of ``config`` by PIE's own run_eval.py, its programs run by
    ``programs_python`` (PIE runs ``python`` from PATH: its folder goes first)."""
    found = checkout()
    assert found is not None, f"{CHECKOUT} names no checkout of madaan/pie-perf with an interpreter for it"
    root, python = found
    env = {**os.environ, "PATH": f"{Path(programs_python).parent}{os.pathsep}{os.environ['PATH']}"}
    args = [python, "-m", "src.codenet_eval.run_eval", "--eval_config", str(config)]
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return read_report(config)


def read_report(config: Path) -> list[dict[str, Any]]:
    settings = yaml.safe_load(config.read_text())
    path = Path(settings["output_report_file_path"])
    return [json.loads(line) for line in path.read_text().splitlines() if line]


# -- a reproduction, for Python programs, of what run_eval.py computes ---------------------------


def reproduce(config: Path, programs_python: str) -> list[dict[str, Any]]:
    """PIE's report of ``config`` (absolute paths, a reference file, a list of candidates,
    ``is_prompt_based: false``, ``return_if_acc_below: null``), computed as run_eval.py does."""
    cfg = yaml.safe_load(config.read_text())
    column = cfg["model_generated_potentially_faster_code_col"]
    # run_eval.py 100-114: the generations, each slow program stripped (not prompt-based).
    generations = [json.loads(line) for line in Path(cfg["model_generated_outputs_path"]).read_text().splitlines()]
    for row in generations:
        row["slower_program"] = row[cfg["slow_code_col"]].strip()
    # 118-129: the references keyed by their own input, both sides stripped, runs of five
    # newlines taken out; 134-144: pd.merge(gen, ref, on slower_program, suffixes ("", "_ref"),
    # how="inner"), then drop_duplicates on slower_program (the first row kept).
    references = [json.loads(line) for line in Path(cfg["reference_file_path"]).read_text().splitlines()]
    for ref in references:
        ref["slower_program"] = ref["input"].strip().replace("\n\n\n\n\n", "")
    merged, seen = [], set()
    for row in generations:
        key = row["slower_program"].strip().replace("\n\n\n\n\n", "")
        row["slower_program"] = key
        for ref in references:
            if ref["slower_program"] == key and key not in seen:
                seen.add(key)
                joined = dict(row)
                for name, value in ref.items():
                    if name != "slower_program":
                        joined[f"{name}_ref" if name in row else name] = value
                merged.append(joined)
    # 166-169: one column per candidate where the column holds lists.
    multigen = isinstance(merged[0][column], list)
    if multigen:
        for row in merged:
            row.update({f"{column}_{i}": code for i, code in enumerate(row[column])})
    report = []
    for row in merged:
        # 219-243: the slow program as joined, each candidate and the reference stripped.
        programs = [("input", row["slower_program"]), ("reference", row[cfg["reference_code_col"]].strip())]
        candidates = row[column] if multigen else [row[column]]
        tags = [f"{column}_{i}" for i in range(len(candidates))] if multigen else [column]
        programs += [(tag, code.strip()) for tag, code in zip(tags, candidates, strict=True)]
        tests = Path(cfg["inputs_outputs_basepath"]) / row["problem_id"]
        # 207-215: the expected outputs, output.0.txt up to the number of output files.
        count = len(list(tests.glob("output*.txt")))
        truths = [(tests / f"output.{i}.txt").read_text().strip() + "\n" for i in range(count)]
        stats: dict[str, Any] = {}
        for tag, code in programs:  # 285-313
            mean, std, acc = run_python(code, tests, truths, cfg, programs_python)
            stats |= {f"{tag}_time_mean": mean, f"{tag}_time_std": std, f"{tag}_acc": acc}
        if multigen:
            stats |= best_generation(stats, column)
        # 371-382: the row's columns, then the figures; pandas writes NaN as null.
        report.append({**row, **{name: None if _nan(value) else value for name, value in stats.items()}})
    return report


def run_python(
    code: str, tests: Path, truths: list[str], cfg: dict[str, Any], python: str
) -> tuple[float, float, float]:
    """sandbox.py 39-120 (run_python_code_on_inputs): each test case ``num_trials`` times in a row,
    ``taskset --cpu-list N python FILE < input.i.txt`` timed with time.time() around the whole
    subprocess (137-166: Popen, communicate with the timeout, output decoded and stripped; the
    exit code is never read); a timeout returns (nan, nan, 0) at once; the first
    ``ignore_first_k`` runs of each test case dropped; np.mean and np.std (population) of the
    kept times in ms, and the mean accuracy."""
    source = tests.parent.parent / "pie-official" / "prog.py"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(code)
    command = f"taskset --cpu-list {cfg['cpu_number']} {python} {source}"
    times, accs = [], []
    for index, truth in enumerate(truths):
        for trial in range(cfg["num_trials"]):
            with open(tests / f"input.{index}.txt") as stdin:
                start = time.time()
                proc = subprocess.Popen(
                    shlex.split(command), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                )
                try:
                    output = proc.communicate(timeout=cfg["max_time_per_run"])[0].decode("utf-8").strip()
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    return math.nan, math.nan, 0.0
                taken = time.time() - start
            if trial >= cfg["ignore_first_k"]:
                times.append(taken * 1000)
                accs.append(accuracy(output, truth))
    return statistics.fmean(times), statistics.pstdev(times), statistics.fmean(accs)


def accuracy(output: str, truth: str) -> float:
    """sandbox.py 169-187 (get_accuracy): lines compared pairwise, equal or both floats within 1e-3."""
    correct = 0
    expected = truth.strip().splitlines()
    for got, want in zip(output.strip().splitlines(), expected, strict=False):
        same = got == want
        if not same:
            try:
                same = abs(float(got) - float(want)) < 1e-3
            except ValueError:
                pass
        correct += int(same)
    return correct / len(expected)


def best_generation(stats: dict[str, Any], column: str) -> dict[str, Any]:
    """run_eval.py 330-361: the candidates sorted by time_mean, the first with accuracy 1.0, else
    the first (the fastest), under the column's own name."""
    timed = sorted(
        ((name, value) for name, value in stats.items() if column in name and "time_mean" in name),
        key=lambda pair: pair[1],
    )
    chosen = next((pair for pair in timed if stats[pair[0].replace("_time_mean", "_acc")] == 1.0), timed[0])
    tag = chosen[0].replace("_time_mean", "")
    return {
        f"{column}_time_mean": chosen[1],
        f"{column}_time_std": stats[f"{tag}_time_std"],
        f"{column}_acc": stats[f"{tag}_acc"],
    }


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
