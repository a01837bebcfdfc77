"""The profilers behind ComputeEval's timing modes (benchmarks/computeeval/perf/profilers.py and
perf/cupti.py, which builds our CUPTI library).

Three kinds of test:

* the real CUPTI library: built with nvcc where the toolkit has CUPTI (the GPU machine), and
  built against a stand-in CUPTI (tests/data/cupti_stub, a stub around the GPU layer) on any
  machine with a C++ compiler, so that its own work runs for real here: the nonce taken out of
  the program's reach, forged records ignored, a forked child silent, ranges attributed;
* outputs of both profilers recorded from a real GPU run (tests/data/profiles, written by
  bench/record_profiles.py), parsed as the plugin parses them; never made up;
* the rules that read our own record lines, on made-up lines (our own format).
Durations are never asserted, only what the work was (launches, bytes, names).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_codebench.benchmarks.computeeval.perf import cupti
from pytest_codebench.benchmarks.computeeval.perf.profilers import (
    CuptiProfiler,
    Profile,
    ProfiledCommand,
    ProfileError,
    ProfilerUnavailable,
    parse_cupti,
    parse_ncu,
    prepare,
)
from pytest_codebench.context import RunContext
from pytest_codebench.errors import HarnessError
from pytest_codebench.options import CACHE_DIR, ENV, OUTPUT_LIMIT, Settings
from pytest_codebench.runners import RunResult
from pytest_codebench.runners.local import LocalRunner

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "profiles"
STUB = DATA / "cupti_stub"
NOT_RECORDED = "recorded on a GPU by bench/record_profiles.py: not recorded yet"
NONCE = "0123456789abcdef" * 2


def make_context(config: pytest.Config, base: Path) -> RunContext:
    settings = Settings({OUTPUT_LIMIT.name: 100_000, ENV.name: [], CACHE_DIR.name: str(base / "cache")})
    return RunContext.create(config, settings, run_dir=base / "run")


@pytest.fixture
def runner(pytestconfig: pytest.Config, tmp_path: Path) -> LocalRunner:
    return LocalRunner(make_context(pytestconfig, tmp_path))


# --- the real library: nvcc against the toolkit's CUPTI ------------------------------------


def test_cupti_library_builds_with_nvcc_where_the_toolkit_has_cupti(runner: LocalRunner, tmp_path: Path) -> None:
    built = prepare(runner.context, runner, "cupti")
    if isinstance(built, str):
        assert "no CUPTI in this toolkit" in built or "nvcc is not on PATH" in built, built
        pytest.skip(f"{built}: the real build runs on the GPU machine")
    assert isinstance(built, CuptiProfiler)
    assert built.library.stat().st_mode & 0o222 == 0  # read-only: commands may not change it
    # A second run finds it in the cache: the same file, not rebuilt.
    second = RunContext.create(runner.context.config, runner.context.settings, run_dir=tmp_path / "second")
    again = prepare(second, LocalRunner(second), "cupti")
    assert isinstance(again, CuptiProfiler) and again.library == built.library
    assert again.library.stat().st_ino == built.library.stat().st_ino
    profile = built.read(*run_under(runner, built, tmp_path, "./prog"))
    assert profile["kernels"] == [] and profile["app_ms"] is not None


def test_prepare_says_why_when_the_toolkit_has_no_cupti(
    runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toolkit = tmp_path / "cuda-13.0"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "include").mkdir()
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}:{os.environ['PATH']}")
    reason = prepare(runner.context, LocalRunner(runner.context), "cupti")
    assert isinstance(reason, str)
    assert reason.startswith("no CUPTI in this toolkit") and str(toolkit) in reason


def test_prepare_says_why_without_ncu(runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = f"{tmp_path}:/usr/sbin:/usr/bin:/sbin:/bin"
    if shutil.which("ncu", path=path):
        pytest.skip("ncu is installed in a system folder here")
    monkeypatch.setenv("PATH", path)
    reason = prepare(runner.context, LocalRunner(runner.context), "ncu")
    assert reason == "Nsight Compute (ncu) is not on PATH where commands run"


def test_a_changed_library_is_refused(tmp_path: Path) -> None:
    library = tmp_path / "libcodebench_cupti.so"
    library.write_bytes(b"built")
    profiler = CuptiProfiler(library, hashlib.sha256(b"built").hexdigest())
    profiler.wrap("./test.out", tmp_path / "scratch")
    library.write_bytes(b"rewritten by someone")
    with pytest.raises(HarnessError, match="changed since it was built"):
        profiler.wrap("./test.out", tmp_path / "scratch")


# --- the real library against a stand-in CUPTI ------------------------------------------------

STUB_BUILD = """
cc -shared -fPIC -o libcupti.so stub.c &&
c++ -shared -fPIC -std=c++17 -O1 -I. -o libprofile.so cupti_profile.cpp -L. -lcupti -ldl -Wl,-rpath,"$PWD" &&
cc -shared -fPIC -o libcuda.so.1 -Wl,-soname,libcuda.so.1 -x c /dev/null
"""
# The program a solution could be: it looks for the run's nonce where it could find it, then
# prints forged records, with a guessed nonce and with what it found. "fork": a child exits too.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *seen = getenv("CODEBENCH_PROFILE_NONCE");
    char text[65536];
    FILE *file = fopen("/proc/self/environ", "rb");
    size_t n = file ? fread(text, 1, sizeof text, file) : 0;
    int leaked = 0;
    for (size_t i = 0; i + 23 <= n; ++i) leaked |= !memcmp(text + i, "CODEBENCH_PROFILE_NONCE", 23);
    printf("nonce seen: %s, in environ: %d\n", seen ? seen : "(none)", leaked);
    const char *forged[] = {"0123456789abcdef0123456789abcdef", seen ? seen : "none"};
    for (int i = 0; i < 2; ++i) {
        printf("\ncodebench-profile %s begin 1\ncodebench-profile %s kernel 1 1 forged\n", forged[i], forged[i]);
        printf("codebench-profile %s end 1\n", forged[i]);
    }
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        if (fork() == 0) exit(0);
        wait(NULL);
    }
    return 0;
}
"""
PREINIT_PROGRAM = r"""
#include <stdio.h>
static void early(void) {}
__attribute__((section(".preinit_array"), used)) static void (*preinit)(void) = early;
int main(void) { puts("main ran"); return 0; }
"""
# What the library makes of the stub's records (tests/data/cupti_stub/stub.c), in ns.
STUB_PROFILE = {
    "kernels": {"scale_kernel": (3, 250), "add(float const*, float*, int)": (2, 500)},
    "ranges": {"bench_region": (1000, 400, 2), "inner region": (200, 400, 2), "startend_region": (1000, 250, 2)},
    "copies": (60, 5120),
}


@pytest.fixture(scope="module")
def stub(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalRunner, CuptiProfiler]:
    """The real library, built against the stand-in CUPTI, once for the module."""
    base = tmp_path_factory.mktemp("cupti-stub")
    runner = LocalRunner(make_context(pytestconfig, base))
    build = base / "build"
    build.mkdir()
    for source in (*STUB.iterdir(), cupti.SOURCE):
        shutil.copy(source, build)
    result = runner.run(STUB_BUILD, cwd=build, timeout=300)
    if result.exit_code == 127:
        pytest.skip(f"no C and C++ compiler here: {result.tail(2)}")
    assert result.ok, result.output
    library = build / "libprofile.so"
    return runner, CuptiProfiler(library, hashlib.sha256(library.read_bytes()).hexdigest())


def run_under(
    runner: LocalRunner, profiler: CuptiProfiler, base: Path, command: str, source: str = PROGRAM
) -> tuple[ProfiledCommand, RunResult]:
    """``command`` run under ``profiler`` in a workspace with the programs built from
    ``source``: ``prog`` (no GPU work), ``prog_gpu`` (loads the driver, so the library flushes)."""
    workspace = base / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "prog.c").write_text(source)
    driver = profiler.library.parent / "libcuda.so.1"
    link = f"-Wl,--no-as-needed {driver} -Wl,-rpath,{driver.parent}" if driver.exists() else ""
    built = runner.run(
        f"cc -o prog prog.c && cc -o prog_gpu prog.c {link}",
        cwd=workspace,
        timeout=120,
        shared={profiler.library.parent: False},
    )
    assert built.ok, built.output
    wrapped = profiler.wrap(command, base / "scratch")
    return wrapped, runner.run(wrapped.command, cwd=workspace, timeout=60, env=wrapped.env, shared=wrapped.shared)


def summary(profile: Profile) -> dict[str, Any]:
    """The profile in the shape of STUB_PROFILE (ns)."""
    return {
        "kernels": {k["name"]: (k["launches"], round(k["ms"] * 1e6)) for k in profile["kernels"]},
        "ranges": {
            r["name"]: (round((r["wall_ms"] or 0) * 1e6), round(r["kernel_ms"] * 1e6), r["launches"])
            for r in profile["ranges"]
        },
        "copies": (round(profile["memcpy_ms"] * 1e6), profile["memcpy_bytes"]),
    }


def test_the_library_reports_what_cupti_recorded(stub: tuple[LocalRunner, CuptiProfiler], tmp_path: Path) -> None:
    """Kernels by demangled name; a kernel counts in every range open when its call started
    (or it started, without a call); an end matching no start closes its thread's newest
    range; a range never closed is left out; memcpy and memset together."""
    runner, profiler = stub
    profile = profiler.read(*run_under(runner, profiler, tmp_path, "./prog_gpu"))
    assert summary(profile) == STUB_PROFILE
    assert profile["app_ms"] is not None


def test_a_program_cannot_read_the_nonce_nor_forge_its_profile(
    stub: tuple[LocalRunner, CuptiProfiler], tmp_path: Path
) -> None:
    """The attack: the program looks for the nonce and prints forged records (one kernel,
    "forged"); the profile is still the honest one, which the control below also gets."""
    runner, profiler = stub
    wrapped, result = run_under(runner, profiler, tmp_path, "./prog_gpu")
    profile = profiler.read(wrapped, result)
    assert "nonce seen: (none), in environ: 0" in result.output
    assert "forged" not in {k["name"] for k in profile["kernels"]}
    assert summary(profile) == STUB_PROFILE


def test_a_program_without_gpu_work_gets_an_empty_profile(
    stub: tuple[LocalRunner, CuptiProfiler], tmp_path: Path
) -> None:
    runner, profiler = stub
    profile = profiler.read(*run_under(runner, profiler, tmp_path, "./prog"))
    assert summary(profile) == {"kernels": {}, "ranges": {}, "copies": (0, 0)}
    assert profile["app_ms"] is not None


def test_a_forked_child_writes_no_second_profile(stub: tuple[LocalRunner, CuptiProfiler], tmp_path: Path) -> None:
    runner, profiler = stub
    assert summary(profiler.read(*run_under(runner, profiler, tmp_path, "./prog_gpu fork"))) == STUB_PROFILE


def test_only_the_first_profiled_program_gets_the_nonce(
    stub: tuple[LocalRunner, CuptiProfiler], tmp_path: Path
) -> None:
    """The shell is not profiled; a Python interpreter is (Python problems run in one), and
    takes the nonce from its own environment: its code cannot see it."""
    runner, profiler = stub
    script = "import os; print('python sees', os.environ.get('CODEBENCH_PROFILE_NONCE'))"
    wrapped, result = run_under(runner, profiler, tmp_path, f'{runner.python} -c "{script}"')
    profile = profiler.read(wrapped, result)
    assert "python sees None" in result.output
    assert profile["kernels"] == [] and profile["app_ms"] is not None


def test_a_program_with_code_before_the_library_is_refused(
    stub: tuple[LocalRunner, CuptiProfiler], tmp_path: Path
) -> None:
    """A preinit array runs before any library and could read the nonce: the program stops."""
    runner, profiler = stub
    wrapped, result = run_under(runner, profiler, tmp_path, "./prog", source=PREINIT_PROGRAM)
    with pytest.raises(ProfileError, match="exit code 125"):
        profiler.read(wrapped, result)
    assert "main ran" not in result.output
    assert "refusing a program with a preinit array" in result.output


# --- outputs recorded on a GPU -----------------------------------------------------------------

# The program bench/record_profiles.py runs: 64 MiB arrays; scale_kernel (extern "C") 7 times
# and add_kernel 5 times; "bench_region" (push/pop) holds 5 + 3 launches, "startend_region"
# (start/end) 2, "domain_region" (nvtxDomainRangePushEx with no domain, as nvtx3's C++ API
# does) 1; copies: one HtoD, one memset, one DtoH.
RECORDED_LAUNCHES = {"scale_kernel": 7, "add_kernel": 5}
RECORDED_RANGES = {"bench_region": 8, "startend_region": 2}
RECORDED_BYTES = 3 * 64 * 2**20


def recorded(name: str) -> tuple[str, dict[str, Any]]:
    raw, meta = RECORDED / name, (RECORDED / name).with_suffix(".json")
    if not raw.exists() or not meta.exists():
        pytest.skip(NOT_RECORDED)
    return raw.read_text(errors="replace"), json.loads(meta.read_text())


def launches_by_kernel(profile: Profile) -> dict[str, int]:
    """Launches per kernel, by the name the program gave it (without parameters)."""
    counts: dict[str, int] = {}
    for kernel in profile["kernels"]:
        base = kernel["name"].split("(")[0].split()[-1]
        counts[base] = counts.get(base, 0) + kernel["launches"]
    return counts


def check_recorded_work(profile: Profile) -> None:
    assert launches_by_kernel(profile) == RECORDED_LAUNCHES
    assert all(kernel["ms"] > 0 for kernel in profile["kernels"])
    ranges = {r["name"]: r for r in profile["ranges"]}
    assert {name: ranges[name]["launches"] for name in RECORDED_RANGES if name in ranges} == RECORDED_RANGES
    assert all(ranges[name]["kernel_ms"] > 0 for name in RECORDED_RANGES)
    if "domain_region" in ranges:
        assert ranges["domain_region"]["launches"] == 1


def test_cupti_output_recorded_on_a_gpu_parses_to_the_programs_work() -> None:
    output, meta = recorded("cupti.out")
    profile = parse_cupti(output, meta["nonce"])
    assert profile == meta["profile"]
    check_recorded_work(profile)
    assert profile["memcpy_bytes"] == RECORDED_BYTES and profile["memcpy_ms"] > 0
    assert profile["app_ms"] is not None
    assert all(r["wall_ms"] is not None for r in profile["ranges"])


def test_ncu_log_recorded_on_a_gpu_parses_to_the_programs_work() -> None:
    log, meta = recorded("ncu.csv")
    profile = parse_ncu(log)
    assert profile == meta["profile"]
    check_recorded_work(profile)
    assert sum(kernel["bytes"] for kernel in profile["kernels"]) > 0  # DRAM traffic of 64 MiB arrays
    assert profile["app_ms"] is None and profile["memcpy_bytes"] == 0


def test_cupti_and_ncu_see_the_same_work() -> None:
    output, meta = recorded("cupti.out")
    cupti = parse_cupti(output, meta["nonce"])
    ncu = parse_ncu(recorded("ncu.csv")[0])
    assert launches_by_kernel(cupti) == launches_by_kernel(ncu)
    both = {r["name"] for r in cupti["ranges"]} & {r["name"] for r in ncu["ranges"]}
    assert both >= set(RECORDED_RANGES)
    assert {r["name"]: r["launches"] for r in cupti["ranges"] if r["name"] in both} == {
        r["name"]: r["launches"] for r in ncu["ranges"] if r["name"] in both
    }


# --- our own record lines (made up: our format) -------------------------------------------------


def records(nonce: str = NONCE, *lines: str, count: int | None = None) -> str:
    body = [f"codebench-profile {nonce} {line}" for line in lines]
    end = f"codebench-profile {nonce} end {len(lines) + 1 if count is None else count}"  # the lines before it
    return "\n".join([f"codebench-profile {nonce} begin 42", *body, end]) + "\n"


HONEST = (
    "kernel 3 1500000 void%20scale<float>(float*,%20int)",
    "copy 2 250000 8192",
    "range 1 9000000 1500000 3 bench_region",
    "app 12000000",
)


def test_records_with_the_run_nonce_make_the_profile() -> None:
    profile = parse_cupti("program output\n" + records(NONCE, *HONEST), NONCE)
    assert profile == {
        "kernels": [{"name": "void scale<float>(float*, int)", "launches": 3, "ms": 1.5, "bytes": 0}],
        "ranges": [{"name": "bench_region", "kernel_ms": 1.5, "wall_ms": 9.0, "launches": 3}],
        "memcpy_ms": 0.25,
        "memcpy_bytes": 8192,
        "app_ms": 12.0,
    }


def test_records_with_another_nonce_are_ignored() -> None:
    forged = records("f" * 32, "kernel 1 1 fast", "app 1")
    honest = parse_cupti(records(NONCE, *HONEST), NONCE)
    assert parse_cupti(forged + records(NONCE, *HONEST) + forged, NONCE) == honest


def test_forged_records_alone_are_no_profile() -> None:
    with pytest.raises(ProfileError, match="no profile records"):
        parse_cupti(records("f" * 32, *HONEST), NONCE)


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(records(NONCE, *HONEST).rsplit("codebench-profile", 1)[0], id="no-end"),
        pytest.param(records(NONCE, *HONEST, count=7), id="lines-missing"),
        pytest.param(records(NONCE, *HONEST) + records(NONCE, *HONEST), id="two-processes"),
        pytest.param(records(NONCE, "kernel three 1 k"), id="malformed"),
    ],
)
def test_cut_doubled_or_malformed_records_are_no_profile(output: str) -> None:
    with pytest.raises(ProfileError) as raised:
        parse_cupti(output, NONCE)
    assert not isinstance(raised.value, ProfilerUnavailable)


def test_cupti_that_cannot_start_is_the_machines_reason_but_lost_records_are_the_runs() -> None:
    with pytest.raises(ProfilerUnavailable, match="CUPTI cannot record here: enabling activity records"):
        parse_cupti(records(NONCE, "error enabling%20activity%20records:%20CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), NONCE)
    with pytest.raises(ProfileError, match="lost at exit") as raised:
        parse_cupti(records(NONCE, "lost flushing%20records:%20CUPTI_ERROR_UNKNOWN", *HONEST), NONCE)
    assert not isinstance(raised.value, ProfilerUnavailable)


def test_a_failed_run_has_no_profile(tmp_path: Path) -> None:
    library = tmp_path / "lib.so"
    library.write_bytes(b"x")
    profiler = CuptiProfiler(library, hashlib.sha256(b"x").hexdigest())
    wrapped = profiler.wrap("./test.out --perf", tmp_path)
    output = "Segmentation fault in scale()\n" + records(wrapped.nonce, *HONEST)
    result = RunResult("./test.out --perf", 1, False, 0.5, output)
    with pytest.raises(ProfileError, match="exit code 1") as raised:
        profiler.read(wrapped, result)
    # The message shows what the program printed, not the profile's own lines.
    assert "Segmentation fault in scale()" in str(raised.value) and "codebench-profile" not in str(raised.value)


def test_ncu_errors_that_are_the_machines_are_told_apart() -> None:
    """ncu's permission error (NVIDIA's wording) makes perf skipped, not failed."""
    denied = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    with pytest.raises(ProfilerUnavailable, match="ERR_NVGPUCTRPERM"):
        parse_ncu(f"==PROF== Connected to process 7\n{denied}\n")
    with pytest.raises(ProfileError, match="no CSV in ncu's log") as raised:
        parse_ncu("==PROF== Connected to process 7\n")
    assert not isinstance(raised.value, ProfilerUnavailable)
