#!/usr/bin/env python3
"""Build the bundled PIE sample from its source tree (stdlib only).

    python datasets/pie/pack.py           # rewrite every generated file
    python datasets/pie/pack.py --check   # exit 1 if a generated file differs from a fresh pack

Sources: src/<problem_id>/*.py|*.cpp (slow programs, references, candidates) and the
tables below. Generated: eval_config.yaml, reference.jsonl, generations.jsonl,
expected.json and test_cases/<problem_id>/{input,output}.<i>.txt. The expected outputs
are produced by running each problem's reference program (g++ for C++), and every slow
program of the problem must print the same. verify.py checks the expected outcomes.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
CFLAGS = ["--std=c++17", "-O1"]

EVAL_CONFIG = """\
model_generated_outputs_path: generations.jsonl
inputs_outputs_basepath: test_cases
reference_file_path: reference.jsonl
output_report_file_path: report.jsonl
language: python
num_problems_to_evaluate: -1
num_trials: 6
ignore_first_k: 1
max_time_per_run: 5
temp_dir: null
model_generated_potentially_faster_code_col: generated_answers
slow_code_col: input
reference_code_col: target
is_prompt_based: false
cpu_number: 0
return_if_acc_below: null
cflags: --std=c++17 -O1
cpp_results_path: null
"""


def _range_mean_input(n: int, q: int, seed: int, query_seed: int) -> str:
    """p00003: n, q, generator seed, then q queries l r with l <= n/2 <= r (long ranges)."""
    rng = random.Random(query_seed)
    lines = [f"{n} {q} {seed}"]
    for _ in range(q):
        lines.append(f"{rng.randint(1, n // 2)} {rng.randint(n // 2, n)}")
    return "\n".join(lines) + "\n"


# problem_id -> language, statement (for the README) and the test inputs, in order.
PROBLEMS: dict[str, dict] = {
    "p00001": {
        "language": "python",
        "title": "count the primes <= N",
        "tests": ["120000\n", "100003\n", "140000\n", "170000\n"],
    },
    "p00002": {
        "language": "python",
        "title": "count pairs i < j with (a_i + a_j) % K == 0 (n, K, seed; generated array)",
        "tests": ["2200 10 1\n", "2500 360 7\n", "2800 1000 12345\n", "2500 997 99\n"],
    },
    "p00003": {
        "language": "python",
        "title": "mean of a[l..r] for each query, 6 decimals (floats)",
        "tests": [
            _range_mean_input(60000, 175, 5, 1),
            _range_mean_input(80000, 130, 77, 2),
            _range_mean_input(40000, 280, 2024, 3),
        ],
    },
    "p00004": {
        "language": "cpp",
        "title": "count inversions (n, M, seed; generated array)",
        "tests": [
            "12000 1000000000 1\n",
            "13000 1000 42\n",
            "14000 1000000 7\n",
            "12500 50 3\n",
        ],
    },
    "p00005": {
        "language": "cpp",
        "title": "sum of sigma(k) (sum of divisors) for k = 1..N",
        "tests": ["240000\n", "300000\n", "360000\n"],
    },
    "p00006": {
        "language": "cpp",
        "title": "maximum subarray sum (n, lo, hi, seed; generated array)",
        "tests": [
            "26000 -1000000 1000000 1\n",
            "25000 -1000 -1 5\n",
            "24000 -50 50 9\n",
            "30000 -999999 1000000 2\n",
        ],
    },
}

# One row per (problem, slow submission); candidates are (label, expected outcome, file,
# what it is). Paths are relative to src/.
ROWS: list[dict] = [
    {
        "problem_id": "p00001",
        "submission_id_v0": "s0000001",
        "slow": "p00001/slow_s0000001.py",
        "target": "p00001/reference.py",
        "candidates": [
            ("faster", "passed", "p00001/cand_s0000001_0.py", "bytearray sieve"),
            ("crash", "runtime_error", "p00001/cand_s0000001_1.py",
             "the sieve, prints the right count, then sys.exit(3)"),
            ("wrong", "wrong_output", "p00001/cand_s0000001_2.py",
             "sieve over 0..N-1: misses N itself when N is prime (tests 1 and 3)"),
        ],
    },
    {
        "problem_id": "p00001",
        "submission_id_v0": "s0000002",
        "slow": "p00001/slow_s0000002.py",
        "target": "p00001/reference.py",
        "candidates": [
            ("identical", "not_faster", "p00001/cand_s0000002_0.py",
             "byte-identical to the slow program"),
            ("faster", "passed", "p00001/cand_s0000002_1.py", "list sieve"),
        ],
    },
    {
        "problem_id": "p00002",
        "submission_id_v0": "s0000003",
        "slow": "p00002/slow_s0000003.py",
        "target": "p00002/reference.py",
        "candidates": [
            ("faster", "passed", "p00002/cand_s0000003_0.py", "count residues with a Counter"),
            ("timeout", "test_timeout", "p00002/cand_s0000003_1.py",
             "two ends walk towards residue K/2 with `while lo != hi`: they never meet "
             "when K is odd (test 3), an endless loop"),
            ("wrong", "wrong_output", "p00002/cand_s0000003_2.py",
             "pairs residue K/2 with itself as cnt^2 instead of cnt*(cnt-1)/2 "
             "(wrong when K is even)"),
        ],
    },
    {
        "problem_id": "p00003",
        "submission_id_v0": "s0000004",
        "slow": "p00003/slow_s0000004.py",
        "target": "p00003/reference.py",
        "candidates": [
            ("faster-4-digits", "passed", "p00003/cand_s0000004_0.py",
             "prefix sums, prints 4 decimals (float rule: within 1e-3)"),
            ("slower", "not_faster", "p00003/cand_s0000004_1.py",
             "walks the whole array for every query, adding the items in range "
             "(~3x the work)"),
            ("wrong-2-digits", "wrong_output", "p00003/cand_s0000004_2.py",
             "prefix sums, prints 2 decimals (off by up to 5e-3)"),
            ("faster-repr", "passed", "p00003/cand_s0000004_3.py",
             "prefix sums, prints repr(float) (up to 17 digits)"),
        ],
    },
    {
        "problem_id": "p00004",
        "submission_id_v0": "s0000005",
        "slow": "p00004/slow_s0000005.cpp",
        "target": "p00004/reference.cpp",
        "candidates": [
            ("faster", "passed", "p00004/cand_s0000005_0.cpp", "merge sort counting"),
            ("compile-error", "build_error", "p00004/cand_s0000005_1.cpp",
             "calls sort_count before it is declared"),
            ("slower", "not_faster", "p00004/cand_s0000005_2.cpp",
             "loops over all n^2 ordered pairs, keeps i < j (2x the work)"),
            ("identical", "not_faster", "p00004/cand_s0000005_3.cpp",
             "byte-identical to the slow program"),
        ],
    },
    {
        "problem_id": "p00005",
        "submission_id_v0": "s0000006",
        "slow": "p00005/slow_s0000006.cpp",
        "target": "p00005/reference.cpp",
        "candidates": [
            ("faster", "passed", "p00005/cand_s0000006_0.cpp",
             "O(sqrt N) blocks of equal N / d"),
            ("wrong", "wrong_output", "p00005/cand_s0000006_1.cpp",
             "O(N) but sums in an int: overflows"),
            ("crash", "runtime_error", "p00005/cand_s0000006_2.cpp",
             "O(N), prints the right sum, then returns 3"),
        ],
    },
    {
        "problem_id": "p00006",
        "submission_id_v0": "s0000007",
        "slow": "p00006/slow_s0000007.cpp",
        "target": "p00006/reference.cpp",
        "candidates": [
            ("faster", "passed", "p00006/cand_s0000007_0.cpp",
             "one pass over prefix sums, no array"),
            ("timeout", "test_timeout", "p00006/cand_s0000007_1.cpp",
             "Kadane that `continue`s on a zero without advancing: endless loop on "
             "test 2 (values -50..50)"),
            ("wrong", "wrong_output", "p00006/cand_s0000007_2.cpp",
             "Kadane starting from best = 0: prints 0 when every value is negative (test 1)"),
        ],
    },
]


def read_src(rel: str) -> str:
    return (SRC / rel).read_text()


def run_program(path: Path, language: str, stdin: str, workdir: Path) -> str:
    if language == "python":
        cmd = [sys.executable, str(path)]
    else:
        exe = workdir / (path.parent.name + "_" + path.stem)
        if not exe.exists():
            subprocess.run(["g++", *CFLAGS, "-o", str(exe), str(path)], check=True)
        cmd = [str(exe)]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise SystemExit(f"{path} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def build() -> dict[str, str]:
    """Every generated file: relative path -> text."""
    files: dict[str, str] = {"eval_config.yaml": EVAL_CONFIG}
    ref_lines, gen_lines, expected = [], [], {}
    for row in ROWS:
        pid, sid = row["problem_id"], row["submission_id_v0"]
        lang = PROBLEMS[pid]["language"]
        slow = read_src(row["slow"])
        ref_lines.append(json.dumps({
            "problem_id": pid,
            "submission_id_v0": sid,
            "language": lang,
            "input": slow,
            "target": read_src(row["target"]),
        }))
        gen_lines.append(json.dumps({
            "input": slow,
            "generated_answers": [read_src(c[2]) for c in row["candidates"]],
        }))
        for i, (label, outcome, _, _) in enumerate(row["candidates"]):
            expected[f"{pid}/{sid}[{i}]"] = {"label": label, "outcome": outcome}
    files["reference.jsonl"] = "\n".join(ref_lines) + "\n"
    files["generations.jsonl"] = "\n".join(gen_lines) + "\n"
    files["expected.json"] = json.dumps(expected, indent=2) + "\n"

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for pid, problem in PROBLEMS.items():
            lang = problem["language"]
            targets = {r["target"] for r in ROWS if r["problem_id"] == pid}
            assert len(targets) == 1, pid
            target = SRC / targets.pop()
            slows = [r["slow"] for r in ROWS if r["problem_id"] == pid]
            for i, stdin in enumerate(problem["tests"]):
                out = run_program(target, lang, stdin, work)
                for slow in slows:
                    if run_program(SRC / slow, lang, stdin, work) != out:
                        raise SystemExit(f"{slow} disagrees with the reference on test {i}")
                files[f"test_cases/{pid}/input.{i}.txt"] = stdin
                files[f"test_cases/{pid}/output.{i}.txt"] = out
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with a fresh pack instead of writing")
    args = parser.parse_args()
    files = build()
    stale = [p for p, text in files.items()
             if not (HERE / p).exists() or (HERE / p).read_text() != text]
    known = {str(p.relative_to(HERE)) for p in (HERE / "test_cases").rglob("*.txt")} \
        if (HERE / "test_cases").exists() else set()
    extra = sorted(known - set(files))
    if args.check:
        for p in stale:
            print(f"stale: {p}")
        for p in extra:
            print(f"extra: {p}")
        return 1 if stale or extra else 0
    for p in extra:
        (HERE / p).unlink()
    for p in stale:
        (HERE / p).parent.mkdir(parents=True, exist_ok=True)
        (HERE / p).write_text(files[p])
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
