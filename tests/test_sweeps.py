"""Sweeps: several solution sets (models) in one run, each item's id naming its set, one row per
model in the terminal, the JSON report and the markdown report; and a model's code never sees
another model's answers."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import packs
import pytest
from tensorbench_data import SAMPLE
from test_pie import FAST, SLOW, WRONG, write_pie

from conftest import Run, no_sandbox
from pytest_codebench.benchmarks.computeeval.benchmark import ComputeEval
from pytest_codebench.benchmarks.tensorbench import TensorBench
from pytest_codebench.context import RunContext
from pytest_codebench.options import DATASET, SOLUTIONS, Settings
from pytest_codebench.reports.comparison import ModelSummary, model_summaries, text_table
from pytest_codebench.reports.markdown import render
from pytest_codebench.reports.reporting import Summary, crash_result
from pytest_codebench.runners.local import sandbox_state
from pytest_codebench.sweeps.solution_sets import (
    SolutionSet,
    SolutionSpec,
    find_sets,
    model_id,
    parse_solutions,
    split_id,
)

TASKS = ["T/0", "T/1", "T/2"]
SUFFIXES = ("-solutions.tar.gz",)


# -- naming the sets (pure rules, on made-up folders) -------------------------------------------


def test_one_set_given_by_path_is_unnamed_and_several_are_named_by_their_files(tmp_path: Path) -> None:
    assert find_sets([], SUFFIXES) == [SolutionSet(None, None)]
    assert find_sets(parse_solutions("baseline"), SUFFIXES) == [SolutionSet(None, "baseline")]
    a, b = tmp_path / "gpt-5-solutions.tar.gz", tmp_path / "claude.jsonl"
    assert find_sets(parse_solutions(f"{a}, {b}"), SUFFIXES) == [
        SolutionSet("gpt-5", str(a)),
        SolutionSet("claude", str(b)),
    ]
    # NAME=PATH names a set by hand, even the only one.
    assert find_sets(parse_solutions(f"mine={a}"), SUFFIXES) == [SolutionSet("mine", str(a))]


def test_a_directory_holds_one_set_per_file_named_as_nvidias_harness_names_them(tmp_path: Path) -> None:
    for name in ("b-solutions.tar.gz", "a-solutions.tar.gz", "notes.txt", "-solutions.tar.gz"):
        (tmp_path / name).write_text("")
    assert find_sets([SolutionSpec(str(tmp_path))], SUFFIXES) == [
        SolutionSet("a", str(tmp_path / "a-solutions.tar.gz")),
        SolutionSet("b", str(tmp_path / "b-solutions.tar.gz")),
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"empty: a directory of solution sets, but it holds no \*-solutions.tar.gz"):
        find_sets([SolutionSpec(str(empty))], SUFFIXES)


def test_two_sets_of_one_name_are_refused_naming_both_paths(tmp_path: Path) -> None:
    one, two = tmp_path / "x" / "m-solutions.tar.gz", tmp_path / "y" / "m.jsonl"
    with pytest.raises(ValueError, match=f"two solution sets are named m: {one} and {two}"):
        find_sets(parse_solutions(f"{one},{two}"), SUFFIXES)
    # Named apart by hand, they are two sets.
    assert [s.name for s in find_sets(parse_solutions(f"{one},n={two}"), SUFFIXES)] == ["m", "n"]


@pytest.mark.parametrize("text", ["a b=x.jsonl", "x[1]=y.jsonl", "=y.jsonl", ",", ""])
def test_a_name_that_would_break_item_ids_or_an_empty_list_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_solutions(text)


def test_a_file_name_that_cannot_name_a_set_asks_for_one(tmp_path: Path) -> None:
    odd = tmp_path / "my model.jsonl"
    with pytest.raises(ValueError, match=r"cannot name a solution set .*give NAME="):
        find_sets([SolutionSpec(str(odd)), SolutionSpec("b.jsonl")], SUFFIXES)


def test_an_items_id_carries_its_sets_name_and_reads_back() -> None:
    assert model_id("CUDA/3[0]", "gpt-5") == "CUDA/3[gpt-5:0]"
    assert model_id("problems.jsonl:4", "gpt-5") == "problems.jsonl:4[gpt-5]"
    assert split_id("CUDA/3[gpt-5:12]") == ("CUDA/3", "gpt-5", "12")
    assert split_id("CUDA/3[12]") == ("CUDA/3", None, "12")
    assert split_id("CUDA/3") == ("CUDA/3", None, "")


def test_an_item_whose_worker_crashed_stays_in_its_models_row() -> None:
    result = crash_result("computeeval/p::CUDA/3[gpt-5:2]")
    assert (result["task_id"], result["model"], result["sample"], result["outcome"]) == ("CUDA/3", "gpt-5", 2, "error")
    assert model_summaries(lambda results: Summary([], {}, len(results)), [result]) == {
        "gpt-5": ModelSummary(Summary([], {}, 1), {"error": 1})
    }


def test_a_perf_runs_row_has_its_fast_p_and_geomean_beside_pass_at_k(
    pytestconfig: pytest.Config, tmp_path: Path
) -> None:
    perf = {"best_at_k": {"1": {"geomean": 1.23456, "fast_p": {}}}}
    metrics = {"pass@k": {"1": 0.5}, "not_computed": {"5": "too few"}, "groups": {"g": {"pass@k": {"1": 1.0}}}}
    summary = Summary([], {**metrics, "perf": perf}, 50.0, {"fast_1.0": 25.0})
    benchmark = ComputeEval(RunContext.create(pytestconfig, Settings({}), run_dir=tmp_path))
    assert benchmark.columns(summary) == {
        "pass@1": "50.00%",
        "pass@5": "n/a",
        "g pass@1": "100.00%",
        "fast_1.0": "25.00%",
        "perf geomean@1": "1.235x",
    }


def test_rows_show_every_column_once_and_a_dash_where_a_model_has_none() -> None:
    rows = [{"model": "a", "pass@1": "50.00%"}, {"model": "bb", "fast_1.0": "10.00%"}]
    assert text_table(rows) == [
        "model  pass@1  fast_1.0",
        "a      50.00%  –",
        "bb     –       10.00%",
    ]
    text = render("codebench: x on y|z", rows, {"a": ["line with ``` fence"]})
    assert "| model | pass@1 | fast_1.0 |\n| --- | ---: | ---: |\n| a | 50.00% | – |\n" in text
    assert "### codebench: x on y\\|z" in text  # a | would end a cell
    assert "````text\nline with ``` fence\n````" in text  # a fence longer than any in the text


# -- ComputeEval: a sweep through the plugin ----------------------------------------------------


def _sets(folder: Path) -> Path:
    """Three tasks; ``good`` answers all of them right, ``half`` answers two with two samples
    each (one right, one wrong) and leaves T/2 unanswered."""
    problems = [packs.problem(task, min_cuda_toolkit=None, group="g1" if task == "T/0" else "g2") for task in TASKS]
    packs.write_problems(folder / "p-problems.tar.gz", problems)
    sets = folder / "sets"
    sets.mkdir()
    packs.write_solutions(sets / "good-solutions.tar.gz", [packs.solution(task) for task in TASKS])
    half = [packs.solution(task, code) for task in TASKS[:2] for code in (packs.RIGHT, packs.WRONG)]
    packs.write_solutions(sets / "half-solutions.tar.gz", half)
    return sets


@pytest.fixture
def step_summary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GitHub's job summary file, as a runner on GitHub Actions names it."""
    path = tmp_path / "step-summary.md"
    path.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    return path


def test_a_directory_of_sets_grades_each_model_and_reports_a_row_each(
    pytester: pytest.Pytester, codebench: Callable[..., Run], step_summary: Path
) -> None:
    sets = _sets(pytester.path)
    run = codebench(
        "--codebench-dataset",
        "p-problems.tar.gz",
        "--codebench-solutions",
        str(sets),
        "--codebench-run-without-gpu",
        "--codebench-report",
        "report.json",
        "--codebench-markdown",
        "out/report.md",
    )
    assert {name: item["properties"]["category"] for name, item in run.items.items()} == {
        "T/0[good:0]": "passed",
        "T/1[good:0]": "passed",
        "T/2[good:0]": "passed",
        "T/0[half:0]": "passed",
        "T/0[half:1]": "test_failed",
        "T/1[half:0]": "passed",
        "T/1[half:1]": "test_failed",
        "T/2[half:0]": "missing_solution",
    }
    assert run.items["T/1[half:1]"]["properties"]["model"] == "half"
    run.result.stdout.fnmatch_lines(
        [
            "per model:",
            "  model  pass@1 * g1 pass@1 * g2 pass@1 * items  passed",
            "  good   100.00% [[]100.00, 100.00]  100.00% * 3      3",
            "  half   33.33% [[]0.00, 50.00] * 50.00% * 25.00% [[]0.00, 50.00] * 5      2",
            "markdown: out/report.md",
        ]
    )
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["harness_version"].startswith("0.")
    models = report["models"]
    assert sorted(models) == ["good", "half"]
    assert models["half"]["score"] == pytest.approx(100 / 3)
    assert models["half"]["metrics"]["missing"] == ["T/2"]
    assert models["half"]["counts"] == {"passed": 2, "test_failed": 2, "missing_solution": 1}
    assert models["good"]["counts"] == {"passed": 3}
    assert {item["model"] for item in report["items"]} == {"good", "half"}
    markdown = (pytester.path / "out" / "report.md").read_text()
    assert "| model | pass@1 | g1 pass@1 | g2 pass@1 | items | passed |" in markdown
    assert "| half | 33.33% [0.00, 50.00] | 50.00% | 25.00% [0.00, 50.00] | 5 | 2 |" in markdown
    assert "<details><summary>half</summary>" in markdown and "counted as failed, no solution given: 1: T/2" in markdown
    # Appended to the job summary, after what earlier steps wrote.
    assert step_summary.read_text() == "# earlier step\n" + markdown + "\n"


def test_one_set_keeps_its_ids_and_reports_no_models(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    sets = _sets(pytester.path)
    run = codebench(
        "--codebench-dataset",
        "p-problems.tar.gz",
        "--codebench-solutions",
        str(sets / "good-solutions.tar.gz"),
        "--codebench-run-without-gpu",
        "--codebench-report",
        "report.json",
        "--codebench-markdown",
        "report.md",
    )
    assert sorted(run.items) == ["T/0[0]", "T/1[0]", "T/2[0]"]
    assert "model" not in run.items["T/0[0]"]["properties"]
    assert "per model:" not in run.output
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["models"] == {} and {item["model"] for item in report["items"]} == {None}
    assert report["model"] == "good"  # named by its file, as a sweep names each set
    # The markdown report has the one row of the whole run, under the model's name.
    # g1 has one problem: no interval.
    row = "| good | 100.00% [100.00, 100.00] | 100.00% | 100.00% [100.00, 100.00] | 3 | 3 |"
    assert row in (pytester.path / "report.md").read_text()


def test_sets_named_by_hand_and_one_name_twice(pytester: pytest.Pytester, codebench: Callable[..., Run]) -> None:
    sets = _sets(pytester.path)
    good, half = sets / "good-solutions.tar.gz", sets / "half-solutions.tar.gz"
    run = codebench("--codebench-dataset", "p-problems.tar.gz", f"--codebench-solutions=a={good},b={half}", "-k", "T/0")
    assert sorted(run.items) == ["T/0[a:0]", "T/0[b:0]", "T/0[b:1]"]
    clash = codebench("--codebench-dataset", "p-problems.tar.gz", f"--codebench-solutions=m={good},m={half}")
    assert clash.result.ret == pytest.ExitCode.USAGE_ERROR
    clash.result.stderr.fnmatch_lines([f"*--codebench-solutions: two solution sets are named m: {good} and {half}*"])


@pytest.fixture
def bound_folder() -> Iterator[Path]:
    """A folder inside one the sandbox binds (the Python commands run on): where a user's
    answers may well lie (beside a package, in a venv), and where only masking hides them."""
    try:
        folder = Path(tempfile.mkdtemp(dir=sys.prefix, prefix="codebench-sets-"))
    except OSError as exc:
        pytest.skip(f"cannot write under {sys.prefix}: {exc}")
    folder.chmod(0o755)  # commands run as nobody: readable by all, as a venv's folders are
    yield folder
    shutil.rmtree(folder)


def test_one_models_code_cannot_read_another_models_answers(
    pytester: pytest.Pytester, codebench: Callable[..., Run], bound_folder: Path
) -> None:
    """A model that could read another set's file could copy its answers: every set's path is
    hidden from the code graded, as the dataset is. The honest model still passes."""
    sets = _sets(bound_folder)
    if sandbox_state(Settings({})).plan is None:
        no_sandbox("hiding the solution sets needs the bwrap sandbox here")
    other = sets / "good-solutions.tar.gz"
    # Right only where the other model's file can be opened.
    thief = (
        '#include <stdio.h>\n#include "add.h"\n'
        f'int add(int a, int b) {{ FILE *f = fopen("{other}", "rb"); if (!f) return a - b; fclose(f); '
        "return a + b; }\n"
    )
    mine = packs.write_solutions(sets / "thief-solutions.tar.gz", [packs.solution(task, thief) for task in TASKS])
    dataset = str(bound_folder / "p-problems.tar.gz")
    # Each file named apart (not their folder): each must be hidden, not only the first.
    given = f"--codebench-solutions={mine},{other}"
    run = codebench("--codebench-dataset", dataset, given, "--codebench-run-without-gpu")
    outcomes = {name: item["properties"]["category"] for name, item in run.items.items()}
    assert [outcomes[f"{task}[thief:0]"] for task in TASKS] == ["test_failed"] * 3
    assert [outcomes[f"{task}[good:0]"] for task in TASKS] == ["passed"] * 3


# -- PIE and TensorBench: several prediction files ----------------------------------------------


def test_pie_grades_one_generations_file_per_model(pytester: pytest.Pytester, codebench: Callable[..., Run]) -> None:
    config = write_pie(
        pytester.path, [{"input": SLOW, "generated_answers": [FAST]}], sizes=(2000,), num_trials=5, ignore_first_k=0
    )
    models = pytester.path / "models"
    models.mkdir()
    for name, answer in (("fast", FAST), ("wrong", WRONG)):
        (models / f"{name}.jsonl").write_text(json.dumps({"input": SLOW, "generated_answers": [answer]}) + "\n")
    run = codebench(
        "--codebench-config", str(config), "--codebench-solutions", str(models), "--codebench-report", "r.json",
        benchmark="pie",
    )  # fmt: skip
    outcomes = {name: item["properties"]["category"] for name, item in run.items.items()}
    assert sorted(outcomes) == ["p1/s1[fast:0]", "p1/s1[wrong:0]"]
    # Whether it beat the slow program on so small an input is the timer's to say; right it is.
    assert outcomes["p1/s1[fast:0]"] in ("passed", "not_faster")
    assert outcomes["p1/s1[wrong:0]"] == "wrong_output"
    run.result.stdout.fnmatch_lines(
        ["per model:", "  model *%Correct@1*mean speedup@1*", "  fast   100.00%*", "  wrong  0.00%*1.000x*"]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["dataset"]["path"] == str(config)  # the problems: the config names them
    assert report["models"]["wrong"]["metrics"]["best@1"]["correct"] == 0.0
    # PIE's own report: one per model, each row of that model's generations alone.
    for name, acc in (("fast", 1.0), ("wrong", 0.0)):
        (row,) = [
            json.loads(line) for line in (pytester.path / "out" / f"report.{name}.jsonl").read_text().splitlines()
        ]
        assert row["generated_answers_0_acc"] == acc


def test_pie_scores_every_model_on_every_row_of_the_sweep(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    # A model whose generations leave out a row once scored 100% on the rows it kept.
    slow = {"p1": SLOW, "p2": SLOW + "# the second problem\n"}  # PIE joins rows to problems by their code
    references = [
        {"problem_id": p, "submission_id_v0": f"s{p[1]}", "language": "python", "input": slow[p], "target": FAST}
        for p in slow
    ]
    rows = [{"input": slow[p]} for p in slow]
    config = write_pie(pytester.path, [], references, sizes=(2000,), num_trials=5, ignore_first_k=0)
    models = pytester.path / "models"
    models.mkdir()
    (models / "both.jsonl").write_text("".join(json.dumps({**row, "generated_answers": [FAST]}) + "\n" for row in rows))
    (models / "one.jsonl").write_text(json.dumps({**rows[0], "generated_answers": [FAST]}) + "\n")
    run = codebench(
        "--codebench-config", str(config), "--codebench-solutions", str(models), "--codebench-report", "r.json",
        benchmark="pie",
    )  # fmt: skip
    assert run.outcome("p2/s2[one:0]") == "missing_solution"
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["models"]["one"]["metrics"]["best@1"]["correct"] == 50.0
    assert report["models"]["both"]["metrics"]["best@1"]["correct"] == 100.0


def test_tensorbench_reads_one_predictions_file_per_model(pytestconfig: pytest.Config, tmp_path: Path) -> None:
    rows = (SAMPLE / "predictions.jsonl").read_text().splitlines()
    first = json.loads(rows[0])["instance_id"]
    (tmp_path / "a.jsonl").write_text(rows[0] + "\n")
    (tmp_path / "b.jsonl").write_text(rows[0] + "\n" + rows[0] + "\n")
    settings: dict[str, Any] = {
        DATASET.name: str(SAMPLE / "tensorbench.json"),
        SOLUTIONS.name: parse_solutions(f"{tmp_path / 'a.jsonl'},{tmp_path / 'b.jsonl'}"),
    }
    benchmark = TensorBench(RunContext.create(pytestconfig, Settings(settings), run_dir=tmp_path / "run"))
    cases = [case for case in benchmark.load().cases if case.task_id == first]
    assert [(case.id, case.model, case.missing) for case in cases] == [
        (f"{first}[a:0]", "a", None),
        (f"{first}[b:0]", "b", None),
        (f"{first}[b:1]", "b", None),
    ]
