"""TensorBench's decisions, as pure functions of what the suite did and what the patch added.

Kept apart from the steps that run the commands (suite.py), like SWE-bench's ``grading.py``,
so that each rule is tested on made-up inputs: what a suite's JUnit XML and exit code mean,
what the base commit's own failures add to a failure's reason, and what tests that assert
nothing do to a pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pytest_codebench.reports import junit
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome, Verdict

from .canary import Canaries, Wrong
from .edits import HarnessEdit

SHOWN_FAILURES = 20  # failing test ids named in a reason; the figure lists them all


def suite_verdict(result: RunResult, report: junit.SuiteReport | None) -> Verdict:
    """What the suite's JUnit XML (None: it wrote none) says, cross-checked with its exit code:
    the outcome, why, and the suite's figures (tests, failures, the failed ids)."""
    code = result.exit_code
    if report is None:
        why = f"the suite wrote no JUnit XML (exit {code}): it crashed or never started"
        return Verdict.of_run(Outcome.ERROR, why, result)
    figures: dict[str, float | str] = {"tests": report.tests, "failures": len(report.failed)}
    if report.failed:
        shown = report.failed[:SHOWN_FAILURES]
        more = f" and {len(report.failed) - len(shown)} more" if len(report.failed) > len(shown) else ""
        figures["failed_tests"] = "\n".join(report.failed)  # ids may hold ", " (parameters)
        why = f"{len(report.failed)} of {report.tests} tests failed: {', '.join(shown)}{more}"
        if code == 0:
            # The harness's own record saw them fail: what made pytest exit 0 hid them.
            why = f"{why} (yet the suite exited 0)"
        return Verdict.of_run(Outcome.TEST_FAILED, why, result, figures=figures)
    if not report.ran:
        why = f"the suite ran no test ({report.tests} collected, {report.skipped} skipped; exit {code})"
        return Verdict.of_run(Outcome.ERROR, why, result, figures=figures)
    if code != 0:
        return Verdict.of_run(
            Outcome.ERROR, f"exit {code}, yet the JUnit XML shows no failure", result, figures=figures
        )
    return Verdict(Outcome.PASSED, f"{report.tests} tests passed ({report.skipped} skipped)", figures=figures)


def known_failures(verdict: Verdict, failing_before: Sequence[str]) -> Verdict:
    """A failure's reason also names its failed tests that already fail at the base commit
    (``failing_before``, from the unpatched tree's run): the task asks for a suite that passes,
    so the verdict stands, but the reader learns which failures the patch did not cause."""
    if verdict.outcome is not Outcome.TEST_FAILED:
        return verdict
    known = sorted(set(str(verdict.figures.get("failed_tests", "")).splitlines()) & set(failing_before))
    if not known:
        return verdict
    return dataclasses.replace(
        verdict, reason=f"{verdict.reason}; already failing at the base commit: {', '.join(known)}"
    )


def with_vacuous(verdict: Verdict, vacuous: Sequence[str], fail: bool) -> Verdict:
    """A pass whose patch added tests that assert nothing (``vacuous``) says so, and is
    ``vacuous_tests`` when ``fail`` (``--codebench-fail-vacuous``); other verdicts stand."""
    if verdict.outcome is not Outcome.PASSED or not vacuous:
        return verdict
    reason = f"{verdict.reason}; {len(vacuous)} added test(s) assert nothing: {', '.join(vacuous)}"
    return dataclasses.replace(verdict, outcome=Outcome.VACUOUS_TESTS if fail else Outcome.PASSED, reason=reason)


def missing_tests(verdict: Verdict, passed_before: Sequence[str], outcomes: Mapping[str, str]) -> Verdict:
    """Every test that passes at the base commit (``passed_before``) must run and be reported
    in the patched run (``outcomes``: the harness's record, per test id). One deselected,
    skipped, marked as an expected failure or gone fails a pass: the model's failure."""
    missing = [test for test in passed_before if outcomes.get(test) not in ("passed", "failed", "xpassed")]
    if not missing or verdict.outcome in (Outcome.TEST_TIMEOUT, Outcome.BUILD_TIMEOUT, Outcome.BUILD_ERROR):
        return verdict
    shown = ", ".join(f"{test} ({outcomes.get(test, 'not run')})" for test in missing[:SHOWN_FAILURES])
    more = f" and {len(missing) - SHOWN_FAILURES} more" if len(missing) > SHOWN_FAILURES else ""
    why = f"{len(missing)} test(s) that pass at the base commit did not run or were not reported: {shown}{more}"
    figures = {**verdict.figures, "missing_tests": "\n".join(missing)}
    if verdict.outcome is Outcome.PASSED:
        return dataclasses.replace(verdict, outcome=Outcome.TEST_FAILED, reason=why, figures=figures)
    return dataclasses.replace(verdict, reason=f"{verdict.reason}; {why}", figures=figures)


def with_harness_edits(verdict: Verdict, edits: Sequence[HarnessEdit], allow: bool) -> Verdict:
    """A verdict names the patch's edits of pytest's configuration, conftests and plugins
    (``harness_edits``); those that change how tests are collected or reported fail it,
    unless ``allow`` (``--codebench-allow-harness-edits``)."""
    if not edits:
        return verdict
    figures = {**verdict.figures, "harness_edits": "\n".join(str(edit) for edit in edits)}
    judging = [str(edit) for edit in edits if edit.collection]
    if allow or not judging or verdict.outcome is not Outcome.PASSED:
        return dataclasses.replace(verdict, figures=figures)
    why = (
        f"the patch changes how its tests are collected or reported: {', '.join(judging)} "
        f"(--codebench-allow-harness-edits grades it anyway)"
    )
    return dataclasses.replace(verdict, outcome=Outcome.TEST_FAILED, reason=why, figures=figures)


def with_canaries(verdict: Verdict, wrong: Sequence[Wrong]) -> Verdict:
    """The harness's canary tests against the suite's verdict (``wrong``: those reported
    otherwise than they must be). A failing canary reported as passing is tampering whatever
    the verdict: something makes failures look like passes. Any other wrong canary (missing,
    or a passing one reported failed) is tampering where the suite would pass; where it
    failed anyway (a collection error or ``-x`` stops the session before the canaries run, a
    broken conftest fixture fails them) the failure stands, its ``canaries`` figure names them."""
    if not wrong:
        return verdict
    hidden = [canary for canary in wrong if canary.want == "failed" and canary.got in ("passed", "xpassed")]
    shown = "; ".join(str(canary) for canary in wrong[:SHOWN_FAILURES])
    figures = {**verdict.figures, "canaries": "\n".join(str(canary) for canary in wrong)}
    if hidden or verdict.outcome is Outcome.PASSED:
        why = f"the suite's own code changed how its tests are run or reported: the harness's canary tests: {shown}"
        return dataclasses.replace(verdict, outcome=Outcome.TAMPERED, reason=why, figures=figures)
    return dataclasses.replace(verdict, figures=figures)


def with_tripwires(verdict: Verdict, tripwires: Sequence[str], result: RunResult) -> Verdict:
    """``tampered`` where the harness's plugin found pytest's machinery changed (``tripwires``,
    from the test step and the canary run), whatever the suite did; the verdict stands where the
    canaries already named tampering: they are proof from outside, the tripwires a record made
    inside the suite's process, which the patch's code can blind but an honest suite never trips."""
    if not tripwires or verdict.outcome is Outcome.TAMPERED:
        return verdict
    shown = "; ".join(list(dict.fromkeys(tripwires))[:SHOWN_FAILURES])
    why = f"the suite's own code changed how its tests are run: the harness's reporting plugin found {shown}"
    return Verdict.of_run(Outcome.TAMPERED, why, result)


def canaries_counted_apart(verdict: Verdict, canaries: Canaries | None) -> Verdict:
    """A reason's counts (``1 of 6 tests failed``, ``6 tests passed``) are of the repository's
    tests; pytest's own, in the output and the log beside it (``collected 10 items``, ``2
    failed, 8 passed``), also hold the harness's canary tests, some failing by design. The
    reason says how many, so the two add up. Only where the suite's counts are given and every
    canary ran as written: a ``tampered`` reason, or a failure's ``canaries`` figure, names the
    canaries that did not."""
    outcomes = (Outcome.PASSED, Outcome.TEST_FAILED, Outcome.VACUOUS_TESTS)
    if canaries is None or verdict.outcome not in outcomes or "tests" not in verdict.figures:
        return verdict
    if "canaries" in verdict.figures:
        return verdict
    count, failing = len(canaries.fail) + len(canaries.passes), len(canaries.fail)
    note = (
        f"pytest's own counts also hold the harness's {count} canary tests ({canaries.path}: "
        f"{failing} fail{'s' * (failing == 1)} by design), left out of these"
    )
    return dataclasses.replace(verdict, reason=f"{verdict.reason}; {note}")
