"""The plugin outside its checkout: node ids that do not depend on where the dataset or the
rootdir is, the wheel's contents, a run from an installed wheel (the bundled sample then lies in
site-packages), and the run folders it leaves in a project."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import packs
import pytest
from filelock import FileLock

from pytest_codebench.items import dataset_args, dataset_nodeid

ROOT = Path(__file__).parents[1]
ID = "computeeval/p"  # the node id of every dataset here, p.tar.gz
RIGHT, WRONG = "T/1[0]", "T/2[0]"
# tests/conftest.py's ``codebench`` fixture: runs the inner pytest and returns its ``Run``.
Codebench = Callable[..., Any]
UserPytest = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(params=["inside", "outside"])
def data_dir(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> Path:
    """Where the dataset lies: in the rootdir (the pytester directory), or outside it."""
    if request.param == "inside":
        path = pytester.path / "data"
    else:
        path = pytester.path.parent / f"{pytester.path.name}-elsewhere"
    path.mkdir()
    return path


def dataset(where: Path) -> list[str]:
    """A right and a wrong solution (host-only C), as ``--codebench-*`` flags."""
    # No toolkit requirement: the tests build with cc, and so run where nvcc is missing too.
    tasks = [packs.problem(task, min_cuda_toolkit=None) for task in ("T/1", "T/2")]
    problems = packs.write_problems(where / "p.tar.gz", tasks)
    solutions = [packs.solution("T/1", packs.RIGHT), packs.solution("T/2", packs.WRONG)]
    answers = packs.write_solutions(where / "answers.tar.gz", solutions)
    return [f"--codebench-dataset={problems}", f"--codebench-solutions={answers}", "--codebench-run-without-gpu"]


def junit_cases(path: Path) -> list[tuple[str, str]]:
    """(classname, name) of every test case."""
    return [(case.get("classname", ""), case.get("name", "")) for case in ET.parse(path).getroot().iter("testcase")]


def collected_ids(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess("--codebench=computeeval", "--collect-only", "-q", *args)
    return [line for line in result.outlines if "::" in line]


# -- node ids ---------------------------------------------------------------------------------------


def test_node_ids_name_the_benchmark_and_dataset_not_the_rootdir(pytester: pytest.Pytester, data_dir: Path) -> None:
    args = dataset(data_dir)
    expected = [f"{ID}::{RIGHT}", f"{ID}::{WRONG}"]
    assert collected_ids(pytester, *args) == expected
    # The same items seen from another rootdir (the dataset's own folder) keep their ids.
    assert collected_ids(pytester, *args, f"--rootdir={data_dir}") == expected


def test_junit_classname_is_the_benchmark_and_dataset(
    pytester: pytest.Pytester, codebench: Codebench, data_dir: Path
) -> None:
    run = codebench(*dataset(data_dir))
    run.result.assert_outcomes(passed=1, failed=1)
    assert sorted(junit_cases(pytester.path / "junit.xml")) == [("computeeval.p", RIGHT), ("computeeval.p", WRONG)]


def test_last_failed_reruns_only_the_failed_items(
    pytester: pytest.Pytester, codebench: Codebench, data_dir: Path
) -> None:
    args = dataset(data_dir)
    codebench(*args).result.assert_outcomes(passed=1, failed=1)
    rerun = codebench(*args, "--lf")
    rerun.result.assert_outcomes(failed=1)
    assert junit_cases(pytester.path / "junit.xml") == [("computeeval.p", WRONG)]


def test_failed_first_runs_the_failure_before_the_others(pytester: pytest.Pytester, data_dir: Path) -> None:
    # Serially only: under xdist two workers grade the items at once, so no order is seen.
    args = ["--codebench=computeeval", *dataset(data_dir), "-v"]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest_subprocess(*args, "--ff")
    result.assert_outcomes(passed=1, failed=1)
    ran = [
        line.split()[0] for line in result.outlines if line.startswith(ID) and ("PASSED" in line or "FAILED" in line)
    ]
    assert ran == [f"{ID}::{WRONG}", f"{ID}::{RIGHT}"]


def test_an_item_is_selected_by_its_node_id_as_printed(
    pytester: pytest.Pytester, codebench: Codebench, data_dir: Path
) -> None:
    args = dataset(data_dir)
    printed = collected_ids(pytester, *args)[1]
    run = codebench(*args, printed)
    run.result.assert_outcomes(failed=1)
    assert list(run.items) == [WRONG]
    # The task without its sample number selects all its samples, as for a parametrized test.
    assert list(codebench(*args, f"{ID}::T/1").items) == [RIGHT]
    # So does the dataset's own id, and -k by task id as before.
    assert sorted(codebench(*args, ID).items) == [RIGHT, WRONG]
    assert list(codebench(*args, "-k", "T/2").items) == [WRONG]


def test_a_skip_is_reported_at_its_item_not_at_the_dataset_file(
    pytester: pytest.Pytester, codebench: Codebench, data_dir: Path
) -> None:
    problems = [packs.problem("T/1", min_cuda_toolkit=None), packs.problem("T/2", min_cuda_toolkit="99.0")]
    path = packs.write_problems(data_dir / "p.tar.gz", problems)
    run = codebench(f"--codebench-dataset={path}", "--codebench-run-without-gpu")
    run.result.assert_outcomes(passed=1, skipped=1)
    # -rs names the task (the reason: a toolkit that is too old, or none), never the archive's
    # path (outside the rootdir it reads ../../...tar.gz:2) nor the plugin's line that skipped.
    run.result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] {ID}::T/2[[]0[]]: *toolkit*"])
    skipped = run.items["T/2[0]"]
    assert skipped["status"] == "skipped"
    assert f"{ID}::T/2[0]:" in skipped["message"]  # JUnit's skip text: the item as its location
    skip_lines = [line for line in run.result.outlines if line.startswith("SKIPPED")]
    assert skip_lines and not any("p.tar.gz" in line for line in [*skip_lines, skipped["message"]])
    assert "items.py" not in run.output


def test_items_of_a_dataset_share_one_fixture_closure(pytester: pytest.Pytester, codebench: Codebench) -> None:
    """items.py hands the first item's fixture closure to the others through pytest.Function's
    ``fixtureinfo=`` and ``_fixtureinfo``: pytest's own way for the items of a parametrized
    function, which it does not publish. Resolving it per item costs about 1 s per 10,000 items.
    When a pytest release changes either, this says so (collection itself might only slow down)."""
    assert "fixtureinfo" in inspect.signature(pytest.Function.__init__).parameters, "pytest.Function lost fixtureinfo="
    pytester.makeconftest(
        """
        def pytest_collection_finish(session):
            closures = {id(item._fixtureinfo) for item in session.items}
            names = {tuple(item.fixturenames) for item in session.items}
            with open(session.config.rootpath / "closures.log", "a") as log:
                log.write(f"{len(closures)} {sorted(names)}\\n")
        """
    )
    tasks = [packs.problem(f"T/{i}", min_cuda_toolkit=None) for i in range(3)]
    path = packs.write_problems(pytester.path / "p.tar.gz", tasks)
    codebench(f"--codebench-dataset={path}", "--collect-only")
    lines = (pytester.path / "closures.log").read_text().splitlines()
    assert lines and all(line.startswith("1 [(") and "'codebench_verdict'" in line for line in lines), lines


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("sample-problems.tar.gz", "computeeval/sample-problems"),
        ("problems.jsonl", "computeeval/problems"),
        ("2025-3-problems.TGZ", "computeeval/2025-3-problems"),
        ("v1.2 problems[x].json", "computeeval/v1_2_problems_x"),
        ("README", "computeeval/README"),
    ],
)
def test_a_dataset_node_id_is_the_benchmark_and_the_file_name_without_storage_suffixes(
    name: str, expected: str
) -> None:
    assert dataset_nodeid("computeeval", Path("/data") / name) == expected


def test_only_arguments_naming_the_dataset_id_become_its_path() -> None:
    path = Path("/data/p.tar.gz")
    args = ["computeeval/p::T/1[0]", "computeeval/p", "computeeval/pp::X", "tests/test_x.py::t", "computeeval/p/x"]
    assert dataset_args(args, "computeeval/p", path) == [
        "/data/p.tar.gz::T/1[0]",
        "/data/p.tar.gz",
        "computeeval/pp::X",
        "tests/test_x.py::t",
        "computeeval/p/x",
    ]


# -- run folders ------------------------------------------------------------------------------------


def run_folders(pytester: pytest.Pytester) -> list[str]:
    runs = pytester.path / ".codebench" / "runs"
    return sorted(path.name for path in runs.iterdir()) if runs.is_dir() else []


def test_the_codebench_folder_keeps_itself_out_of_git(pytester: pytest.Pytester, codebench: Codebench) -> None:
    subprocess.run(["git", "init", "-q", str(pytester.path)], check=True)
    path = packs.write_problems(pytester.path / "p.tar.gz", [packs.problem("T/1", min_cuda_toolkit=None)])
    codebench(f"--codebench-dataset={path}", "--codebench-run-without-gpu").result.assert_outcomes(passed=1)
    assert run_folders(pytester)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".codebench" not in status and (pytester.path / ".codebench" / ".gitignore").is_file()


def test_collect_only_leaves_no_run_folder(pytester: pytest.Pytester, codebench: Codebench) -> None:
    path = packs.write_problems(pytester.path / "p.tar.gz", [packs.problem("T/1", min_cuda_toolkit=None)])
    codebench(f"--codebench-dataset={path}", "--collect-only").result.stdout.fnmatch_lines(["*1 test collected*"])
    assert run_folders(pytester) == []


# -- the wheel --------------------------------------------------------------------------------------


def _source_copy(src: Path, dst: Path) -> Path:
    """The checkout without its local state (.git, virtual environments, caches, old builds),
    so that the wheel is built from the sources alone, as from a fresh clone."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {
            n for n in names if n.startswith(".") or n in ("build", "dist", "__pycache__") or n.endswith(".egg-info")
        }

    shutil.copytree(src, dst, ignore=ignore)
    return dst


# The HTML report's scripts, style sheet and vendored chart library (with its licence).
PAGE_ASSETS = sorted(
    str(path.relative_to(ROOT)) for path in (ROOT / "pytest_codebench/reports/html/assets").rglob("*") if path.is_file()
)


@pytest.fixture(scope="module")
def wheel(shared_tmp: Path) -> Path:
    """The wheel, built once per test run from a copy of the checkout (xdist workers share it)."""
    with FileLock(shared_tmp / "codebench-wheel.lock"):
        dist = shared_tmp / "codebench-wheel"
        if not dist.is_dir():
            source = _source_copy(ROOT, shared_tmp / "codebench-source")
            command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(source)]
            done = subprocess.run(command, capture_output=True, text=True)
            assert done.returncode == 0, done.stdout + done.stderr
    (built,) = dist.glob("pytest_codebench-*.whl")
    return built


def test_the_wheel_holds_the_plugin_and_its_samples_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    modules = {str(path.relative_to(ROOT)) for path in (ROOT / "pytest_codebench").rglob("*.py")}
    package = {
        name for name in names if not name.startswith("pytest_codebench/datasets/") and ".dist-info/" not in name
    }
    dockerfiles = {str(p.relative_to(ROOT)) for p in (ROOT / "pytest_codebench" / "images").glob("*.Dockerfile")}
    # Preload libraries' sources, built where the commands run.
    preloads = {
        "pytest_codebench/benchmarks/computeeval/guard/main_guard.c",
        "pytest_codebench/benchmarks/computeeval/perf/cupti_profile.cpp",
    }
    assert package == modules | dockerfiles | preloads | set(PAGE_ASSETS) | {"pytest_codebench/py.typed"}
    samples = {
        name.removeprefix("pytest_codebench/datasets/")
        for name in names
        if name.startswith("pytest_codebench/datasets/")
    }
    test_cases = {
        str(p.relative_to(ROOT / "datasets")) for p in (ROOT / "datasets" / "pie" / "test_cases").glob("*/*.txt")
    }
    assert samples - test_cases == {
        "__init__.py",
        "computeeval/README.md",
        "computeeval/sample-problems.tar.gz",
        "computeeval/sample-solutions.tar.gz",
        "pie/README.md",
        "pie/eval_config.yaml",
        "pie/generations.jsonl",
        "pie/reference.jsonl",
        "tensorbench/README.md",
        "tensorbench/predictions.jsonl",
        "tensorbench/scorchlet.bundle",
        "tensorbench/tensorbench.json",
    }
    assert test_cases <= samples
    for line in [
        "Classifier: Typing :: Typed",
        "Classifier: Programming Language :: Python :: 3.13",
        "Requires-Python: >=3.11",
        "Provides-Extra: test",
        "Provides-Extra: lint",
    ]:
        assert line in metadata.splitlines(), line


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel installed as a user would (dependencies from
    PyPI); its interpreter."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return python


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project folder: nothing of this checkout in it."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def user_pytest(installed: Path, project: Path) -> UserPytest:
    """``pytest --codebench=computeeval ARGS`` in the project with the installed plugin, and
    nothing of the outer run (its PYTEST_*, CODEBENCH_* and PYTHON* variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CODEBENCH_", "PYTHON"))}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(installed), "-m", "pytest", "--codebench=computeeval", *args]
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)

    return run


@pytest.mark.slow
def test_an_installed_wheel_grades_its_bundled_sample_with_stable_ids(
    installed: Path, user_pytest: UserPytest, project: Path
) -> None:
    where = [
        str(installed),
        "-c",
        "import pytest_codebench.datasets as d, pathlib; print(pathlib.Path(d.__file__).parent)",
    ]
    sample = subprocess.run(where, cwd=project, capture_output=True, text=True, check=True).stdout.strip()
    assert "site-packages" in sample
    listed = user_pytest("--collect-only", "-q")
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    assert len(ids) == 9 and all(i.startswith("computeeval/sample-problems::") for i in ids), listed.stdout
    # The sample's wrong answers cccl/1[1] to [4] are refused before any build (no nvcc needed);
    # they are selected by their ids as printed.
    wrong = [f"computeeval/sample-problems::cccl/1[{n}]" for n in range(1, 5)]
    answers = f"--codebench-solutions={sample}/computeeval/sample-solutions.tar.gz"
    first = user_pytest(answers, *wrong, "--junitxml=first.xml")
    assert first.returncode == 1, first.stdout + first.stderr
    assert f"codebench: computeeval on {sample}/computeeval/sample-problems.tar.gz" in first.stdout
    expected = [("computeeval.sample-problems", f"cccl/1[{n}]") for n in range(1, 5)]
    assert sorted(junit_cases(project / "first.xml")) == expected
    # --lf over the whole sample (21 items) grades only those four again, under xdist too.
    rerun = user_pytest(answers, "--lf", "-n", "2", "--junitxml=rerun.xml")
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert sorted(junit_cases(project / "rerun.xml")) == expected


@pytest.mark.slow
def test_an_installed_wheel_writes_the_html_report_with_every_asset(installed: Path, project: Path) -> None:
    report = {"benchmark": "pie", "dataset": {"path": "d.jsonl"}, "options": {}, "items": []}
    (project / "run.json").write_text(json.dumps(report))
    command = [str(installed), "-m", "pytest_codebench", "html", "run.json", "-o", "page"]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    written = {str(path.relative_to(project / "page")) for path in (project / "page" / "assets").rglob("*")}
    shipped = {name.removeprefix("pytest_codebench/reports/html/") for name in PAGE_ASSETS}
    assert shipped <= written and "assets/vendor/chart.umd.min.js" in shipped
    page = (project / "page" / "index.html").read_text()
    assert all(f'src="{name}"' in page for name in shipped if name.endswith(".js") and "/js/" in name)
