"""Canary runs of a Python test (``cuda_python``): a passing test run once more, where the
runner ends a script that truly passed with a status K chosen at random per canary run; it
must end exactly that way.

The Python runner (guard.pyrunner) proves from inside the interpreter that the script
ran to its end, and the solution runs in that interpreter: it can read the nonce from the
runner's frames (``sys._getframe``, ``gc``), forge the "return 0" record and end with status 0
itself, or patch what the runner calls (``os.write``, ``sys.exit``) so that a failing test's
end looks like a pass. The canary run has the same command line, environment, files and
runner; only its nonce differs, chosen so that the runner's :func:`ending` of it is K, and the
runner works K out only once the script has ended. A forger that does not work it out (from
the runner's code and its nonce) ends the canary with 0, or the test's failure, not K: the
item is tampered. Like the C canary, it runs in a fresh copy of the problem and solution
(its own workspace), built again by the problem's build command.
"""

from __future__ import annotations

import secrets

from pytest_codebench.grading import Grading, Step
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome

from .canary import Host, in_own_workspace, noting, refused, test_ends
from .main_guard import GuardRecord
from .pyrunner import ENDINGS


def check(grading: Grading, host: Host, timeout: float) -> str | None:
    """Why the Python item that passed is tampered (its canary run did not end with the
    canary's status), else None; the figure ``canary`` says whether it passed or why it was
    skipped."""
    status = ENDINGS[1 + secrets.randbelow(len(ENDINGS) - 1)]
    return in_own_workspace(grading, lambda canary: _run(canary, host, status, timeout))


def _run(canary: Grading, host: Host, status: int, timeout: float) -> str | None:
    record, wait = canary.case.record, canary.case.timeout or timeout
    if refused(canary, host):
        return None
    build = record.get("build_command")
    if build:
        with host.build_slots.acquire(wait):
            failed = canary.step(Step("build", build, Outcome.BUILD_ERROR, Outcome.BUILD_TIMEOUT), timeout=timeout)
        if failed is not None:
            return f"the canary build failed where the real one passed: {failed.output_tail or failed.reason}"
    judge = noting(canary, status, lambda result, records: _ended(result, records, status))
    ended = test_ends(canary, host, timeout, judge, status)
    why = "a solution that ends the interpreter itself, forges the runner's records or patches what it calls"
    return None if ended is None else f"the canary run {ended} ({why})"


def _ended(result: RunResult, records: list[GuardRecord], status: int) -> str | None:
    """How the canary run did not end as the runner ends a script that passed, or None."""
    if result.timed_out:
        return "timed out"
    if result.exit_code != status:
        return f"ended with status {result.exit_code}, not the canary's {status}"
    if not any(r.event == "start" for r in records):
        return "has no record of the script's start"
    if not any(r.event == "return" and r.value == 0 for r in records):
        return "has no record of the script ending with 0"
    return None
