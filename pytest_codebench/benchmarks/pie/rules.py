"""PIE's decisions, as pure functions of what a program printed and what was measured.

Kept apart from running programs so that each rule can be tested on made-up inputs: PIE's
line rule, what one run of a program means (timeout, flood, crash, wrong output), and whether
a measured speedup makes the candidate faster.
"""

from __future__ import annotations

import dataclasses
import decimal
import re
from collections.abc import Mapping
from typing import Any

from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome

from ..speedup import FUTILE, bounds_text

FLOAT_TOLERANCE = decimal.Decimal("1e-3")
INTEGER = re.compile(r"[+-]?[0-9]+")
# What JSON calls the values a candidate's column may hold instead of a program's text.
JSON_TYPES = {dict: "object", list: "array", int: "number", float: "number", bool: "boolean"}


def accuracy(expected: str, actual: str) -> tuple[float, str | None]:
    """PIE's line rule: the share of expected lines the output matches (equal, or both whole
    lines numbers within 1e-3, exactly), and the first mismatch as a diff. Empty expected output is
    matched only by empty output (PIE divides by zero there)."""
    want, got = expected.strip().splitlines(), actual.strip().splitlines()
    if not want:
        return (1.0, None) if not got else (0.0, f"expected no output, got {got[0]!r}")
    matched, first = 0, None
    for index, line in enumerate(want):
        have = got[index] if index < len(got) else None
        if have is not None and _same_line(line, have):
            matched += 1
        elif first is None:
            shown = have.strip() if have is not None else "<no line>"
            first = f"line {index + 1}: expected {line.strip()!r}, got {shown!r}"
    return matched / len(want), first


def _same_line(expected: str, actual: str) -> bool:
    """Equal lines, or equal numbers: two integers exactly (a float holds 53 bits: 3**50 and
    3**50 + 1 are one float), any other two numbers within 1e-3, in exact decimal arithmetic
    (a real printed for a 25-digit integer must be that integer within 1e-3)."""
    expected, actual = expected.strip(), actual.strip()
    if expected == actual:
        return True
    if INTEGER.fullmatch(expected) and INTEGER.fullmatch(actual):
        return int(expected) == int(actual)
    try:
        return abs(decimal.Decimal(expected) - decimal.Decimal(actual)) <= FLOAT_TOLERANCE
    except (ArithmeticError, ValueError):  # not numbers, NaN, or beyond decimal's exponents
        return False


def not_a_program(code: object) -> str | None:
    """Why a candidate of a generations row cannot be a program file, or None: it is not text
    (a JSON null, number, list or object), or its text is not valid Unicode (a lone surrogate,
    which JSON's ``\\ud800`` spells and UTF-8 cannot: no file can hold it). The candidate's own
    failure (invalid_solution), never its row's: its siblings are graded as ever."""
    if not isinstance(code, str):
        return f"not a program: a JSON {JSON_TYPES.get(type(code), 'null')}, not a string"
    try:
        code.encode()
    except UnicodeEncodeError as exc:
        return f"its text is not valid Unicode (a lone surrogate at character {exc.start}): no file can hold it"
    return None


def stdout_limit(expected_bytes: int, output_limit: int) -> int:
    """How much standard output the harness reads of a program: twice the expected output plus
    the runner's output cap. A program that prints more is wrong (nothing it printed beyond
    could be compared), and the harness never compares a cut output."""
    return 2 * expected_bytes + output_limit


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """One run of a program on one test case: the runner's result (its output is what the
    program wrote to stderr), its whole standard output, and whether that ran over ``limit``;
    under an instruction counter, what the counter wrote (None: more than the runner kept)."""

    result: RunResult
    stdout: str
    overflowed: bool
    limit: int
    counted: str | None = None

    def for_log(self) -> RunResult:
        """The result with the head of stdout after stderr, for logs and failure messages."""
        head = self.stdout[:4000] + ("\n[... cut ...]" if len(self.stdout) > 4000 else "")
        return dataclasses.replace(self.result, output=f"{self.result.output}--- stdout (head) ---\n{head}")


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why a run does not count as correct."""

    outcome: Outcome
    reason: str
    accuracy: float = 0.0


def judge(run: ProgramRun, expected: str, max_time: float) -> Failure | None:
    """A run's verdict against the expected output: ran too long, printed too much, exited
    non-zero (whatever it printed: unlike PIE), or failed PIE's line rule."""
    if run.result.timed_out:
        return Failure(Outcome.TEST_TIMEOUT, f"ran past {max_time:g} s")
    if run.overflowed:
        return Failure(
            Outcome.WRONG_OUTPUT,
            f"printed more than {run.limit} bytes (the expected output has {len(expected.encode())}); not compared",
        )
    if run.result.exit_code != 0:
        return Failure(Outcome.RUNTIME_ERROR, f"exited {run.result.exit_code}")
    score, mismatch = accuracy(expected, run.stdout)
    if score < 1.0:
        return Failure(Outcome.WRONG_OUTPUT, f"accuracy {score:.2f}; first mismatch at {mismatch}", score)
    return None


def speed_verdict(figures: Mapping[str, Any], bar: float) -> tuple[Outcome, str]:
    """Whether a correct candidate is faster, from its measured figures (``speedup`` with
    ``ci_low``/``ci_high`` and ``metric``, ``trials_level`` where timed; ``net_speedup`` where
    start-up was measured, None when not meaningful): faster means a speedup of at least
    ``bar`` beyond noise, the low bound above 1 (a one-sided bound at ``trials_level``, valid
    however early the trials stopped; exact in instruction mode)."""
    speedup = float(figures["speedup"])
    level = figures.get("trials_level")
    bounds = f"; bounds {1 - float(level):.0%} each side" if level is not None else ""
    interval = bounds_text(figures["ci_low"], figures["ci_high"])
    reason = f"speedup {speedup:.3f}x {interval} ({figures['metric']}{bounds})"
    passed = speedup >= bar and float(figures["ci_low"]) > 1.0
    if not passed:
        reason += f": needs a speedup of at least {bar:g}x with its interval above 1.0x"
    if figures.get("trials_stop") == FUTILE:
        reason += (
            f"; its timing stopped after {figures['trials']} of at most {figures['trials_cap']} trials, "
            "once no trial to come could show it faster"
        )
    if "net_speedup" in figures:
        net = figures["net_speedup"]
        reason += (
            f"; net of start-up {net:.3f}x {bounds_text(figures['net_ci_low'], figures['net_ci_high'])}"
            if net is not None
            else "; net of start-up: not meaningful (a net time at or below the noise floor)"
        )
    return (Outcome.PASSED if passed else Outcome.NOT_FASTER), reason


def suspicion(figures: Mapping[str, Any], max_speedup: float) -> str | None:
    """Why a measured speedup is not to be believed (ComputeEval's bound); None when it is."""
    speedup = float(figures["speedup"])
    if speedup <= max_speedup:
        return None
    return f"speedup {speedup:.3g}x is above --codebench-max-speedup {max_speedup:g}x ({figures['metric']})"
