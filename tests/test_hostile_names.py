"""No model's name may end the run's reports (issue 36, section 2): every file or folder name
made from a model's or a dataset's text goes through one rule (``names.safe_name``), and each of
the run's outputs is written on its own, so that one that fails leaves the others.

The attacks play hostile names (a NUL, 300 characters, ``..``, ``/``, ``../../x``, control
characters, text that was not UTF-8) through real pytest runs with every output asked for, and
check that each output exists and that every file written stays inside its folder. Beside
each, an honest control whose names are kept as they are, and whose verdicts are right."""

from __future__ import annotations

import json
import os
from pathlib import Path

import packs
import pytest
from tensorbench_data import sample_rows, task, write_dataset

from conftest import junit_items
from pytest_codebench.context import slug
from pytest_codebench.names import MAX_NAME, escape_controls, is_safe, name_with, safe_name

# One of each: what ended the reports, what moved the logs, what is not text.
HOSTILE = [
    "nul\x00model",
    "m" * 300,
    "..",
    ".",
    "",
    "org/../../model",
    "../" * 12 + "escaped",
    "/abs/path",
    "bell\x07new\nline\r\x1b[31mred",
    "bad\udcffutf8",
    "\ud800",
    "ends+0123456789",
    "é" * 150,
]
HONEST = ["gpt-5", "org__model-7b", "django__django-11099", "claude-3.5+sonnet@2024", "modèle", ".hidden", "a..b"]


def test_honest_names_are_kept_and_hostile_ones_made_safe_and_distinct() -> None:
    for name in HONEST:
        assert safe_name(name) == name and is_safe(name)
    made = [safe_name(name) for name in HOSTILE]
    for name, safe in zip(HOSTILE, made, strict=True):
        assert safe != name and harmless(safe) and len(safe.rpartition("+")[2]) == 10
    assert len(set(made)) == len(HOSTILE)
    # Names that only their cut or their unsafe characters told apart stay apart.
    assert safe_name("a" * 300) != safe_name("a" * 301) and safe_name("a\x00") != safe_name("a\x01")
    # A name of a changed name's shape is changed too, so no honest name is another's changed form.
    assert safe_name(safe_name("..")) != safe_name("..")
    # Bytes are names as the file system gives them; what was not UTF-8 is made safe.
    assert safe_name(b"gpt-5") == "gpt-5" and harmless(safe_name(b"\xff\xfe"))
    # A suffix of the harness's own stays whole, and the whole name within the bound.
    long = name_with("x" * 300, "-graded-solutions.jsonl")
    assert long.endswith("-graded-solutions.jsonl") and len(long.encode()) <= MAX_NAME
    assert name_with("m1", "-graded-solutions.jsonl") == "m1-graded-solutions.jsonl"
    # The log folders' slug follows the same hash rule and bound.
    assert all(harmless(slug(name)) and len(slug(name).encode()) <= 100 for name in HOSTILE)


def harmless(name: str) -> bool:
    """A name that is one file, in its folder, that every file system and terminal takes."""
    return (
        name not in ("", ".", "..")
        and not any(char in name for char in "/\\\x00\n\r\x07\x1b")
        and len(name.encode()) <= MAX_NAME  # valid UTF-8: encode() is strict
    )


def files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file() or path.is_symlink()}


def inside(path: Path, folders: list[Path]) -> bool:
    resolved = Path(os.path.normpath(path))
    return any(resolved == folder or folder in resolved.parents for folder in folders)


def outputs_whole(pytester: pytest.Pytester, result: pytest.RunResult, before: set[Path], extra: list[str]) -> None:
    """Every output asked for exists and reads; every file the run wrote is in one of them or
    the run's own folders; no output failed."""
    root = pytester.path
    output = result.stdout.str() + result.stderr.str()
    assert "could not be written" not in output and "INTERNALERROR" not in output, output
    # Nor does a name act on the terminal (tests/test_hostile_terminal.py): each is shown escaped.
    assert not [char for char in "\x1b\x07\r\x00" if char in output], output
    report = json.loads((root / "r.json").read_text())
    assert report["items"]
    assert (root / "page" / "index.html").exists() and (root / "page" / "data" / "overview.js").exists()
    assert (root / "r.md").read_text().startswith("### codebench:")
    assert (root / "summary.md").read_text().startswith("### codebench:")  # $GITHUB_STEP_SUMMARY
    assert junit_items(root / "junit.xml")
    assert "codebench: " in output and "outcomes: " in output  # the terminal summary
    allowed = [root / name for name in ("r.json", "r.md", "summary.md", "junit.xml", "page", ".codebench")]
    # pytester's own: its inner run's output and the folder it runs in.
    allowed += [root / name for name in (".pytest_cache", ".cache", "stdout", "stderr", "runpytest-current")]
    allowed += [root / name for name in extra]
    written = files_under(root) - before
    outside = sorted(str(path) for path in written if not inside(path, allowed))
    assert not outside
    for path in written:
        name = path.name
        assert "\x00" not in name and len(name.encode()) <= 255 and name.encode("utf-8")


OUTPUTS = ["--codebench-report", "r.json", "--codebench-html", "page", "--codebench-markdown", "r.md", "-rA"]


def run_outputs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str) -> pytest.RunResult:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    junit = f"--junitxml={pytester.path / 'junit.xml'}"
    return pytester.runpytest_subprocess(*args, junit, *OUTPUTS)


SUB = "scorchlet__feature_sub"
# Instance ids the dataset gives, as hostile as a model's name (a task id names a folder too).
# The model's folder is DIR/logs/run_evaluation/RUN/MODEL: five levels up is the test's folder,
# six its parent (an absolute id is made in the test, in its own folder).
HOSTILE_IDS = [
    "../" * 5 + "up-5",
    "../" * 6 + "up-6",
    "nul\x00task",
    "t" * 300,
    "..",
    "bad\udcfftask",
    "ctl\x1b[2Jtask",
]


# Every attack at once: a climb, a NUL, 300 bytes, a control character, a byte that was not UTF-8.
HOSTILE_MODEL = "../../" + "\x00" + "m" * 300 + "\x07\udcff"


@pytest.mark.usefixtures("tensorbench_cache_dir")
@pytest.mark.parametrize(
    ("model", "xdist"),
    [(HOSTILE_MODEL, []), (HOSTILE_MODEL, ["-n", "2"]), ("sample-model", [])],
    ids=["hostile-model-serial", "hostile-model-xdist", "honest-model-serial"],
)
def test_swebench_files_of_a_one_model_file_stay_in_their_folder_whatever_the_names(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    scorchlet: tuple[Path, dict[str, str]],
    model: str,
    xdist: list[str],
) -> None:
    """One model in the predictions file (the usual case): its name names SWE-bench's files,
    and the dataset's instance ids their folders. The honest task's item passes in every run;
    under xdist, the reports that quote names that were not UTF-8 cross to the controller."""
    repo, shas = scorchlet
    passes, not_applied = sample_rows(0, 4)
    hostile_ids = [*HOSTILE_IDS, str(pytester.path / "absolute")]
    tasks = [task(shas, repo), *(task(shas, repo, instance_id=instance) for instance in hostile_ids)]
    rows = [{**passes, "model_name_or_path": model}]
    # The model's patches hold a byte that was not UTF-8 too (as JSON's escape of it).
    patch = not_applied["model_patch"] + "+\udcff\n"
    rows += [{"instance_id": instance, "model_name_or_path": model, "model_patch": patch} for instance in hostile_ids]
    args = write_dataset(pytester.path, repo, tasks, rows)
    before = files_under(pytester.path)
    options = ["--codebench=tensorbench", *xdist, *args, "--codebench-swebench-dir", "swe"]
    result = run_outputs(pytester, monkeypatch, *options)
    assert result.ret == 1, result.stdout.str()  # the hostile ids' patches do not apply: failed, not an error
    outputs_whole(pytester, result, before, ["swe"])
    [summary] = (pytester.path / "swe").glob("*.json")
    counts = json.loads(summary.read_text())
    assert counts["resolved_ids"] == [SUB] and counts["error_ids"] == sorted(
        [escape_controls(instance) for instance in hostile_ids]
    )
    assert not (pytester.path.parent / "up-6").exists()
    [run_folder] = (pytester.path / "swe" / "logs" / "run_evaluation").iterdir()
    [model_folder] = run_folder.iterdir()
    assert summary.name == f"{model_folder.name}.{run_folder.name}.json"
    assert (model_folder.name == model) == (model == "sample-model")  # honest: SWE-bench's own name
    assert json.loads((model_folder / SUB / "report.json").read_text())[SUB]["resolved"] is True
    folders = {path.name for path in model_folder.iterdir()}
    # An id that was not UTF-8 or holds a control character is its escape (``bad\\udcfftask``,
    # ``ctl\\x1b[2Jtask``) in every output, then made safe.
    assert folders == {SUB, *(safe_name(escape_controls(instance)) for instance in hostile_ids)}
    climbed = model_folder / safe_name(hostile_ids[0])
    assert (climbed / "patch.diff").read_bytes().endswith(b"+\\udcff\n")  # the patch, as the model gave it
    items = junit_items(pytester.path / "junit.xml")
    assert items[f"{SUB}[0]"]["properties"]["category"] == "passed"


@pytest.mark.usefixtures("tensorbench_cache_dir")
def test_each_model_of_a_file_of_several_gets_a_safe_set_and_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, scorchlet: tuple[Path, dict[str, str]]
) -> None:
    """Several models in one file: each hostile name is a set of its own (no two merged, none
    refused), its SWE-bench files in DIR; the honest model keeps its name and its pass."""
    repo, shas = scorchlet
    passes, not_applied = sample_rows(0, 4)
    hostile = [name for name in HOSTILE if name.strip()]
    rows = [{**passes, "model_name_or_path": "honest-model"}]
    rows += [{**not_applied, "model_name_or_path": name} for name in hostile]
    args = write_dataset(pytester.path, repo, [task(shas, repo)], rows)
    before = files_under(pytester.path)
    result = run_outputs(pytester, monkeypatch, "--codebench=tensorbench", *args, "--codebench-swebench-dir", "swe")
    assert result.ret == 1, result.stdout.str()
    outputs_whole(pytester, result, before, ["swe"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert len(report["models"]) == len(hostile) + 1 and "honest-model" in report["models"]
    assert report["models"]["honest-model"]["score"] == 100.0
    [run_folder] = (pytester.path / "swe" / "logs" / "run_evaluation").iterdir()
    assert len(list(run_folder.iterdir())) == len(hostile) + 1
    assert (run_folder / "honest-model" / SUB / "report.json").exists()
    assert (pytester.path / "swe" / f"honest-model.{run_folder.name}.json").exists()


def test_long_set_names_keep_graded_solutions_and_every_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ComputeEval: sets named by files whose names fill a file name, and task ids that climb
    out of their folder: NVIDIA's graded-solutions files, the logs and every report stay whole."""
    ids = ["T/1", "../../../../../../../../t2", "T/\x1b[2J3"]
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem(task_id) for task_id in ids])
    sets = pytester.path / "sets"
    sets.mkdir()
    long = "x" * (250 - len("-solutions.tar.gz"))
    packs.write_solutions(sets / f"{long}-solutions.tar.gz", [packs.solution(task_id) for task_id in ids])
    packs.write_solutions(sets / "honest-solutions.tar.gz", [packs.solution(task_id) for task_id in ids])
    args = ["--codebench-dataset", str(dataset), "--codebench-solutions", str(sets), "--codebench-run-without-gpu"]
    before = files_under(pytester.path)
    result = run_outputs(pytester, monkeypatch, "--codebench=computeeval", *args, "--codebench-graded-solutions", "g")
    assert result.ret == 0, result.stdout.str()
    outputs_whole(pytester, result, before, ["g"])
    graded = sorted(path.name for path in (pytester.path / "g").iterdir())
    assert graded == sorted(["honest-graded-solutions.jsonl", name_with(long, "-graded-solutions.jsonl")])
    report = json.loads((pytester.path / "r.json").read_text())
    assert {name: model["score"] for name, model in report["models"].items()} == {long: 100.0, "honest": 100.0}


def test_a_writer_that_fails_is_named_and_the_others_are_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The markdown's path cannot be written (its folder is a file): the run says so, naming it,
    and the JSON report, the page, JUnit and the terminal summary are all there; the exit status
    is the grading's (a wrong sample: 1)."""
    (pytester.path / "blocked").write_text("a file, not a folder")
    args = packs.pack_args(pytester.path, [packs.problem("T/1"), packs.problem("T/2")], [packs.solution("T/1")])
    junit = f"--junitxml={pytester.path / 'junit.xml'}"
    report = ["--codebench-report", "r.json", "--codebench-html", "page"]
    result = pytester.runpytest_subprocess(
        "--codebench=computeeval",
        *args,
        junit,
        *report,
        "--codebench-markdown",
        "blocked/r.md",
        "--codebench-run-without-gpu",
    )
    output = result.stdout.str()
    assert result.ret == 1, output  # T/2 has no sample: failed, as without the broken output
    assert "codebench: the markdown report (--codebench-markdown) could not be written: " in output
    assert "INTERNALERROR" not in output and "outcomes: passed 1, missing_solution 1" in output
    assert json.loads((pytester.path / "r.json").read_text())["counts"] == {"passed": 1, "missing_solution": 1}
    assert (pytester.path / "page" / "index.html").exists() and junit_items(pytester.path / "junit.xml")
    # The control: the same run with a path that can be written says nothing of the kind.
    result = pytester.runpytest_subprocess(
        "--codebench=computeeval", *args, junit, *report, "--codebench-markdown", "r.md", "--codebench-run-without-gpu"
    )
    assert result.ret == 1 and "could not be written" not in result.stdout.str()
    assert (pytester.path / "r.md").exists()


def write_pie_sets(root: Path, names: list[str]) -> list[str]:
    """PIE's layout with one row (the sample's FAST program), and a solutions file per name."""
    from test_pie import FAST, SLOW, write_pie

    config = write_pie(root, [{"input": SLOW, "generated_answers": [FAST]}], output_report_file_path="out/report.jsonl")
    rows = [json.loads(line) for line in (root / "gen.jsonl").read_text().splitlines()]
    models = root / "models"
    models.mkdir()
    for name in names:
        (models / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ["--codebench-config", str(config), "--codebench-solutions", str(models)]


def test_pie_reports_of_long_named_sets_are_written_each_by_its_own_name(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PIE writes report.NAME.jsonl per set: a set named by a file name that fills a file name
    still gets its report (a safe name), and the honest set its own name."""
    import sys

    long = "y" * (250 - len(".jsonl"))
    args = write_pie_sets(pytester.path, [long, "honest"])
    before = files_under(pytester.path)
    result = run_outputs(pytester, monkeypatch, "--codebench=pie", *args, "--codebench-python", sys.executable)
    assert result.ret in (0, 1), result.stdout.str()
    outputs_whole(pytester, result, before, ["out"])
    reports = sorted(path.name for path in (pytester.path / "out").iterdir())
    assert reports == sorted(["report.honest.jsonl", f"report.{name_with(long, '.jsonl', MAX_NAME - 7)}"])
    assert all(json.loads(line) for path in (pytester.path / "out").iterdir() for line in path.read_text().splitlines())


def test_a_pie_report_that_cannot_be_written_leaves_the_other_models_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PIE's report of one model cannot be written (a folder stands at its path): the run names
    it, and the other model's report is still written; the control, a run with nothing in the
    way, writes both and says nothing of the kind."""
    import sys

    args = write_pie_sets(pytester.path, ["blocked", "honest"])
    (pytester.path / "out" / "report.blocked.jsonl").mkdir(parents=True)
    python = ["--codebench-python", sys.executable]
    result = run_outputs(pytester, monkeypatch, "--codebench=pie", *args, *python)
    output = result.stdout.str() + result.stderr.str()
    assert "pie's own outputs could not be written" in output and "report.blocked.jsonl" in output, output
    assert (pytester.path / "out" / "report.honest.jsonl").read_text()
    assert json.loads((pytester.path / "r.json").read_text())["items"]  # the other outputs too
    (pytester.path / "out" / "report.blocked.jsonl").rmdir()
    result = run_outputs(pytester, monkeypatch, "--codebench=pie", *args, *python)
    assert "could not be written" not in result.stdout.str() + result.stderr.str()
    assert (pytester.path / "out" / "report.blocked.jsonl").read_text()
