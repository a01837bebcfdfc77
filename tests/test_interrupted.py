"""A run that ends before it reaches every item (Ctrl-C, -x): its reports say so, name the
items not reached, replace a finished run's reports whole, and its gate never passes."""

from __future__ import annotations

import json

import packs
import pytest
from test_html_data import read_data

FORCE = "--codebench-run-without-gpu"
# What Ctrl-C does in pytest's own loop, once the first item is done.
CTRL_C = "def pytest_runtest_logfinish(nodeid, location):\n    raise KeyboardInterrupt\n"
OUTPUTS = ("--codebench-report", "r.json", "--codebench-markdown", "r.md", "--codebench-html", "page")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    problems = [packs.problem(f"T/{i}") for i in (1, 2, 3)]
    solutions = [packs.solution("T/1", packs.WRONG), packs.solution("T/2"), packs.solution("T/3")]
    dataset = packs.pack_args(pytester.path, problems, solutions)
    return pytester.runpytest_subprocess("--codebench=computeeval", *dataset, FORCE, *OUTPUTS, *args)


def test_ctrl_c_after_a_finished_run_leaves_whole_reports_that_say_interrupted(pytester: pytest.Pytester) -> None:
    finished = run(pytester, "--codebench-fail-under", "0")
    assert finished.ret == pytest.ExitCode.OK
    assert json.loads((pytester.path / "r.json").read_text())["interrupted"] is None
    pytester.makeconftest(CTRL_C)
    stopped = run(pytester, "--codebench-fail-under", "0", "--codebench-store", "off")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    line = "interrupted: 2 of 3 items not reached (T/2[0], T/3[0]); the figures below are over the items graded"
    stopped.stdout.fnmatch_lines(
        [line, "fail-under NOT met because the run was interrupted: 2 of 3 items not reached"], consecutive=False
    )
    report = json.loads((pytester.path / "r.json").read_text())
    not_reached = ["computeeval/p-problems::T/2[0]", "computeeval/p-problems::T/3[0]"]
    assert report["interrupted"] == {"not_reached": not_reached, "items": 3}
    assert [item["id"] for item in report["items"]] == ["T/1[0]"]
    assert line in (pytester.path / "r.md").read_text()
    # The page is the interrupted run's, whole: its one item, and no half-written folder beside it.
    _, overview = read_data(pytester.path / "page" / "data" / "overview.js")
    assert overview["items"] == 1 and overview["run"]["scope"] == [line]
    assert {"assets", "data", "index.html"} <= {path.name for path in (pytester.path / "page").iterdir()}
    assert not list((pytester.path / "page").glob(".*"))


def test_a_run_stopped_at_its_first_failure_is_partial_and_its_gate_is_not_met(pytester: pytest.Pytester) -> None:
    stopped = run(pytester, "-x", "--codebench-fail-under", "0")
    assert stopped.ret == pytest.ExitCode.TESTS_FAILED
    stopped.stdout.fnmatch_lines(
        [
            "interrupted: 2 of 3 items not reached (T/2[0], T/3[0]); the figures below are over the items graded",
            "fail-under 0%: score 0.00%, met",
            "fail-under NOT met because the run was interrupted: 2 of 3 items not reached",
        ]
    )
    # Run whole, the same gate is met.
    assert run(pytester, "--codebench-fail-under", "0").ret == pytest.ExitCode.OK
