"""A run killed with ``kill -9`` half way, started again with the same command, grades only what
is missing, and its report says what an uninterrupted run's says."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import packs
import pytest

from pytest_codebench.sweeps.store import TABLE

TASKS = [f"T/{n}" for n in range(4)]
# Each build takes a moment, so that the run can be caught half way.
SLOW_BUILD = "sleep 0.5; cc -I include -o test.out solution.c test/test_main.c"


def _stored(path: Path) -> int:
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the table is not made yet
    finally:
        db.close()


def _kill_half_way(pytester: pytest.Pytester, args: list[str], store: Path, total: int) -> int:
    """Start the run, SIGKILL it (and its workers) once half its verdicts are stored; returns
    how many were stored by then."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    run = pytester.popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while _stored(store) < total // 2:
        assert run.poll() is None, "the run ended before it was half way"
        assert time.monotonic() < deadline, "the run never got half way"
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    assert run.wait() == -signal.SIGKILL
    return _stored(store)


def test_a_run_killed_half_way_resumes_where_it_stopped(pytester, xdist_args):
    problems = [packs.problem(task, min_cuda_toolkit=None, build_command=SLOW_BUILD) for task in TASKS]
    solutions = [packs.solution(task, code) for task in TASKS for code in (packs.RIGHT, packs.WRONG)]
    cache = pytester.path / "cache"
    args = [
        "--codebench=computeeval",
        *xdist_args,
        *packs.pack_args(pytester.path, problems, solutions),
        *("--codebench-run-without-gpu", "--codebench-cache-dir", str(cache), "--codebench-k", "1,2"),
        *("--codebench-report", "report.json"),
    ]
    total = 2 * len(TASKS)
    stored = _kill_half_way(pytester, args, cache / "verdicts.sqlite3", total)
    assert total // 2 <= stored < total
    assert not (pytester.path / "report.json").exists()
    db = sqlite3.connect(cache / "verdicts.sqlite3")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()

    resumed = pytester.runpytest_subprocess(*args)  # the same command
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["reused"]["cached"] == stored
    logs = Path(report["run_dir"]) / "logs"
    # An item graded here left logs of its own; one served from the store only copies (stored-*).
    found = logs.iterdir() if logs.exists() else []
    graded = {path.name for path in found if any(not log.name.startswith("stored-") for log in path.iterdir())}
    cached = {item["id"] for item in report["items"] if item["cached"]}
    assert len(graded) == total - stored  # only what was missing was graded
    assert not graded & {name.replace("/", "_").replace("[", "_").rstrip("]") for name in cached}

    whole_args = [arg if arg != str(cache) else str(pytester.path / "other-cache") for arg in args]
    whole_args[whole_args.index("report.json")] = "whole.json"
    assert pytester.runpytest_subprocess(*whole_args).ret == pytest.ExitCode.TESTS_FAILED
    whole = json.loads((pytester.path / "whole.json").read_text())
    assert whole["reused"]["cached"] == 0
    for key in ("counts", "score", "scores", "metrics"):
        assert report[key] == whole[key], key
    outcomes = {item["id"]: (item["status"], item["outcome"]) for item in report["items"]}
    assert outcomes == {item["id"]: (item["status"], item["outcome"]) for item in whole["items"]}
