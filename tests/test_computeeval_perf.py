"""ComputeEval's perf phase: the timing rules on made-up inputs, then --codebench-perf end to
end on host-only C problems (cc builds them; --codebench-run-without-gpu runs them), with the
figures a user sees in the JUnit XML, the JSON report and the terminal summary.

No test asserts a duration: the programs sleep for set times and the tests check the ratios
measured side by side, with margins a busy two-core machine keeps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import packs
import perf_packs
import pytest
from perf_packs import REFERENCE_MS, sleeper

from pytest_codebench.benchmarks.computeeval.guard.main_guard import GuardedCommand, read_records
from pytest_codebench.benchmarks.computeeval.perf.timing import (
    Side,
    TimingError,
    TimingMode,
    Work,
    credit,
    custom_ms,
    needs_profiler,
    profile_ms,
    suspect,
    unseen_settled,
    wall_interval,
)
from pytest_codebench.errors import DatasetError
from pytest_codebench.runners import RunResult
from pytest_codebench.stats.signs import Looks

FORCE = "--codebench-run-without-gpu"
PERF = "--codebench-perf"
# A conftest describing two GPUs (there is none here), for the runs that need one.
FAKE_GPUS = """
def pytest_codebench_probe_gpus(config):
    return {"gpus": [{"index": i, "name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"} for i in (0, 1)]}
"""

# -- timing modes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "mode"),
    [
        (None, TimingMode()),
        ({"type": "process"}, TimingMode("process")),
        ({"type": "kernels", "include": None, "exclude": None}, TimingMode("kernels")),
        (
            {"type": "kernels", "include": ["k_*"], "exclude": ["k_debug"]},
            TimingMode("kernels", ("k_*",), ("k_debug",)),
        ),
        (
            {"type": "region", "include": ["bench_region"], "exclude": None, "time_type": "wall_clock"},
            TimingMode("region", ("bench_region",), None, "wall_clock"),
        ),
        ({"type": "region", "include": None, "exclude": None, "time_type": "kernel"}, TimingMode("region")),
        ({"type": "custom"}, TimingMode("custom")),
    ],
)
def test_a_timing_mode_reads_as_nvidia_spells_it(given, mode):
    assert TimingMode.read({"timing_mode": given} if given is not None else {}) == mode


@pytest.mark.parametrize(
    ("given", "field", "message"),
    [
        ("process", "timing_mode", "expected an object"),
        ({"include": ["x"]}, "timing_mode.type", "expected one of process, kernels, region, gpu, custom, got None"),
        ({"type": "kernel"}, "timing_mode.type", "got 'kernel'"),
        ({"type": "kernels", "include": "k_*"}, "timing_mode.include", "expected a list of glob patterns"),
        ({"type": "kernels", "exclude": [1]}, "timing_mode.exclude", "expected a list of glob patterns"),
        ({"type": "region", "time_type": "cpu"}, "timing_mode.time_type", "expected one of kernel, wall_clock"),
        ({"type": "kernels", "inlcude": ["k"]}, "timing_mode", "'inlcude' does not apply to the kernels mode"),
        ({"type": "process", "include": ["k"]}, "timing_mode", "'include' does not apply to the process mode"),
    ],
)
def test_a_bad_timing_mode_names_the_file_line_and_field(given, field, message):
    with pytest.raises(DatasetError) as raised:
        TimingMode.read({"timing_mode": given}, "p.jsonl", 7)
    assert raised.value.field == field and raised.value.line == 7
    assert str(raised.value).startswith(f"p.jsonl:7: field {field!r}: ") and message in str(raised.value)


def test_only_profiled_modes_need_a_profiler():
    assert [needs_profiler(TimingMode(kind)) for kind in ("process", "kernels", "region", "gpu", "custom")] == [
        False,
        True,
        True,
        True,
        False,
    ]


def kernel(name: str, ms: float, launches: int = 1, moved: int = 0) -> dict[str, Any]:
    return {"name": name, "launches": launches, "ms": ms, "bytes": moved}


def profile(**fields: Any) -> dict[str, Any]:
    made: dict[str, Any] = {"kernels": [], "ranges": [], "memcpy_ms": 0.0, "memcpy_bytes": 0, "app_ms": None}
    return {**made, **fields}


PROFILE = profile(
    kernels=[kernel("matmul_tiled", 3.0, 10), kernel("matmul_debug", 1.0, 2), kernel("reduce", 0.5, 5)],
    ranges=[
        {"name": "bench_region", "kernel_ms": 3.5, "wall_ms": 5.0, "launches": 15},
        {"name": "setup", "kernel_ms": 1.0, "wall_ms": 9.0, "launches": 2},
    ],
    memcpy_ms=2.0,
    memcpy_bytes=4096,
    app_ms=120.0,
)


@pytest.mark.parametrize(
    ("mode", "ms"),
    [
        (TimingMode("process"), 120.0),
        (TimingMode("kernels"), 4.5),  # every kernel, as NVIDIA's summary total
        (TimingMode("kernels", ("matmul_*",)), 4.0),
        (TimingMode("kernels", ("matmul_*",), ("*_debug",)), 3.0),
        (TimingMode("kernels", None, ("matmul_*",)), 0.5),
        (TimingMode("region"), 4.5),  # every range
        (TimingMode("region", ("bench_*",)), 3.5),
        (TimingMode("region", ("bench_*",), None, "wall_clock"), 5.0),
        (TimingMode("region", None, ("setup",), "wall_clock"), 5.0),
        (TimingMode("gpu"), 6.5),  # kernels and transfers
    ],
)
def test_each_mode_reads_its_time_from_a_profile(mode, ms):
    assert profile_ms(mode, PROFILE) == pytest.approx(ms)


@pytest.mark.parametrize(
    ("mode", "given", "message"),
    [
        (TimingMode("process"), profile(), "the profiler measured no application time"),
        (TimingMode("kernels", ("nope*",)), PROFILE, "no kernel of the kernels (include ['nope*']) mode ran"),
        (TimingMode("kernels"), profile(), "no kernel of the kernels mode ran"),
        (TimingMode("region", ("nope",)), PROFILE, "no NVTX range of the region (include ['nope']), kernel time"),
        (
            TimingMode("region", None, None, "wall_clock"),
            profile(ranges=[{"name": "r", "kernel_ms": 1.0, "wall_ms": None, "launches": 1}]),
            "wall-clock time took 0 ms: nothing to time",
        ),
        (
            TimingMode("region"),
            profile(ranges=[{"name": "r", "kernel_ms": 0.0, "wall_ms": 4.0, "launches": 0}]),
            "took 0 ms",  # work done on the host inside the range: no GPU time to divide by
        ),
        (TimingMode("gpu"), profile(), "kernels and memory transfers took 0 ms"),
    ],
)
def test_a_profile_that_gives_no_time_says_why(mode, given, message):
    with pytest.raises(TimingError, match=re.escape(message)):
        profile_ms(mode, given)


# -- custom time lines ---------------------------------------------------------------------------

NONCE = "0123456789abcdef0123456789abcdef"


def mark(pid: int, event: str, value: int = 0) -> str:
    return f"\ncodebench-guard {NONCE} {pid} {event} {value}\n"


def guarded(output: str) -> tuple[list[Any], str]:
    result = RunResult("./test.out --perf", 0, False, 1.0, output)
    records, cleaned = read_records(result, GuardedCommand("x", {}, {}, NONCE), "./test.out --perf")
    return records, cleaned.output


@pytest.mark.parametrize(
    ("output", "ms"),
    [
        # The last line printed while main ran counts; an atexit handler's later one does not.
        (mark(7, "start") + "COMPUTE_EVAL_TIME_MS: 9.5\nCOMPUTE_EVAL_TIME_MS: 8\n" + mark(7, "return"), 8.0),
        (mark(7, "start") + "COMPUTE_EVAL_TIME_MS: 8\n" + mark(7, "return") + "COMPUTE_EVAL_TIME_MS: 0.01\n", 8.0),
        # A line the program had not ended when main returned still counts.
        (mark(7, "start") + "COMPUTE_EVAL_TIME_MS: 8" + mark(7, "return"), 8.0),
        # Two programs in one command: each program's main counts; what ran between them does not.
        (
            mark(7, "start")
            + "COMPUTE_EVAL_TIME_MS: 3\n"
            + mark(7, "return")
            + "COMPUTE_EVAL_TIME_MS: 0.5\n"
            + mark(8, "start")
            + "COMPUTE_EVAL_TIME_MS: 4\n"
            + mark(8, "return"),
            4.0,
        ),
        ("prologue\n" + mark(7, "start") + "COMPUTE_EVAL_TIME_MS:   .25  \n" + mark(7, "return"), 0.25),
    ],
)
def test_custom_time_is_the_last_line_printed_while_main_ran(output, ms):
    records, cleaned = guarded(output)
    assert "codebench-guard" not in cleaned
    assert custom_ms(cleaned, records) == ms


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (mark(7, "start") + "COMPUTE_EVAL_TIME_MS: 8\n", "(pid 7) never returned"),  # exit() inside the solution
        ("COMPUTE_EVAL_TIME_MS: 8\n", "no program of the workspace ran main"),
        (
            mark(7, "start") + mark(7, "return") + "COMPUTE_EVAL_TIME_MS: 8\n",
            "no COMPUTE_EVAL_TIME_MS line was printed while main ran",
        ),
        (mark(7, "start") + "COMPUTE_EVAL_TIME_MS: 1.2.3\n" + mark(7, "return"), "no COMPUTE_EVAL_TIME_MS line"),
        (mark(7, "start") + "COMPUTE_EVAL_TIME_MS: 0\n" + mark(7, "return"), "took 0 ms"),
        (mark(7, "start") + "computing... COMPUTE_EVAL_TIME_MS: 8\n" + mark(7, "return"), "no COMPUTE_EVAL_TIME_MS"),
    ],
)
def test_no_custom_time_without_a_line_printed_while_main_ran(output, message):
    records, cleaned = guarded(output)
    with pytest.raises(TimingError, match=re.escape(message)):
        custom_ms(cleaned, records)


def test_without_the_guard_the_last_line_counts_as_nvidia_reads_it():
    assert custom_ms("COMPUTE_EVAL_TIME_MS: 9\nCOMPUTE_EVAL_TIME_MS: 7.5\n") == 7.5


# -- suspect speedups ----------------------------------------------------------------------------


def side(ms: list[float], wall: list[float] | None = None, work: list[Work] | None = None) -> Side:
    return Side(ms, wall if wall is not None else [m + 100 for m in ms], work or [])


CUSTOM = TimingMode("custom")


def test_a_speedup_above_the_bound_is_suspect_with_both_times():
    why = suspect(12.5, 10.0, TimingMode(), side([8.0] * 5), side([100.0] * 5))
    assert why == "speedup 12.5x is above --codebench-max-speedup 10x (reference 100 ms, solution 8 ms)"
    assert suspect(9.9, 10.0, TimingMode(), side([8.0] * 5), side([79.0] * 5)) is None


def test_a_custom_saving_the_wall_clock_does_not_see_is_suspect():
    # The solution claims 50 ms instead of 100; both processes took about 300 ms.
    walls = [300.0, 302.0, 298.0, 301.0, 299.0]
    why = suspect(2.0, 10.0, CUSTOM, side([50.0] * 5, walls), side([100.0] * 5, walls))
    assert why is not None and why.startswith("the custom times claim 50 ms saved (reference 100 ms, solution 50 ms)")
    assert "the wall clock sees 0 ms (reference 300 ms, solution 300 ms)" in why


def test_an_honest_custom_saving_shows_in_the_wall_clock_within_its_noise():
    reference = side([100.0] * 5, [300.0, 310.0, 295.0, 305.0, 300.0])
    honest = side([50.0] * 5, [251.0, 262.0, 243.0, 250.0, 255.0])
    assert suspect(2.0, 10.0, CUSTOM, honest, reference) is None
    # A few ms unseen, under a tenth of the benchmark's own length, even when every trial agrees.
    close = side([50.0] * 5, [254.0] * 5)
    assert suspect(2.0, 10.0, CUSTOM, close, side([100.0] * 5, [300.0] * 5)) is None


def test_noisy_wall_clocks_widen_the_interval():
    reference = side([100.0] * 5, [300.0, 360.0, 240.0, 330.0, 270.0])
    solution = side([70.0] * 5, [300.0, 340.0, 260.0, 300.0, 280.0])  # 30 ms claimed, ~0-20 seen, noise ~40
    assert suspect(1.4, 10.0, CUSTOM, solution, reference) is None
    assert not unseen_settled(solution, reference)  # more trials would tell


def test_a_short_benchmarks_unseen_saving_is_judged_at_its_own_scale():
    """5 ms claimed as 0.8 ms (6x) in processes of ~100 ms: no fixed floor of a few ms lets it
    through; the honest 5x beside it, seen by the wall clock, stays believed."""
    walls = [100.0, 100.6, 99.5, 100.2, 99.8, 100.4, 99.7, 100.1]
    reference = side([5.0] * 8, walls)
    forged = side([0.8] * 8, [w + 0.3 for w in walls])
    why = suspect(6.25, 10.0, CUSTOM, forged, reference)
    assert why is not None and "not seen by the wall clock" in why and "(10% of the reference's time)" in why
    assert unseen_settled(forged, reference)
    honest = side([1.0] * 8, [w - 4.0 + 0.2 * (i % 3) for i, w in enumerate(walls)])
    assert suspect(5.0, 10.0, CUSTOM, honest, reference) is None
    assert unseen_settled(honest, reference)


def test_a_custom_time_above_its_own_process_wall_time_is_suspect():
    why = suspect(1.0, 10.0, CUSTOM, side([100.0] * 3, [90.0, 120.0, 120.0]), side([100.0] * 3, [120.0] * 3))
    assert why == "the solution's custom time 100 ms is above its process's own wall time 90 ms"


def test_every_reason_is_given():
    walls = [300.0] * 5
    why = suspect(20.0, 10.0, CUSTOM, side([5.0] * 5, walls), side([100.0] * 5, walls)) or ""
    assert why.split("; ")[0].startswith("speedup 20x is above --codebench-max-speedup 10x")
    assert why.split("; ")[1].startswith("the custom times claim 95 ms saved")


def test_the_wall_clock_vouches_for_a_custom_speedup_at_the_custom_scale():
    """Its saving seen trial by trial, taken off the reference's custom time: a solution no
    faster than the reference is ~1x whatever it prints; an honest 2x is ~2x, however long the
    processes run outside the timed region (here 900 ms more, where a plain wall ratio says 1.1x)."""
    looks = Looks(8, 8)
    walls = [1000.0, 1004.0, 998.0, 1002.0, 999.0, 1001.0, 1003.0, 997.0]
    reference = side([100.0] * 8, walls)
    forged = side([88.0] * 8, [w + 1.0 - 2.0 * (i % 2) for i, w in enumerate(walls)])  # claims 1.14x
    point, low, _ = wall_interval(forged, reference, looks)
    assert 0.9 < point < 1.1 and low <= 1.0
    assert credit(1.003, round(low, 4))[0] == round(low, 4) <= 1.0
    assert credit(1.003, round(low, 4))[1].startswith(f"custom mode: fast_p credit up to {low:.3f}x (the wall clock's)")
    honest = side([50.0] * 8, [w - 50.0 + (i % 3) for i, w in enumerate(walls)])
    point, low, high = wall_interval(honest, reference, looks)
    assert 1.8 < low <= point <= high < 2.2
    # Seen saving more than the reference's whole custom time: bounded, and the custom interval binds.
    faster_start = side([50.0] * 8, [w - 500.0 for w in walls])
    assert wall_interval(faster_start, reference, looks)[1] == 100.0
    assert credit(1.9, 100.0) == (1.9, credit(1.9, 100.0)[1]) and "(the custom times')" in credit(1.9, 100.0)[1]


# -- end to end ----------------------------------------------------------------------------------

FEW = ("--codebench-perf-trials", "8")


def test_half_the_work_measures_2x_and_the_reference_itself_1x(pytester, codebench):
    problem = perf_packs.problem("P/1")
    code = problem["baseline_solution"]["files"][0]["content"]
    commented = perf_packs.solution("P/1", f"/* the reference, as the model saw fit to write it */\n{code}\n// done\n")
    solutions = [perf_packs.solution("P/1", sleeper(REFERENCE_MS // 2)), problem["baseline_solution"], commented]
    report = pytester.path / "report.json"
    args = perf_packs.write(pytester, [problem], solutions)
    run = codebench(*args, FORCE, PERF, *FEW, "--codebench-report", str(report))
    run.result.assert_outcomes(passed=3)
    half = perf_packs.figures(run, "P/1[0]")
    assert half["perf_mode"] == "process"
    assert 1.6 <= float(half["speedup"]) <= 2.2 and float(half["speedup_low"]) > 1, half
    assert {"solution_ms", "baseline_ms", "speedup_low", "speedup_high", "trials_cap", "trials_stop"} <= set(half)
    assert float(half["speedup_low"]) <= float(half["speedup"]) <= float(half["speedup_high"])
    assert int(half["trials"]) <= int(half["trials_cap"]) == 8
    assert not {"perf_suspect", "perf_failed", "perf_skipped", "perf_no_edit"} & set(half)
    # The reference itself, and with comments added: the same program, never timed (real A/A:
    # timed against itself, it claimed fast_1 one time in fifteen), a speedup of exactly 1.
    for name in ("P/1[1]", "P/1[2]"):
        same = perf_packs.figures(run, name)
        assert (same["speedup"], same["speedup_low"], same["speedup_high"]) == ("1.0", "1.0", "1.0"), same
        assert same["perf_no_edit"].startswith("the reference's own code, comments and blank space aside")
        assert not {"trials", "aa_low", "solution_ms"} & set(same)
    assert float(half["baseline_ms"]) > float(half["solution_ms"]) >= REFERENCE_MS // 2
    # The JSON report and the terminal give the geomean and fast_p (best@1: the first sample's ~2x).
    data = json.loads(report.read_text())
    perf = data["metrics"]["perf"]
    assert perf["measured"] == 3 and perf["best_at_k"]["1"]["fast_p"]["1.5"] == 100.0
    assert data["scores"]["fast_1.0"] == 100.0
    run.result.stdout.fnmatch_lines(
        [
            "perf best@1: geomean speedup *x over 1 problem; fast_1.0 100.00%, fast_1.5 100.00%, fast_2.0 *",
            "trials: * of at most 8 run*",
        ]
    )
    # Each side's first run is logged, not every run.
    logs = next(item["logs"] for item in data["items"] if item["id"] == "P/1[0]")
    assert {"perf-solution", "perf-reference"} <= set(logs)
    assert Path(logs["perf-solution"]).read_text().startswith("$ ./test.out --perf\n# exit code 0")


def test_custom_mode_times_the_programs_own_line(pytester, codebench):
    problem = perf_packs.problem("P/1", {"type": "custom"})
    solutions = [perf_packs.solution("P/1", sleeper(REFERENCE_MS // 2))]
    run = codebench(*perf_packs.write(pytester, [problem], solutions), FORCE, PERF, *FEW)
    run.result.assert_outcomes(passed=1)
    figures = perf_packs.figures(run, "P/1[0]")
    assert figures["perf_mode"] == "custom" and "perf_suspect" not in figures, figures
    # The program times work() alone: no start-up in either time.
    assert 1.8 <= float(figures["speedup"]) <= 2.2 and float(figures["speedup_low"]) > 1, figures
    assert REFERENCE_MS // 2 <= float(figures["solution_ms"]) < REFERENCE_MS


# No faster than the reference (a little slower), it prints its own COMPUTE_EVAL_TIME_MS under
# --perf (6% faster than the reference's 300 ms: a saving the wall clock does not see, but under
# the tenth of the reference's time that is tolerated unseen), then points stdout at /dev/null,
# so that the test's own line, printed after, is lost and its own is the last.
OWN_TIME_LINE = (
    'if (timing()) { printf("COMPUTE_EVAL_TIME_MS: %.3f\\n", 283.0); fflush(stdout);'
    ' freopen("/dev/null", "w", stdout); }'
)


def test_a_custom_time_line_of_the_solutions_own_gets_no_fast_p_credit(pytester, codebench):
    """The forger claims ~1.06x, its interval above 1, unsuspected: it counted in fast_1.0
    before the wall clock's interval had to lie above the bar as well. The honest 2x beside it
    (its own problem) keeps its credit at 1.0 and 1.5."""
    problems = [perf_packs.problem("P/1", {"type": "custom"}), perf_packs.problem("P/2", {"type": "custom"})]
    forger = sleeper(REFERENCE_MS + 5, lines=ABORT_UNDER_PERF, done=OWN_TIME_LINE)
    solutions = [perf_packs.solution("P/1", forger), perf_packs.solution("P/2", sleeper(REFERENCE_MS // 2))]
    report = pytester.path / "report.json"
    run = codebench(
        *perf_packs.write(pytester, problems, solutions), FORCE, PERF, *FEW, "--codebench-report", str(report)
    )
    run.result.assert_outcomes(passed=2)
    forged, honest = perf_packs.figures(run, "P/1[0]"), perf_packs.figures(run, "P/2[0]")
    assert float(forged["solution_ms"]) == 283.0 and float(forged["speedup"]) > 1.0, forged
    assert float(forged["speedup_wall_low"]) <= 1.0, forged
    assert forged["perf_credit"].startswith("custom mode: fast_p credit up to "), forged
    assert "(the wall clock's)" in forged["perf_credit"], forged
    assert float(honest["speedup_wall_low"]) > 1.5 and float(honest["speedup_low"]) > 1.5, honest
    scores = json.loads(report.read_text())["scores"]
    assert (scores["fast_1.0"], scores["fast_1.5"]) == (50.0, 50.0), scores
    run.result.stdout.fnmatch_lines(
        ["perf custom mode (1): a fast_p bar the custom times' interval lies above is not credited*[[]P/1[[]0]]"]
    )


ABORT_UNDER_PERF = """
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
static int timing(void) {
    char line[256] = {0};
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(line, 1, sizeof line - 1, f) : 0;
    if (f) fclose(f);
    for (size_t i = 0; i < n; i += strlen(line + i) + 1)
        if (!strcmp(line + i, "--perf")) return 1;
    return 0;
}
"""


def test_a_failing_benchmark_is_the_solutions_perf_failure_and_it_still_passed(pytester, codebench):
    problem = perf_packs.problem("P/1")
    crashes = sleeper(100, lines=ABORT_UNDER_PERF, work="if (timing()) abort();")
    leaves = sleeper(100, lines=ABORT_UNDER_PERF, work="if (timing()) exit(0);")  # status 0, main never returned
    solutions = [perf_packs.solution("P/1", crashes), perf_packs.solution("P/1", leaves)]
    run = codebench(*perf_packs.write(pytester, [problem], solutions), FORCE, PERF, *FEW)
    run.result.assert_outcomes(passed=2)
    crashed, left = perf_packs.figures(run, "P/1[0]"), perf_packs.figures(run, "P/1[1]")
    assert crashed["perf_failed"].startswith("the solution's benchmark run failed (it exited"), crashed
    assert "speedup" not in crashed
    assert left["perf_failed"].startswith("the solution's benchmark run failed (its exit 0 is not the program's"), left
    run.result.stdout.fnmatch_lines(["perf failed (2): the solution's benchmark run failed*"])


def test_a_reference_whose_benchmark_fails_here_skips_perf(pytester, codebench):
    broken = perf_packs.solution("P/1", sleeper(100, lines=ABORT_UNDER_PERF, work="if (timing()) abort();"))
    unbuildable = perf_packs.solution("P/2", "void work(void) { syntax error }\n")
    problems = [
        perf_packs.problem("P/1", baseline_solution=broken),
        perf_packs.problem("P/2", baseline_solution=unbuildable),
    ]
    solutions = [perf_packs.solution(task, sleeper(100)) for task in ("P/1", "P/2")]
    run = codebench(*perf_packs.write(pytester, problems, solutions), FORCE, PERF, *FEW)
    run.result.assert_outcomes(passed=2)
    assert perf_packs.figures(run, "P/1[0]")["perf_skipped"].startswith(
        "the reference's benchmark fails here (it exited"
    )
    assert perf_packs.figures(run, "P/2[0]")["perf_skipped"].startswith("the reference does not build here (")


def test_profiled_modes_without_a_gpu_or_profiler_skip_perf_with_the_reason(pytester, codebench):
    problems = [
        perf_packs.problem("P/k", {"type": "kernels", "include": ["k_*"], "exclude": None}),
        perf_packs.problem(
            "P/r", {"type": "region", "include": ["bench_region"], "exclude": None, "time_type": "kernel"}
        ),
        perf_packs.problem("P/g", {"type": "gpu"}),
    ]
    solutions = [perf_packs.solution(p["task_id"], sleeper(10)) for p in problems]
    args = perf_packs.write(pytester, problems, solutions)
    run = codebench(*args, FORCE, PERF)
    run.result.assert_outcomes(passed=3)
    for name, mode in (("P/k[0]", "kernels"), ("P/r[0]", "region"), ("P/g[0]", "gpu")):
        figures = perf_packs.figures(run, name)
        assert figures["perf_mode"] == mode
        assert figures["perf_skipped"].startswith(
            f"no profiler: no usable CUDA GPU here (the {mode} timing mode needs one on a GPU; "
        )
    run.result.stdout.fnmatch_lines(["perf skipped (3): no profiler: no usable CUDA GPU here [[]P/g[[]0], *"])
    # With a GPU (described by a conftest) but no profiler asked for.
    pytester.makeconftest(FAKE_GPUS)
    run = codebench(*args, PERF, "--codebench-profiler", "none")
    run.result.assert_outcomes(passed=3)
    assert perf_packs.figures(run, "P/k[0]")["perf_skipped"] == (
        "no profiler: --codebench-profiler none (the kernels timing mode needs one)"
    )


def test_without_perf_there_are_no_perf_figures(pytester, codebench):
    problem = perf_packs.problem("P/1")
    report = pytester.path / "report.json"
    run = codebench(
        *perf_packs.write(pytester, [problem], [problem["baseline_solution"]]), FORCE, "--codebench-report", str(report)
    )
    run.result.assert_outcomes(passed=1)
    assert perf_packs.figures(run, "P/1[0]") == {}
    assert "perf" not in json.loads(report.read_text())["metrics"]
    assert "perf best@" not in run.output and "trials:" not in run.output


def test_fail_under_fast_p_is_met_and_missed(pytester, codebench):
    problems = [perf_packs.problem("P/1"), perf_packs.problem("P/2")]
    # One solution twice as fast as its reference, one slower: fast_1.0 is 50%.
    solutions = [
        perf_packs.solution("P/1", sleeper(REFERENCE_MS // 2)),
        perf_packs.solution("P/2", sleeper(REFERENCE_MS * 4 // 3)),
    ]
    args = [*perf_packs.write(pytester, problems, solutions), FORCE, PERF, *FEW]
    met = codebench(*args, "--codebench-fail-under", "fast_1.0=40")
    assert met.result.ret == pytest.ExitCode.OK
    met.result.stdout.fnmatch_lines(["fail-under fast_1.0=40%: fast_1.0 50.00%, met"])
    missed = codebench(*args, "--codebench-fail-under", "fast_1.0=60")
    assert missed.result.ret == pytest.ExitCode.TESTS_FAILED
    missed.result.stdout.fnmatch_lines(["fail-under fast_1.0=60%: fast_1.0 50.00%, NOT met"])


def stamp(log: Path, kind: str, event: str, task: str) -> str:
    return f'echo "$(date +%s%N) {kind} {event} {task} $CUDA_VISIBLE_DEVICES" >> {log}'


def logged(command: str, log: Path, kind: str, task: str) -> str:
    """``command``, with when it started and ended on which GPU written to ``log``."""
    return f"{stamp(log, kind, 'start', task)}; {command}; code=$?; {stamp(log, kind, 'end', task)}; exit $code"


def test_timing_holds_its_gpu_alone_while_tests_share_theirs_within_the_slots(pytester):
    """Under -n 4 with two (fake) GPUs: every item's timed phase (its warm-up and trials, both
    sides) runs alone on its GPU, no test starts there meanwhile, and at most
    --codebench-gpu-slots tests share a GPU. Invariants of the recorded intervals only."""
    pytester.makeconftest(FAKE_GPUS)
    log = pytester.path / "gpu.log"
    problems = [
        perf_packs.problem(
            f"S/{i}",
            test_command=logged("./test.out", log, "test", f"S/{i}"),
            benchmark_command=logged("./test.out --perf", log, "perf", f"S/{i}"),
            baseline_solution=perf_packs.solution(f"S/{i}", sleeper(60)),
        )
        for i in range(8)
    ]
    solutions = [perf_packs.solution(p["task_id"], sleeper(40)) for p in problems]
    args = perf_packs.write(pytester, problems, solutions)
    # The commands log outside their workspaces, which the local sandbox forbids.
    options = ("--codebench-sandbox", "none", "--codebench-gpu-slots", "2", "--codebench-perf-trials", "5")
    result = pytester.runpytest_subprocess("--codebench=computeeval", "-n", "4", PERF, *options, *args)
    result.assert_outcomes(passed=8)
    intervals: dict[tuple[str, str], list[tuple[str, int, int]]] = {}  # (kind, gpu) -> (task, start, end)
    open_: dict[tuple[str, str, str], int] = {}
    for line in sorted(log.read_text().splitlines(), key=lambda line: int(line.split()[0])):
        stamp_ns, kind, event, task, gpu = line.split()
        if event == "start":
            open_[kind, task, gpu] = int(stamp_ns)
        else:
            intervals.setdefault((kind, gpu), []).append((task, open_.pop((kind, task, gpu)), int(stamp_ns)))
    assert not open_
    tests = {gpu: runs for (kind, gpu), runs in intervals.items() if kind == "test"}
    # Each item's test, then its canary's (guard.canary: a passing test runs once more),
    # both under the slots.
    assert sum(map(len, tests.values())) == 2 * 8 and set(tests) <= {"0", "1"}
    # A timed phase spans its item's first to last timed run, all on one GPU.
    phases: dict[str, list[tuple[str, int, int]]] = {}
    for (kind, gpu), runs in intervals.items():
        if kind == "perf":
            for task in {task for task, _, _ in runs}:
                mine = [(start, end) for each, start, end in runs if each == task]
                phases.setdefault(gpu, []).append((task, min(s for s, _ in mine), max(e for _, e in mine)))
    perf_tasks = [task for spans in phases.values() for task, _, _ in spans]
    assert sorted(perf_tasks) == sorted(f"S/{i}" for i in range(8))  # each item timed on one GPU only
    for gpu, spans in phases.items():
        for index, (task, start, end) in enumerate(spans):
            for other, other_start, other_end in spans[index + 1 :]:
                assert end < other_start or other_end < start, f"{task} and {other} timed together on GPU {gpu}"
            for tested, test_start, test_end in tests.get(gpu, []):
                assert test_end < start or end < test_start, f"{tested}'s test ran on GPU {gpu} while {task} was timed"
    for gpu, runs in tests.items():
        edges = sorted([(start, 1) for _, start, _ in runs] + [(end, -1) for _, _, end in runs])
        at_once = max(sum(step for _, step in edges[: index + 1]) for index in range(len(edges)))
        assert at_once <= 2, f"{at_once} tests shared GPU {gpu} (--codebench-gpu-slots 2)"


def test_a_bad_timing_mode_is_an_error_of_its_problem_alone(pytester, codebench):
    problems = [perf_packs.problem("P/bad", {"type": "kernal"}), perf_packs.problem("P/ok")]
    solutions = [perf_packs.solution(p["task_id"], sleeper(10)) for p in problems]
    run = codebench(*perf_packs.write(pytester, problems, solutions), FORCE)
    run.result.assert_outcomes(passed=1, errors=1)
    assert (
        "field 'timing_mode.type': expected one of process, kernels, region, gpu, custom, got 'kernal'"
        in (run.items["P/bad[0]"]["message"])
    )


@pytest.mark.parametrize(
    ("option", "value", "why"),
    [
        ("--codebench-perf-warmup", "-1", "must be 0 or more, not -1"),
        ("--codebench-perf-trials", "0", "must be above 0"),
        ("--codebench-perf-trials", "4", "4 trials cannot bound a speedup at the 5% level: at least 5 are needed"),
        ("--codebench-max-speedup", "0", "must be above 0"),
        ("--codebench-profiler", "nsys", "expected one of cupti, ncu, none"),
    ],
)
def test_bad_perf_options_are_usage_errors(pytester, option, value, why):
    result = pytester.runpytest_subprocess("--codebench=computeeval", PERF, option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{option}={value}: {why}" in result.stderr.str()


def test_the_timeout_backstop_covers_the_perf_phase(pytester, codebench, xdist_args):
    pytester.makeconftest(
        """
        def pytest_collection_finish(session):
            with open(session.config.rootpath / "markers.log", "a") as log:
                for item in session.items:
                    log.write(f"{item.name} {item.get_closest_marker('timeout').args[0]}\\n")
        """
    )
    problems = [perf_packs.problem("P/1", timeout_seconds=5), packs.problem("T/1", timeout_seconds=5)]
    args = perf_packs.write(pytester, problems, [problems[0]["baseline_solution"], problems[1]["baseline_solution"]])
    codebench(*args, FORCE, PERF)
    workers = 2 if xdist_args else 1
    # Build and test, for the solution and the reference (4 x 5 s), then for P/1, which declares a
    # benchmark: 1 warm-up pair and 20 trial pairs (42 runs) twice (the reference against itself,
    # then the solution against it) and the reference's build, 5 s each.
    perf = 4 * 5 + 85 * 5
    plain = 4 * 5
    lines = {tuple(line.split()) for line in (pytester.path / "markers.log").read_text().splitlines()}
    assert {(name, float(seconds)) for name, seconds in lines} == {
        ("P/1[0]", perf + (workers - 1) * perf + 30),
        ("T/1[0]", plain + (workers - 1) * plain + 30),
    }
