"""Models compared with a test, not by eye: the paired rules on made-up pairs, a sweep's reports
carrying the comparison, and ``python -m pytest_codebench compare A.json B.json`` on two real
reports, refusing reports of different datasets or harnesses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import packs
import pytest

from conftest import Run
from pytest_codebench.benchmarks.pie.compared import compared_rows
from pytest_codebench.reports.model_tests import compare, comparison_lines
from pytest_codebench.stats.paired import (
    A_AHEAD,
    B_AHEAD,
    MCNEMAR,
    NO_DIFFERENCE,
    SIGN_FLIP,
    mcnemar_exact,
    pass_difference,
    speedup_ratio,
)

TASKS = [f"T/{n}" for n in range(8)]

# -- the rules, on made-up pairs ----------------------------------------------------------------


def test_mcnemars_exact_p_is_the_binomial_tail_of_the_discordant_pairs_doubled() -> None:
    # 8 problems only A passed, 2 only B: 2 * P(X <= 2), X ~ Binomial(10, 1/2) = 2 * 56 / 1024.
    assert mcnemar_exact(8, 2) == pytest.approx(112 / 1024)
    assert mcnemar_exact(2, 8) == pytest.approx(112 / 1024)
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0


def test_a_clear_winner_reads_a_ahead_and_the_other_way_b_ahead() -> None:
    # One sample a problem: A passes 12 problems B fails, and both pass 8.
    pairs = [(1.0, 0.0)] * 12 + [(1.0, 1.0)] * 8
    won = pass_difference(pairs, one_sample=True)
    assert (won.reading, won.method, won.problems) == (A_AHEAD, MCNEMAR, 20)
    assert won.estimate == pytest.approx(0.6) and won.p_value == pytest.approx(2 / 2**12)
    assert won.low is not None and won.high is not None and 0 < won.low <= 0.6 <= won.high
    lost = pass_difference([(b, a) for a, b in pairs], one_sample=True)
    assert lost.reading == B_AHEAD and lost.estimate == pytest.approx(-0.6)
    # Several samples a problem: the sign-flip test reads it.
    shares = [(0.8, 0.2)] * 10 + [(0.5, 0.5)] * 5
    assert (pass_difference(shares, one_sample=False).reading, pass_difference(shares, False).method) == (
        A_AHEAD,
        SIGN_FLIP,
    )
    faster = speedup_ratio([(2.0 * n, 1.0 * n) for n in range(1, 11)])
    assert faster.reading == A_AHEAD and faster.estimate == pytest.approx(2.0) and faster.low == pytest.approx(2.0)


def test_identical_models_and_a_small_edge_show_no_difference() -> None:
    same = pass_difference([(1.0, 1.0), (0.0, 0.0), (0.5, 0.5)] * 5, one_sample=False)
    assert (same.reading, same.estimate, same.low, same.high, same.p_value) == (NO_DIFFERENCE, 0.0, 0.0, 0.0, 1.0)
    # 3 problems only A passed, 1 only B: p = 0.625.
    edge = pass_difference([(1.0, 0.0)] * 3 + [(0.0, 1.0)] + [(1.0, 1.0)] * 6, one_sample=True)
    assert edge.reading == NO_DIFFERENCE and edge.p_value == pytest.approx(0.625)
    assert speedup_ratio([(1.0, 1.0), (2.0, 2.0), (1.5, 1.5)]).reading == NO_DIFFERENCE
    # One problem: no interval, and nothing shown.
    lone = pass_difference([(1.0, 0.0)], one_sample=True)
    assert (lone.low, lone.high, lone.reading) == (None, None, NO_DIFFERENCE)


def test_the_interval_is_reproducible() -> None:
    pairs = [(n % 3 / 2, n % 2 / 1) for n in range(30)]
    assert pass_difference(pairs, False) == pass_difference(pairs, False)


# -- a sweep's reports --------------------------------------------------------------------------


def _problems(folder: Path, tasks: list[str]) -> list[str]:
    packs.write_problems(folder / "p-problems.tar.gz", [packs.problem(task, min_cuda_toolkit=None) for task in tasks])
    return ["--codebench-dataset", "p-problems.tar.gz", "--codebench-run-without-gpu"]


def test_a_sweeps_reports_compare_each_pair_of_models(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = _problems(pytester.path, TASKS)
    sets = pytester.path / "sets"
    sets.mkdir()
    packs.write_solutions(sets / "good-solutions.tar.gz", [packs.solution(task) for task in TASKS])
    mixed = [packs.solution(task, code) for task in TASKS[:-1] for code in (packs.RIGHT, packs.WRONG)]
    packs.write_solutions(sets / "mixed-solutions.tar.gz", mixed)
    run = codebench(*args, "--codebench-solutions", str(sets), "--codebench-report", "r.json",
                    "--codebench-markdown", "r.md")  # fmt: skip
    run.result.assert_outcomes(passed=15, failed=8)
    (comparison,) = json.loads((pytester.path / "r.json").read_text())["comparisons"]
    assert (comparison["a"], comparison["b"]) == ("good", "mixed")
    # good passes all 8; mixed half of T/0..T/6 and none of T/7 (unanswered): +56.25 points.
    figure = comparison["differences"]["pass@1"]
    assert figure["estimate"] == pytest.approx(4.5 / 8) and figure["problems"] == 8
    assert (figure["reading"], figure["method"]) == (A_AHEAD, SIGN_FLIP)
    assert figure["low"] <= figure["estimate"] <= figure["high"] and figure["p_value"] < 0.05
    assert comparison["speedup_ratio"] is None  # no perf run: no speedups
    markdown = (pytester.path / "r.md").read_text()
    assert "#### Models compared" in markdown
    assert "| good | mixed | +56.2 points [" in markdown and "]: A > B | no problem with both speedups |" in markdown
    run.result.stdout.fnmatch_lines(["good vs mixed: pass@1 +56.2 points [[]*]: A > B; *sign-flip test, 8 problems))"])


# -- compare A.json B.json ----------------------------------------------------------------------


def compare_command(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_codebench", "compare", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_compare_reads_two_reports_and_refuses_other_datasets_or_harnesses(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    args = _problems(pytester.path, TASKS)
    right = packs.write_solutions(pytester.path / "right-solutions.tar.gz", [packs.solution(task) for task in TASKS])
    answers = [packs.solution(task, packs.RIGHT if n < 2 else packs.WRONG) for n, task in enumerate(TASKS)]
    wrong = packs.write_solutions(pytester.path / "wrong-solutions.tar.gz", answers)
    for name, solutions in (("a", right), ("b", wrong)):
        codebench(*args, "--codebench-solutions", str(solutions), "--codebench-report", f"{name}.json")
    a, b = pytester.path / "a.json", pytester.path / "b.json"

    done = compare_command(a, b, "--markdown", pytester.path / "c.md", "--json", pytester.path / "c.json")
    assert done.returncode == 0, done.stderr
    # 6 problems only a passed, none only b: exact McNemar p = 2 / 64.
    assert done.stdout.startswith("a vs b: pass@1 +75.0 points [")
    assert "]: A > B; geomean speedup ratio no problem with both speedups" in done.stdout
    assert "(p=0.0312 (paired bootstrap interval, exact McNemar test, 8 problems))" in done.stdout
    (figure,) = json.loads((pytester.path / "c.json").read_text())["comparisons"]
    assert figure["differences"]["pass@1"]["reading"] == A_AHEAD
    assert figure["differences"]["pass@1"]["method"] == MCNEMAR
    assert "| a | b | +75.0 points [" in (pytester.path / "c.md").read_text()
    assert compare_command(b, a).stdout.startswith("b vs a: pass@1 -75.0 points [")

    # A report of another harness version, and one of another dataset, are refused, saying why.
    other = json.loads(a.read_text())
    other["harness_version"] = "0.0.1+000000000000"
    (pytester.path / "old.json").write_text(json.dumps(other))
    done = compare_command(a, pytester.path / "old.json")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"compare: error: not comparable: {a} and {pytester.path / 'old.json'} have different harness versions "
        f"({json.loads(a.read_text())['harness_version']} and 0.0.1+000000000000)"
    ]
    (pytester.path / "other").mkdir()
    args = _problems(pytester.path / "other", TASKS[:2])
    codebench("--codebench-dataset", "other/p-problems.tar.gz", *args[2:], "--codebench-solutions", str(right),
              "--codebench-report", "c2.json")  # fmt: skip
    done = compare_command(a, pytester.path / "c2.json")
    assert done.returncode == 1
    assert "different dataset sha256s" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def pie_item(row: str, outcome: str, speedup: float | None = None) -> dict[str, Any]:
    figures = {} if speedup is None else {"speedup": speedup}
    status = "passed" if outcome == "passed" else "failed"
    return {"task_id": row, "sample": 0, "outcome": outcome, "status": status, "excused": False, "figures": figures}


def test_pie_models_are_compared_on_pies_own_figures() -> None:
    """A correct on 2 of 8 rows, both at 2x; B correct on all 8 at about 1.02x, which passes the
    default --codebench-min-speedup of 1.0. By the share of candidates that passed, B is ahead;
    by PIE's figures B is ahead on %Correct and A on %Optimized(1.10), and the comparison says both."""
    rows = [f"p{n}/s{n}" for n in range(8)]
    a: Any = [pie_item(row, "passed", 2.0) if n < 2 else pie_item(row, "wrong_output") for n, row in enumerate(rows)]
    b: Any = [pie_item(row, "passed", 1.02) for row in rows]
    found = compare("a", "b", compared_rows(a), compared_rows(b))
    correct, optimized = found["differences"]["%Correct@1"], found["differences"]["%Optimized(1.10)@1"]
    assert correct is not None and optimized is not None
    assert (correct["estimate"], correct["reading"]) == (-0.75, B_AHEAD)
    assert optimized["estimate"] == 0.25 and optimized["method"] == MCNEMAR
    assert list(found["differences"]) == ["%Correct@1", "%Optimized(1.10)@1"]  # no pass@1: no PIE figure
    assert found["speedup_ratio"] is not None and found["speedup_ratio"]["problems"] == 8  # 1.0 for a wrong row, as PIE
    line = comparison_lines([found])[0]
    assert line.startswith("a vs b: %Correct@1 -75.0 points [") and "; %Optimized(1.10)@1 +25.0 points [" in line
