"""The verdict store: a sample graded once is served from the store by later runs, keyed by
everything that decides its verdict; a bad store file is one clear usage error."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import packs
import pytest

from conftest import no_sandbox
from pytest_codebench.benchmarks.computeeval.perf.phase import PERF
from pytest_codebench.options import CORE_OPTIONS, ENV, OUTPUT_LIMIT, REPORT, STORE, Settings
from pytest_codebench.reports.harness import PACKAGE, code_digest, own_code
from pytest_codebench.runners.local import sandbox_state
from pytest_codebench.sweeps.store import TABLE, Stored, VerdictStore
from pytest_codebench.sweeps.verdict_keys import (
    RunIdentity,
    content_key,
    digest,
    grading_settings,
    machine_key,
    shareable,
    storable,
)
from pytest_codebench.verdict import Outcome, Verdict

FORCE = "--codebench-run-without-gpu"
TASKS = [f"T/{n}" for n in range(4)]


# -- what a key is made of (pure) ------------------------------------------------------------------


def test_equal_data_has_one_digest_whatever_its_key_order():
    assert digest({"a": 1, "b": [1, "x"]}) == digest({"b": [1, "x"], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})
    assert digest("é\ud800") == digest("é\ud800")  # text JSON cannot encode strictly still hashes
    assert content_key("task", "answer") != content_key("task", "other answer")
    assert content_key("task", "answer") != content_key("other task", "answer")


def test_every_part_of_the_run_identity_changes_the_key():
    base = RunIdentity("computeeval", "0.1.0+abc", "local@host", {"toolkit": "13.0"}, {"output-limit": 1})
    changed = [
        RunIdentity("pie", base.harness, base.runner, base.facts, base.settings),
        RunIdentity(base.benchmark, "0.1.0+abd", base.runner, base.facts, base.settings),
        RunIdentity(base.benchmark, base.harness, "docker@host:image", base.facts, base.settings),
        RunIdentity(base.benchmark, base.harness, base.runner, {"toolkit": "12.4"}, base.settings),
        RunIdentity(base.benchmark, base.harness, base.runner, base.facts, {"output-limit": 2}),
        RunIdentity(base.benchmark, base.harness, base.runner, base.facts, base.settings, machine="id@host"),
    ]
    digests = {identity.digest() for identity in changed}
    assert len(digests) == len(changed) and base.digest() not in digests
    assert base.digest() == RunIdentity(**vars(base)).digest()


def _append(path: Path, text: str = "\n# changed\n") -> None:
    path.write_text(path.read_text() + text)


def test_a_verdict_is_keyed_by_the_core_and_its_own_benchmark_only(tmp_path):
    """Another benchmark's file, or a benchmark added (its package and its Dockerfile), changes
    no benchmark's key; the benchmark's own package or Dockerfile, or the core, changes it."""
    package = tmp_path / "pytest_codebench"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))

    def key() -> str:
        return code_digest("computeeval", own_code(package / "benchmarks/computeeval/benchmark.py", package), package)

    base = key()
    _append(package / "benchmarks/pie/report.py")
    _append(package / "benchmarks/tensorbench/rules.py")
    _append(package / "images/pie.Dockerfile")
    (package / "benchmarks/example").mkdir()
    (package / "benchmarks/example/__init__.py").write_text('"""A new benchmark."""\n')
    (package / "images/example.Dockerfile").write_text("FROM codebench-base:bookworm\n")
    assert key() == base
    keys = [base]
    for own_or_core in (
        "benchmarks/computeeval/rules.py",
        "benchmarks/computeeval/guard/main_guard.c",
        "images/computeeval.Dockerfile",
        "options.py",
        "runners/local.py",
        "benchmarks/speedup.py",  # shared by the benchmarks: the core's
    ):
        _append(package / own_or_core, "\n")
        assert key() not in keys, own_or_core
        keys.append(key())


def test_a_benchmark_installed_from_elsewhere_is_keyed_by_its_own_package(tmp_path):
    (tmp_path / "mybench").mkdir()
    (tmp_path / "mybench/__init__.py").write_text("")
    (tmp_path / "mybench/grade.py").write_text("")
    (tmp_path / "single.py").write_text("")
    assert own_code(tmp_path / "mybench/grade.py") == tmp_path / "mybench"
    assert own_code(tmp_path / "single.py") == tmp_path / "single.py"
    base = code_digest("mine", tmp_path / "mybench")
    _append(tmp_path / "mybench/grade.py")
    assert code_digest("mine", tmp_path / "mybench") != base


def test_only_settings_that_can_change_a_verdict_are_in_the_key():
    values = {option.name: option.default for option in CORE_OPTIONS}
    settings = Settings({**values, REPORT.name: "a.json", OUTPUT_LIMIT.name: 1000, ENV.name: ["MY_*"]})
    key = grading_settings(settings, CORE_OPTIONS)
    assert key[OUTPUT_LIMIT.name] == 1000 and key[ENV.name] == ["MY_*"]
    for name in ("report", "k", "fail-under", "run-dir", "keep-workspaces", "shard", "store", "markdown", "dataset"):
        assert name not in key, name


def test_the_models_verdicts_and_the_machines_skips_are_stored_and_excused_ones_shared_within_a_run():
    assert storable(Verdict(Outcome.PASSED)) and storable(Verdict(Outcome.BUILD_ERROR, "cc failed"))
    assert not storable(Verdict(Outcome.ERROR, "docker died"))
    assert not storable(Verdict(Outcome.ERROR, "no GPU", excused=True))
    # The machine's skip is kept, keyed by the machine too (the model's skip is graded again).
    assert storable(Verdict(Outcome.SKIPPED, "no GPU", excused=True))
    assert not storable(Verdict(Outcome.SKIPPED, "the test said SKIP"))
    assert machine_key("k", "host-a") not in {"k", machine_key("k", "host-b")}
    assert shareable(Verdict(Outcome.SKIPPED, "no GPU", excused=True))
    assert shareable(Verdict(Outcome.TEST_FAILED))
    # A skip that counts as failed only because the model's code ran is graded again.
    assert not shareable(Verdict(Outcome.SKIPPED, "the test said SKIP"))


def test_timing_verdicts_are_reused_only_on_their_machine(run_context):
    from pytest_codebench.benchmarks.computeeval.benchmark import ComputeEval
    from pytest_codebench.benchmarks.pie.benchmark import Pie

    assert Pie(run_context).timed
    assert not ComputeEval(run_context).timed
    perf = Settings({**run_context.settings.as_dict(), PERF.name: True})
    assert ComputeEval(dataclasses.replace(run_context, settings=perf)).timed


# -- the store file --------------------------------------------------------------------------------


def test_a_stored_verdict_reads_back_whole(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite3")
    verdict = Verdict(Outcome.TEST_FAILED, "tests failed", "./t", 1, "tail", {"build_seconds": 0.5}, {"test": "/l"})
    store.put("k", Stored(verdict, "run-1", "T/1[0]"), "computeeval")
    assert store.get("k") == Stored(verdict, "run-1", "T/1[0]")
    assert store.get("other") is None


def test_a_store_of_the_first_layout_gains_the_grading_time_and_keeps_its_verdicts(tmp_path):
    path = tmp_path / "v.sqlite3"
    old = sqlite3.connect(path)
    old.execute(
        f"CREATE TABLE {TABLE} (key TEXT PRIMARY KEY, verdict TEXT NOT NULL, run TEXT NOT NULL, "
        "item TEXT NOT NULL, benchmark TEXT NOT NULL, stored_at REAL NOT NULL)"
    )
    old.execute(f"INSERT INTO {TABLE} VALUES ('old', ?, 'r0', 'T/0[0]', 'computeeval', 1.0)", (encode_passed(),))
    old.commit()
    old.close()
    assert VerdictStore(path, writable=False).get("old") == Stored(Verdict(Outcome.PASSED), "r0", "T/0[0]")
    assert VerdictStore(path, writable=False).seconds("computeeval") == {}
    store = VerdictStore(path)
    store.put("new", Stored(Verdict(Outcome.PASSED), "r1", "T/1[0]", 2.5), "computeeval")
    assert store.get("new") == Stored(Verdict(Outcome.PASSED), "r1", "T/1[0]", 2.5)
    assert store.get("old") == Stored(Verdict(Outcome.PASSED), "r0", "T/0[0]")  # nothing lost
    assert store.seconds("computeeval") == {"T/1[0]": 2.5} and store.seconds("pie") == {}


def encode_passed() -> str:
    return json.dumps(Verdict(Outcome.PASSED).to_dict(), separators=(",", ":"))


def test_modes_read_and_write(tmp_path):
    path = tmp_path / "v.sqlite3"
    read_only = VerdictStore(path, writable=False)
    read_only.put("k", Stored(Verdict(Outcome.PASSED), "r", "i"), "computeeval")
    assert not path.exists()  # read mode makes nothing
    write_only = VerdictStore(path, readable=False)
    write_only.put("k", Stored(Verdict(Outcome.PASSED), "r", "i"), "computeeval")
    assert write_only.get("k") is None  # write mode grades again
    assert VerdictStore(path, writable=False).get("k") is not None


def _writer(path: str, start: int) -> None:
    store = VerdictStore(Path(path))
    for n in range(start, start + 150):
        store.put(f"k{n}", Stored(Verdict(Outcome.PASSED, f"n={n}"), "run", f"T/{n}[0]"), "computeeval")


def test_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "v.sqlite3"
    VerdictStore(path).close()
    processes = [
        multiprocessing.get_context("spawn").Process(target=_writer, args=(str(path), n * 1000)) for n in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    store = VerdictStore(path)
    assert store.count() == 600
    assert store.get("k3149") is not None and store.get("k3149").verdict.reason == "n=3149"  # type: ignore[union-attr]


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_codebench.sweeps.store import Stored, VerdictStore
    from pytest_codebench.verdict import Outcome, Verdict
    store = VerdictStore(Path(sys.argv[1]))
    n = int(sys.argv[2])
    while True:
        store.put(f"k{n}", Stored(Verdict(Outcome.PASSED, "x" * 5000), "run", "T/1[0]"), "computeeval")
        print(n, flush=True)
        n += 1
    """
)


def test_kill_9_at_any_moment_leaves_a_sound_store_with_every_acknowledged_verdict(tmp_path):
    path = tmp_path / "v.sqlite3"
    acknowledged = -1
    for round in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(acknowledged + 1)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout is not None
        for _ in range(40 + 37 * round):  # a different moment each round, mid-transaction or not
            acknowledged = int(writer.stdout.readline())
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in db.execute(f"SELECT key FROM {TABLE}")}
        db.close()
        assert {f"k{n}" for n in range(acknowledged + 1)} <= stored


# -- runs ------------------------------------------------------------------------------------------


def _pack(pytester: pytest.Pytester, test: str = packs.TEST, reference: str = packs.RIGHT) -> list[str]:
    """Four host-only tasks, a right and a wrong sample each; a cache dir of the test's own."""
    tests = [{"path": "test/test_main.c", "content": test}]
    problems = [
        packs.problem(task, min_cuda_toolkit=None, test_files=tests, baseline_solution=packs.solution(task, reference))
        for task in TASKS
    ]
    solutions = [packs.solution(task, code) for task in TASKS for code in (packs.RIGHT, packs.WRONG)]
    cache = pytester.path / "cache"
    return [*packs.pack_args(pytester.path, problems, solutions), FORCE, "--codebench-cache-dir", str(cache)]


def _report(pytester: pytest.Pytester, name: str) -> dict:
    return json.loads((pytester.path / name).read_text())


def _graded_here(pytester: pytest.Pytester, report: dict) -> set[str]:
    """The items that left logs of their own in the report's run folder: those graded by that
    run (a verdict the store served brings its logs as ``stored-*`` copies)."""
    logs = Path(report["run_dir"]) / "logs"
    found = logs.iterdir() if logs.exists() else []
    return {path.name for path in found if any(not log.name.startswith("stored-") for log in path.iterdir())}


def test_a_second_run_is_served_from_the_store_with_the_same_verdicts(pytester, codebench):
    args = _pack(pytester)
    first = codebench(*args, "--codebench-report", "first.json")
    first.result.assert_outcomes(passed=4, failed=4)
    assert not any("cached" in item["properties"] for item in first.items.values())
    first.result.stdout.fnmatch_lines(["verdict store (on): 0 of 8 items from earlier runs (*verdicts.sqlite3)"])

    second = codebench(*args, "--codebench-report", "second.json", "--codebench-keep-workspaces")
    second.result.assert_outcomes(passed=4, failed=4)
    second.result.stdout.fnmatch_lines(["verdict store (on): 8 of 8 items from earlier runs (*verdicts.sqlite3)"])
    for name, item in second.items.items():
        assert item["properties"]["cached"] == "true"
        assert item["properties"]["category"] == first.outcome(name)
    assert "[test_failed] test failed" in second.items["T/0[1]"]["message"]  # the failure text as graded
    report = _report(pytester, "second.json")
    assert report["reused"] == {"cached": 8, "same_as": 0}
    assert report["metrics"] == _report(pytester, "first.json")["metrics"]
    # Nothing graded: no log, and no workspace made even where they are kept.
    assert _graded_here(pytester, report) == set()
    assert not list((Path(report["run_dir"]) / "work").glob("*"))


def test_a_served_verdicts_logs_are_this_runs_and_a_pruned_runs_are_said_gone(pytester, codebench):
    args = _pack(pytester)
    codebench(*args, "--codebench-report", "first.json")
    first = _report(pytester, "first.json")
    codebench(*args, "--codebench-report", "second.json")
    second = _report(pytester, "second.json")
    failed = next(item for item in second["items"] if item["id"] == "T/0[1]")
    assert failed["cached"] and failed["logs"], failed
    for log in failed["logs"].values():  # in this run's folder, where the report lives, not the first run's
        assert log.startswith(second["run_dir"]) and Path(log).is_file()
    assert failed["figures"]["stored_logs"] == f"copied from run {Path(first['run_dir']).name}"
    shutil.rmtree(first["run_dir"])  # pruned, as --codebench-keep-logs does
    codebench(*args, "--codebench-report", "third.json")
    third = next(item for item in _report(pytester, "third.json")["items"] if item["id"] == "T/0[1]")
    assert third["logs"] == {} and "no longer has its" in third["figures"]["stored_logs"]


def test_what_decides_a_verdict_is_in_its_key_and_nothing_else(pytester, codebench):
    args = _pack(pytester)
    codebench(*args)
    # Options that cannot change a verdict: still served.
    same = codebench(*args, "--codebench-k", "1,2", "--codebench-report", "k.json")
    assert _report(pytester, "k.json")["reused"]["cached"] == 8
    assert same.outcome("T/0[1]") == "test_failed"
    # A grading option: graded again.
    codebench(*args, "--codebench-output-limit", "5000", "--codebench-report", "limit.json")
    assert _report(pytester, "limit.json")["reused"]["cached"] == 0
    # A changed task record (its held-out test): graded again, with the new test's verdicts.
    swapped = packs.TEST.replace("!= 5", "!= -1")  # now the wrong sample passes and the right one fails
    changed = codebench(*_pack(pytester, swapped, packs.WRONG), "--codebench-report", "changed.json")
    assert _report(pytester, "changed.json")["reused"]["cached"] == 0
    assert changed.outcome("T/0[0]") == "test_failed" and changed.outcome("T/0[1]") == "passed"


def test_a_change_to_another_benchmark_grades_nothing_again(pytester, codebench, monkeypatch):
    """The runs import a copy of the plugin (first on PYTHONPATH). A file of PIE's changes, and
    a benchmark is added: ComputeEval's verdicts are still served from the store, though the
    harness version the report shows (every file) changed. A file of ComputeEval's own: graded again."""
    site = pytester.path / "site"
    package = site / "pytest_codebench"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("PYTHONPATH", str(site))
    solutions = [packs.solution("T/0", code) for code in (packs.RIGHT, packs.WRONG)]
    args = [*packs.pack_args(pytester.path, [packs.problem("T/0", min_cuda_toolkit=None)], solutions), FORCE]
    args += ["--codebench-cache-dir", str(pytester.path / "cache")]
    codebench(*args, "--codebench-report", "first.json")
    _append(package / "benchmarks/pie/report.py")
    (package / "benchmarks/example").mkdir()
    (package / "benchmarks/example/__init__.py").write_text('"""A new benchmark."""\n')
    served = codebench(*args, "--codebench-report", "served.json")
    served.result.assert_outcomes(passed=1, failed=1)
    first, report = _report(pytester, "first.json"), _report(pytester, "served.json")
    assert report["reused"]["cached"] == 2 and _graded_here(pytester, report) == set()
    assert report["harness_version"] != first["harness_version"]  # the copy ran, and reports show it all
    _append(package / "benchmarks/computeeval/rules.py")
    codebench(*args, "--codebench-report", "own.json")
    assert _report(pytester, "own.json")["reused"]["cached"] == 0


def test_store_modes(pytester, codebench):
    """on reads and writes, read only reads, write only writes (grading everything again),
    off does neither."""
    args = _pack(pytester)
    store = pytester.path / "cache" / "verdicts.sqlite3"
    # mode: (items served from the store, verdicts this run kept)
    expected = {"write": (0, 8), "read": (8, 0), "on": (8, 0), "off": (0, 0), "write again": (0, 8)}
    for mode, (served, kept) in expected.items():
        run = codebench(*args, "--codebench-store", mode.split()[0], "--codebench-report", "run.json")
        run.result.assert_outcomes(passed=4, failed=4)
        report = _report(pytester, "run.json")
        assert report["reused"]["cached"] == served, mode
        assert len(_graded_here(pytester, report)) == 8 - served, mode
        db = sqlite3.connect(store)
        rows = db.execute(f"SELECT count(*) FROM {TABLE} WHERE run = ?", (Path(report["run_dir"]).name,)).fetchone()
        db.close()
        assert rows[0] == kept, mode


FAKE_GPU = """
def pytest_codebench_probe_gpus(config):
    return {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"}]}
"""


def test_a_skip_the_machine_decided_is_remembered_until_the_machine_changes(pytester, codebench):
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in TASKS]
    args = [*packs.pack_args(pytester.path, problems, [packs.solution(t) for t in TASKS])]
    args += ["--codebench-cache-dir", str(pytester.path / "cache")]
    # No GPU here, and no --codebench-run-without-gpu: every item builds, then skips.
    first = codebench(*args, "--codebench-report", "a.json")
    first.result.assert_outcomes(skipped=4)
    assert len(_graded_here(pytester, _report(pytester, "a.json"))) == 4
    second = codebench(*args, "--codebench-report", "b.json")
    second.result.assert_outcomes(skipped=4)
    report = _report(pytester, "b.json")
    assert report["reused"]["cached"] == 4 and _graded_here(pytester, report) == set()  # nothing built again
    assert {item["reason"] for item in report["items"]} == {
        item["reason"] for item in _report(pytester, "a.json")["items"]
    }
    # The same machine given a GPU (its probe says so): graded again, and the host-only tests pass.
    pytester.makeconftest(FAKE_GPU)
    third = codebench(*args, "--codebench-report", "c.json")
    third.result.assert_outcomes(passed=4)
    assert _report(pytester, "c.json")["reused"]["cached"] == 0


def test_a_corrupt_store_is_one_usage_error_naming_it_and_off_still_works(pytester):
    args = _pack(pytester)
    path = pytester.path / "cache" / "verdicts.sqlite3"
    path.parent.mkdir()
    path.write_bytes(b"this is not a database, but it is where the store goes\n" * 100)
    result = pytester.runpytest_subprocess("--codebench=computeeval", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert errors == [
        f"ERROR: {STORE.cli}: the verdict store {path} is not a readable verdict store (file is not a database); "
        f"{STORE.cli} off runs without it"
    ]
    assert pytester.runpytest_subprocess("--codebench=computeeval", *args, f"{STORE.cli}=off").ret == 1  # 4 failed


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA locking_mode=EXCLUSIVE")
    db.execute("BEGIN EXCLUSIVE")
    print("holding", flush=True)
    time.sleep(120)
    """
)


def test_a_locked_store_is_one_usage_error_naming_it(pytester):
    args = _pack(pytester)
    path = pytester.path / "cache" / "verdicts.sqlite3"
    VerdictStore(path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        result = pytester.runpytest_subprocess("--codebench=computeeval", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: {STORE.cli}: the verdict store {path} is locked by another process*"])
        assert pytester.runpytest_subprocess("--codebench=computeeval", *args, f"{STORE.cli}=off").ret == 1
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout:
            holder.stdout.close()


def test_a_bad_store_mode_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess("--codebench=computeeval", f"{STORE.cli}=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{STORE.cli}=sometimes: expected one of off, read, write, on*"])


# The model's program, at test time: overwrite the store (and its WAL), and leave a forged
# verdict where the run's duplicates share theirs.
ATTACK = """#include <stdio.h>
#include "add.h"
int add(int a, int b) {
    const char *targets[] = {"STORE", "STORE-wal", "RUNS/forged.json"};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(targets[i], "w");
        if (f) { fputs("{\\"outcome\\": \\"passed\\"} garbage", f); fclose(f); }
    }
    return a + b;
}
"""


def test_a_models_code_cannot_reach_the_store(pytester, codebench):
    if sandbox_state(Settings({})).plan is None:
        no_sandbox("the store is kept from the model's code by the bwrap sandbox here")
    store = pytester.path / "cache" / "verdicts.sqlite3"
    runs = pytester.path / "runs"
    attack = ATTACK.replace("STORE", str(store)).replace("RUNS", str(runs))
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in [*TASKS, "T/evil"]]
    solutions = [packs.solution(task, code) for task in TASKS for code in (packs.RIGHT, packs.WRONG)]
    solutions.append(packs.solution("T/evil", attack))
    args = [*packs.pack_args(pytester.path, problems, solutions), FORCE, "--codebench-cache-dir", str(store.parent)]
    args += ["--codebench-run-dir", str(runs)]
    first = codebench(*args)
    first.result.assert_outcomes(passed=5, failed=4)  # the honest control grades as ever
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] == 9
    db.close()
    assert not (runs / "forged.json").exists()
    second = codebench(*args, "--codebench-report", "again.json")
    second.result.assert_outcomes(passed=5, failed=4)
    assert _report(pytester, "again.json")["reused"]["cached"] == 9
