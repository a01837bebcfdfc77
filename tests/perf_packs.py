"""Host-only ComputeEval problems with a benchmark, for the perf tests: the held-out test program
calls the solution's ``work()`` (timed, with ``COMPUTE_EVAL_TIME_MS`` under ``--perf``) and then
its ``done()``; a solution's work is a sleep of a set length, so that ratios are known."""

from __future__ import annotations

from typing import Any

import packs
import pytest

from conftest import Run

HEADER = "void work(void);\nvoid done(void);\n"
TEST = r"""#include <stdio.h>
#include <string.h>
#include <time.h>
#include "work.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    int perf = argc > 1 && strcmp(argv[1], "--perf") == 0;
    double start = now_ms();
    work();
    if (perf) printf("COMPUTE_EVAL_TIME_MS: %.3f\n", now_ms() - start);
    done();
    puts("ok");
    return 0;
}
"""
# Long enough that a busy two-core machine's jitter stays a few percent: beside a CPU hog (two
# busy loops), 150 ms was too short: a reference timed against itself spread 0.91x-1.64x in
# process mode (its sandbox's start-up counted) and could not be timed. The sleeps a test
# compares with it are written relative to it.
REFERENCE_MS = 300


def sleeper(ms: int, *, lines: str = "", work: str = "", done: str = "") -> str:
    """A solution whose work sleeps ``ms``; ``lines`` go before the functions, ``work`` and
    ``done`` into them (``work`` before the sleep)."""
    return (
        '#include <time.h>\n#include "work.h"\n'
        f"{lines}\n"
        f"static void nap(long ms) {{ struct timespec t = {{ms / 1000, (ms % 1000) * 1000000L}}; nanosleep(&t, 0); }}\n"
        f"void work(void) {{ {work} nap({ms}); }}\n"
        f"void done(void) {{ {done} }}\n"
    )


def problem(task_id: str, mode: dict[str, Any] | None = None, *, cxx: bool = False, **fields: Any) -> dict[str, Any]:
    """A problem timed by ``./test.out --perf`` under ``mode`` (None: none given, i.e. process),
    whose reference sleeps :data:`REFERENCE_MS`; ``cxx``: a C++ test program and solution."""
    source, test = ("solution.cpp", "test/test_main.cpp") if cxx else ("solution.c", "test/test_main.c")
    compiler = "c++" if cxx else "cc"
    given = {
        "context_files": [{"path": "include/work.h", "content": HEADER}],
        "test_files": [{"path": test, "content": TEST}],
        "build_command": f"{compiler} -O1 -I include -o test.out {source} {test}",
        "benchmark_command": "./test.out --perf",
        "baseline_solution": solution(task_id, sleeper(REFERENCE_MS), cxx=cxx),
    }
    record = packs.problem(task_id, **{**given, **fields})
    if mode is not None:
        record["timing_mode"] = mode
    return record


def solution(task_id: str, code: str, *, cxx: bool = False) -> dict[str, Any]:
    return packs.solution(task_id, files=[{"path": "solution.cpp" if cxx else "solution.c", "content": code}])


def write(pytester: pytest.Pytester, problems: list[dict[str, Any]], solutions: list[dict[str, Any]]) -> list[str]:
    """The packs, and the options that name them."""
    return packs.pack_args(pytester.path, problems, solutions)


def figures(run: Run, name: str) -> dict[str, str]:
    """An item's perf properties (those the perf phase writes), from the JUnit XML."""
    properties = run.items[name]["properties"]
    perf = ("perf_", "solution_ms", "baseline_ms", "speedup", "trials", "aa_")
    return {key: value for key, value in properties.items() if key.startswith(perf)}
