"""One record, every output: each scenario that once gave different numbers in different places
(issue 35) runs once with every output asked for, and the terminal's gate, the JSON report,
JUnit's suite properties, the markdown and the page's data must say the same of each model:
the same score (or the same reason there is none), and the same caveats of what the figures
are over (a selection, an interruption)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import packs
import perf_packs
import pytest
from test_computeeval_specs import problem as spec_problem
from test_computeeval_specs import spec
from test_html_data import read_data
from test_interrupted import CTRL_C
from test_pie import CRASH, FAST, HANG, SLOW, write_pie

from conftest import Run, junit_suite
from pytest_codebench.reports.gate import CANNOT_JUDGE

FORCE = "--codebench-run-without-gpu"
OUTPUTS = ("--codebench-report", "r.json", "--codebench-markdown", "r.md", "--codebench-html", "page")
GATE = ("--codebench-fail-under", "0")


class Said(NamedTuple):
    """What one output says of one model: its score to two places, or None and the reason."""

    score: str | None
    no_score: str | None


def from_json(report: dict[str, Any]) -> dict[str, Said]:
    models = report["models"] or {"": report}
    return {
        name: Said(None if model["score"] is None else f"{model['score']:.2f}", model["no_score"])
        for name, model in models.items()
    }


def from_junit(suite: dict[str, str], models: list[str]) -> dict[str, Said]:
    return {
        name: Said(
            suite.get(f"{name}/score" if name else "score"), suite.get(f"{name}/no_score" if name else "no_score")
        )
        for name in models
    }


def from_page(overview: dict[str, Any]) -> dict[str, Said]:
    found = {}
    for row in overview["leaderboard"]:
        (score,) = [metric for metric in row["metrics"] if metric["name"] == "score"]
        found[row["model"]] = Said(None if score["value"] is None else f"{score['value']:.2f}", row["no_score"])
    return found


def from_terminal(output: str, models: list[str]) -> dict[str, Said]:
    """The gate's lines (``fail-under 0% (MODEL): score 12.50%, met``), and the reason it cannot judge."""
    found = {}
    for name in models:
        whose = f" \\({re.escape(name)}\\)" if name else ""
        match = re.search(rf"^fail-under 0%{whose}: score (n/a|[\d.]+%)", output, re.MULTILINE)
        assert match, f"no gate line for {name!r}"
        reason = re.search(
            rf"cannot judge here \(exit status {CANNOT_JUDGE}\): .*?{re.escape(name + ': ' if name else '')}([^;\n]+)",
            output,
        )
        score = None if match[1] == "n/a" else match[1].rstrip("%")
        found[name] = Said(score, reason[1] if reason and score is None else None)
    return found


def outputs_agree(run: Run, path: Path) -> dict[str, Any]:
    """Asserts that every output says the same of every model and of the run's scope; returns the JSON report."""
    report = json.loads((path / "r.json").read_text())
    models = list(report["models"]) or [""]
    _, overview = read_data(path / "page" / "data" / "overview.js")
    said = {
        "json": from_json(report),
        "junit": from_junit(junit_suite(path / "junit.xml"), models),
        "page": from_page(overview),
        "terminal": from_terminal(run.output, models),
    }
    assert all(each == said["json"] for each in said.values()), said
    markdown = (path / "r.md").read_text()
    for name, (score, _) in said["json"].items():
        # The model's row of the table (the comparisons below it start with a model's name too).
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {name or report['model'] or 'all'} |"))
        assert score is None or f"{score}%" in row or report["benchmark"] == "pie", (name, row)
    # The scope: the same lines first in the terminal, in the markdown and in the page; JUnit's
    # properties name the same counts.
    scope = overview["run"]["scope"]
    assert [line for line in run.output.splitlines() if line.startswith(("interrupted:", "selection:"))] == scope
    assert [
        line.strip("*") for line in markdown.splitlines() if line.startswith(("**interrupted:", "**selection:"))
    ] == scope
    suite = junit_suite(path / "junit.xml")
    assert bool(report["interrupted"]) == ("interrupted" in suite) and bool(report["selection"]) == (
        "selection" in suite
    )
    return report


def run_computeeval(pytester: pytest.Pytester, codebench: Any, args: list[str], *extra: str) -> Run:
    return codebench(*args, *OUTPUTS, *GATE, *extra)


def test_no_gpu_no_score_anywhere_and_the_gate_cannot_judge(pytester, codebench):
    problems = [packs.problem("T/1"), packs.problem("T/2")]
    solutions = [packs.solution("T/1"), packs.solution("T/2", "this is not C")]
    run = run_computeeval(pytester, codebench, packs.pack_args(pytester.path, problems, solutions))
    report = outputs_agree(run, pytester.path)
    assert report["score"] is None and "no usable CUDA GPU" in report["no_score"]
    assert run.result.ret == CANNOT_JUDGE


def test_every_item_excused_no_score_anywhere_and_the_gate_cannot_judge(pytester, codebench):
    problems = [packs.problem("T/1"), packs.problem("T/2")]
    run = run_computeeval(
        pytester, codebench, packs.pack_args(pytester.path, problems, [packs.solution("T/1"), packs.solution("T/2")])
    )
    report = outputs_agree(run, pytester.path)
    assert report["no_score"] == "this machine could grade no item here: no usable CUDA GPU"
    assert run.result.ret == CANNOT_JUDGE


def test_a_k_subset_is_said_to_be_one_everywhere(pytester, codebench):
    problems = [packs.problem(f"T/{i}") for i in (1, 2, 3)]
    solutions = [packs.solution("T/1"), packs.solution("T/2", packs.WRONG), packs.solution("T/3")]
    run = run_computeeval(
        pytester, codebench, packs.pack_args(pytester.path, problems, solutions), FORCE, "-k", "T/1 or T/2"
    )
    report = outputs_agree(run, pytester.path)
    assert report["selection"] == {"items": 2, "of": 3, "by": ["-k 'T/1 or T/2'"]} and report["score"] == 50.0
    assert "fail-under judged over a selection: 2 of the dataset's 3 items, chosen by -k 'T/1 or T/2'" in run.output


def test_an_interrupted_run_is_said_to_be_one_everywhere(pytester):
    # Serial alone: Ctrl-C is played by a conftest hook in pytest's own loop (test_interrupted.py).
    pytester.makeconftest(CTRL_C)
    problems = [packs.problem(f"T/{i}") for i in (1, 2, 3)]
    dataset = packs.pack_args(pytester.path, problems, [packs.solution(f"T/{i}") for i in (1, 2, 3)])
    junit = f"--junitxml={pytester.path / 'junit.xml'}"
    result = pytester.runpytest_subprocess("--codebench=computeeval", junit, *dataset, *OUTPUTS, *GATE, FORCE)
    run = Run(result, {})
    report = outputs_agree(run, pytester.path)
    assert report["interrupted"]["items"] == 3 and len(report["interrupted"]["not_reached"]) == 2


def test_a_two_model_sweep_gives_each_model_its_own_score_everywhere(pytester, codebench):
    sets = pytester.path / "sets"
    sets.mkdir()
    packs.write_solutions(sets / "a-solutions.tar.gz", [packs.solution("T/1"), packs.solution("T/2")])
    packs.write_solutions(sets / "b-solutions.tar.gz", [packs.solution("T/1"), packs.solution("T/2", packs.WRONG)])
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem("T/1"), packs.problem("T/2")])
    run = run_computeeval(
        pytester, codebench, ["--codebench-dataset", str(dataset), "--codebench-solutions", str(sets)], FORCE
    )
    report = outputs_agree(run, pytester.path)
    assert {name: model["score"] for name, model in report["models"].items()} == {"a": 100.0, "b": 50.0}


def test_a_spec_tree_with_defects_says_them_as_the_datasets(pytester, codebench):
    root = pytester.path / "problems"
    spec_problem(root, "T/right")
    spec_problem(root, "T/typo", text=spec("T/typo") + "timout_seconds: 5\n")
    spec_problem(root, "T/date", text=spec("T/date").replace('"2026-11-26"', "2026-11-26"))
    run = run_computeeval(pytester, codebench, ["--codebench-solutions", "baseline", "problems"], FORCE)
    report = outputs_agree(run, pytester.path)
    assert report["score"] == 100.0 and report["metrics"]["defects"] == ["T/date", "T/typo"]
    # The gate fails on them as the dataset's, not as harness errors.
    assert "fail-under 0%: score 100.00%, NOT met: a dataset defect (below)" in run.output
    assert "2 item(s) ended in a dataset defect (T/date[0], T/typo[0]); --codebench-allow-errors" in run.output
    assert "field 'date': expected a string, got datetime.date(2026, 11, 26) (quote it) [T/date]" in run.output
    assert "(did you mean 'timeout_seconds'?) [T/typo]" in run.output


def test_a_broken_pie_model_has_pies_optimized_as_its_score_everywhere(pytester, pie):
    references = [
        {"problem_id": f"p{i}", "submission_id_v0": f"s{i}", "language": "python", "input": SLOW + f"#{i}\n"}
        for i in (1, 2, 3)
    ]
    rows = [{"input": SLOW + f"#{i}\n", "generated_answers": [code]} for i, code in ((1, HANG), (2, CRASH), (3, FAST))]
    # FAST against SLOW can pass the 10x plausibility bound on a quiet machine, and would then
    # count as 1.0x: the bound is not what this test is about.
    run = pie(write_pie(pytester.path, rows, references), *OUTPUTS, *GATE, "--codebench-max-speedup", "1000")
    report = outputs_agree(run, pytester.path)
    assert report["score"] == pytest.approx(100 / 3)


def test_a_single_model_keeps_its_files_name_everywhere(pytester, codebench):
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem("T/1"), packs.problem("T/2")])
    answers = [packs.solution("T/1"), packs.solution("T/2", packs.WRONG)]
    solutions = packs.write_solutions(pytester.path / "gpt-5-solutions.tar.gz", answers)
    run = run_computeeval(
        pytester, codebench, ["--codebench-dataset", str(dataset), "--codebench-solutions", str(solutions)], FORCE
    )
    report = outputs_agree(run, pytester.path)
    assert report["model"] == "gpt-5" and report["models"] == {}  # the items keep their ids
    assert "| gpt-5 | 50.00%" in (pytester.path / "r.md").read_text()
    _, overview = read_data(pytester.path / "page" / "data" / "overview.js")
    assert overview["run"]["model"] == "gpt-5"


# A reference whose work sleeps 50-450 ms at random: timed against itself, it spreads far too
# wide, and this machine cannot time its problem (the calibration says so).
RANDOM = (
    '#include <time.h>\n#include <stdlib.h>\n#include "work.h"\n'
    "static void nap(long ms) { struct timespec t = {ms / 1000, (ms % 1000) * 1000000L}; nanosleep(&t, 0); }\n"
    "void work(void) { struct timespec n; clock_gettime(CLOCK_MONOTONIC, &n); srand(n.tv_nsec);"
    " nap(50 + rand() % 400); }\n"
    "void done(void) { }\n"
)


def test_perf_with_a_problem_this_machine_cannot_time_gives_one_fast_p_everywhere(pytester, codebench):
    problems = [perf_packs.problem(f"P/{i}", baseline_solution=perf_packs.solution(f"P/{i}", RANDOM)) for i in (1, 2)]
    # P/1's sample is timed (and cannot be, here); P/2's is the reference's own code (never timed, exactly 1x).
    solutions = [perf_packs.solution("P/1", perf_packs.sleeper(100)), perf_packs.solution("P/2", RANDOM)]
    args = perf_packs.write(pytester, problems, solutions)
    run = codebench(
        *args,
        FORCE,
        "--codebench-perf",
        "--codebench-perf-trials",
        "8",
        *OUTPUTS,
        "--codebench-fail-under",
        "0,fast_1.0=0",
    )
    report = outputs_agree(run, pytester.path)
    assert list(report["metrics"]["perf"]["calibration"]["untimeable"]) == ["P/1"]
    best = report["metrics"]["perf"]["best_at_k"]["1"]
    assert best["problems"] == 1  # P/1 is out of every aggregate
    fast = report["scores"]["fast_1.0"]
    assert junit_suite(pytester.path / "junit.xml")["fast_1.0"] == f"{fast:.2f}"
    _, overview = read_data(pytester.path / "page" / "data" / "overview.js")
    (row,) = overview["leaderboard"]
    assert {metric["name"]: metric["value"] for metric in row["metrics"]}["fast_1.0"] == fast
    assert f"fail-under fast_1.0=0%: fast_1.0 {fast:.2f}%, met" in run.output
    assert "(of 1 problem)" in run.output and "cannot time here: P/1" in run.output
