"""--codebench-skip-missing (NVIDIA's skip_missing): only the problems some solution set answers
are graded, and the terminal summary and the JSON report say how many were left out. Without
it, a problem with no solution stays a missing_solution failure."""

from __future__ import annotations

import json

import packs

FORCE = "--codebench-run-without-gpu"


def write(pytester, solutions: list[dict]) -> list[str]:
    problems = [packs.problem("T/1"), packs.problem("T/2"), packs.problem("T/3")]
    return packs.pack_args(pytester.path, problems, solutions)


def test_without_the_option_a_problem_with_no_solution_fails(pytester, codebench):
    run = codebench(*write(pytester, [packs.solution("T/1"), packs.solution("T/2")]), FORCE)
    assert run.outcome("T/3[0]") == "missing_solution"
    assert "skip-missing" not in run.output
    run.result.assert_outcomes(passed=2, failed=1)


def test_skip_missing_grades_only_the_answered_problems_and_says_how_many_were_left_out(pytester, codebench):
    report = pytester.path / "report.json"
    args = write(pytester, [packs.solution("T/1"), packs.solution("T/2")])
    run = codebench(*args, FORCE, "--codebench-skip-missing", "--codebench-report", str(report))
    assert sorted(run.items) == ["T/1[0]", "T/2[0]"]
    run.result.assert_outcomes(passed=2)
    selection = "2 of the dataset's 3 items, chosen by --codebench-skip-missing (1 problem no set answers)"
    run.result.stdout.fnmatch_lines(
        [
            f"selection: {selection}; the figures below are over them",
            "*all problems: pass@1 100.00% * (2 problems*",
            "skip-missing: 1 problem without a solution left out*",
        ]
    )
    data = json.loads(report.read_text())
    assert data["environment"]["skip_missing"] == {"problems_left_out": 1, "task_ids": ["T/3"], "items": 1}
    # The score is over a selection, recorded as such: compare and merge refuse it unless told.
    assert data["selection"] == {"items": 2, "of": 3, "by": ["--codebench-skip-missing (1 problem no set answers)"]}


def test_skip_missing_keeps_a_problem_another_solution_set_answers(pytester, codebench):
    # NVIDIA's rule: a problem is left out only when no set answers it; a set that left out a
    # problem another set answers still fails it.
    sets = pytester.path / "sets"
    sets.mkdir()
    packs.write_solutions(sets / "a-solutions.tar.gz", [packs.solution("T/1"), packs.solution("T/2")])
    packs.write_solutions(sets / "b-solutions.tar.gz", [packs.solution("T/1")])
    problems = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem(f"T/{i}") for i in (1, 2, 3)])
    args = ["--codebench-dataset", str(problems), "--codebench-solutions", str(sets)]
    run = codebench(*args, FORCE, "--codebench-skip-missing")
    outcomes = sorted(item["properties"]["category"] for item in run.items.values())
    assert outcomes == ["missing_solution", "passed", "passed", "passed"]
    assert not any("T/3" in name for name in run.items)
    run.result.stdout.fnmatch_lines(["skip-missing: 1 problem without a solution left out*"])
