#!/usr/bin/env python3
"""Check the bundled PIE sample's expected outcomes by running every program (stdlib only).

    python datasets/pie/verify.py [--repeats 3] [--python /path/to/python3] [--cflags "..."]

Reads the generated files (reference.jsonl, generations.jsonl, expected.json, test_cases/),
runs the slow program, the reference and every candidate on every test case (Python with
--python, default this interpreter; C++ compiled once with the config's cflags), with a
5 s kill timeout, interleaving the programs of a row on each repeat. Per test the median
wall time over the repeats is kept (interpreter start-up included). Then, per candidate:

  build_error     g++ fails
  test_timeout    some test runs past max_time_per_run (2 s)
  runtime_error   some test exits non-zero (whatever it printed)
  wrong_output    some test fails PIE's line rule (lines equal, or both floats within 1e-3)
  not_faster      correct, and byte-identical to the slow program or >= 1.5x slower in total
  passed          correct and >= 2x faster in total

and a correct candidate between 1/1.5x and 2x is reported as ambiguous (a failure here: the
sample must not depend on noise). The reference must be correct and >= 2x faster as well.
Exit status 1 on any mismatch with expected.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KILL_AFTER = 5.0
FASTER = 2.0
SLOWER = 1.5


def load_config() -> dict:
    cfg = {}
    for line in (HERE / "eval_config.yaml").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition(":")
            cfg[key.strip()] = value.strip()
    return cfg


def accuracy(output: str, expected: str) -> float:
    """PIE's get_accuracy: share of expected lines matched (equal, or floats within 1e-3)."""
    want = expected.strip().splitlines()
    got = output.strip().splitlines()
    good = 0
    for g, w in zip(got, want):
        ok = g == w
        if not ok:
            try:
                ok = abs(float(g) - float(w)) < 1e-3
            except ValueError:
                ok = False
        good += ok
    return good / len(want) if want else float(output.strip() == "")


def load_tests(pid: str) -> list[tuple[str, str]]:
    folder = HERE / "test_cases" / pid
    tests = []
    while (folder / f"input.{len(tests)}.txt").exists():
        i = len(tests)
        tests.append(((folder / f"input.{i}.txt").read_text(),
                      (folder / f"output.{i}.txt").read_text()))
    stray = {p.name for p in folder.iterdir()} - {
        f"{kind}.{i}.txt" for kind in ("input", "output") for i in range(len(tests))}
    assert not stray, f"{pid}: unexpected files or a gap in the numbering: {sorted(stray)}"
    return tests


class Program:
    def __init__(self, name: str, code: str, language: str, work: Path, cflags: list[str],
                 python: list[str]):
        self.name, self.code, self.language = name, code, language
        self.compile_error = None
        self.runs: dict[int, list[tuple[float, int | None, str]]] = {}
        stem = work / name.replace("/", "_").replace("[", "_").replace("]", "")
        if language == "python":
            path = stem.with_suffix(".py")
            path.write_text(code)
            self.cmd = [*python, str(path)]
        else:
            path = stem.with_suffix(".cpp")
            path.write_text(code)
            exe = stem.with_suffix(".bin")
            proc = subprocess.run(["g++", *cflags, "-o", str(exe), str(path)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
                self.compile_error = (errors or ["g++ failed"])[0].split(": ", 1)[-1]
            self.cmd = [str(exe)]

    def run(self, i: int, stdin: str, max_time: float) -> None:
        if self.compile_error:
            return
        done = self.runs.setdefault(i, [])
        if any(rc is None or t > max_time for t, rc, _ in done):
            return  # it timed out once on this test: no need to wait again
        start = time.perf_counter()
        try:
            proc = subprocess.run(self.cmd, input=stdin, capture_output=True, text=True,
                                  timeout=KILL_AFTER)
            done.append((time.perf_counter() - start, proc.returncode, proc.stdout))
        except subprocess.TimeoutExpired:
            done.append((time.perf_counter() - start, None, ""))

    def outcome(self, tests: list[tuple[str, str]], max_time: float) -> tuple[str, str]:
        if self.compile_error:
            return "build_error", self.compile_error
        for i in range(len(tests)):
            if any(rc is None or t > max_time for t, rc, _ in self.runs[i]):
                return "test_timeout", f"test {i}: > {max_time:g} s"
        for i, (_, want) in enumerate(tests):
            for _, rc, out in self.runs[i]:
                if rc != 0:
                    acc = accuracy(out, want)
                    return "runtime_error", f"test {i}: exit {rc} (output accuracy {acc:.2f})"
        for i, (_, want) in enumerate(tests):
            for _, _, out in self.runs[i]:
                acc = accuracy(out, want)
                if acc < 1.0:
                    return "wrong_output", f"test {i}: accuracy {acc:.2f}"
        return "correct", ""

    def times_ms(self, n: int) -> list[float]:
        return [statistics.median(t for t, _, _ in self.runs[i]) * 1000 for i in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter command for Python programs (default: this one)")
    parser.add_argument("--cflags", help="g++ flags (default: the config's cflags)")
    args = parser.parse_args()
    python = shlex.split(args.python)

    cfg = load_config()
    max_time = float(cfg["max_time_per_run"])
    cflags = shlex.split(args.cflags or cfg["cflags"])
    refs = [json.loads(line) for line in (HERE / "reference.jsonl").read_text().splitlines()]
    gens = [json.loads(line) for line in (HERE / "generations.jsonl").read_text().splitlines()]
    expected = json.loads((HERE / "expected.json").read_text())
    assert len(refs) == len(gens), "reference and generations differ in length"

    failures: list[str] = []
    seen = set()
    size = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    print(f"sample size on disk: {size / 1024:.1f} KiB (source tree included)")
    print(f"python: {' '.join(python)}; cflags: {' '.join(cflags)}; repeats: {args.repeats}")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for ref, gen in zip(refs, gens):
            pid, sid, lang = ref["problem_id"], ref["submission_id_v0"], ref["language"]
            assert gen["input"] == ref["input"], f"{pid}/{sid}: rows out of order"
            tests = load_tests(pid)
            assert 3 <= len(tests) <= 4, f"{pid}: {len(tests)} tests"
            slow = Program(f"{pid}/{sid}/slow", ref["input"], lang, work, cflags, python)
            target = Program(f"{pid}/{sid}/reference", ref["target"], lang, work, cflags,
                             python)
            cands = [Program(f"{pid}/{sid}[{k}]", code, lang, work, cflags, python)
                     for k, code in enumerate(gen["generated_answers"])]
            assert 2 <= len(cands) <= 4, f"{pid}/{sid}: {len(cands)} candidates"
            programs = [slow, target, *cands]
            for _ in range(args.repeats):
                for i, (stdin, _) in enumerate(tests):
                    for prog in programs:
                        prog.run(i, stdin, max_time)

            print(f"\n{pid}/{sid} ({lang}, {len(tests)} tests)")
            slow_state, why = slow.outcome(tests, max_time)
            if slow_state != "correct":
                failures.append(f"{slow.name}: {slow_state} {why}")
            slow_ms = slow.times_ms(len(tests))
            slow_total = sum(slow_ms)
            fmt = lambda ms: " ".join(f"{t:7.1f}" for t in ms)  # noqa: E731
            print(f"  {'slow':<28} {'':<14} {fmt(slow_ms)}  total {slow_total:7.1f} ms")
            for prog in [target, *cands]:
                state, why = prog.outcome(tests, max_time)
                key = prog.name.replace("/reference", "")
                label = expected.get(key, {}).get("label", "reference")
                line = f"  {prog.name.split('/')[-1] + ' ' + label:<28} "
                if state == "correct":
                    ms = prog.times_ms(len(tests))
                    total = sum(ms)
                    speedup = slow_total / total
                    if prog.code == slow.code:
                        state, why = "not_faster", "byte-identical"
                    elif speedup >= FASTER:
                        state = "passed"
                    elif speedup <= 1 / SLOWER:
                        state = "not_faster"
                    else:
                        state = "ambiguous"
                    why = f"{why + ', ' if why else ''}speedup {speedup:.2f}x"
                    line += f"{state:<14} {fmt(ms)}  total {total:7.1f} ms  {why}"
                else:
                    line += f"{state:<14} {why}"
                if prog is target:
                    if state != "passed":
                        failures.append(f"{prog.name}: reference is {state}")
                else:
                    seen.add(key)
                    want = expected.get(key, {}).get("outcome")
                    if state != want:
                        failures.append(f"{key}: expected {want}, got {state}")
                        line += f"   <-- expected {want}"
                print(line)

    missing = set(expected) - seen
    if missing:
        failures.append(f"expected.json names unknown candidates: {sorted(missing)}")
    print()
    for f in failures:
        print("FAIL", f)
    print("all expected outcomes hold" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
