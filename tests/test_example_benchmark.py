"""The example benchmark that docs/adding-a-benchmark.md walks through (docs/examples/hello), built
and installed as a third party's benchmark is, and found as one is: through the entry point its
own pyproject.toml declares, from outside this package. What the walkthrough shows it doing, it
does."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import packs
import pytest
from filelock import FileLock

ROOT = Path(__file__).parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "hello"
SOURCE = EXAMPLE / "codebench_hello" / "__init__.py"
WALKTHROUGH = ROOT / "docs" / "adding-a-benchmark.md"
DOCKER = ["--codebench-runner", "docker", "--codebench-docker-base", packs.DOCKER_BASE]
# What the bundled sample's three answers come to, as the walkthrough shows them.
OUTCOMES = {"add[0]": "passed", "reverse[0]": "test_failed", "collatz[0]": "test_timeout"}


@pytest.fixture(scope="session")
def hello_wheel(shared_tmp: Path) -> Path:
    """The example's wheel, built by pip from its own pyproject.toml once per test run (xdist
    workers share it), from a copy: a build leaves build/ and *.egg-info in its source."""
    with FileLock(shared_tmp / "hello-wheel.lock"):
        dist = shared_tmp / "hello-wheel"
        if not dist.is_dir():
            source = shared_tmp / "hello-source"
            shutil.rmtree(source, ignore_errors=True)
            shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(source)]
            done = subprocess.run(command, capture_output=True, text=True)
            assert done.returncode == 0, done.stdout + done.stderr
    (built,) = dist.glob("codebench_hello-*.whl")
    return built


def install(wheel: Path, site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel as pip installs it (unpacked into a folder on the path: the package, its data
    and its dist-info with the entry points), for the inner pytest runs and their xdist
    workers; the installed package's folder."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site / "codebench_hello"


@pytest.fixture
def hello(hello_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``pytest --codebench=hello`` works in this test's inner runs, as after ``pip install
    docs/examples/hello``; the installed package's folder."""
    return install(hello_wheel, tmp_path / "site", monkeypatch)


def report_of(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "report.json").read_text())


def test_the_example_grades_a_pass_a_failure_and_a_timeout(pytester, codebench, hello):
    run = codebench("--codebench-report", "report.json", benchmark="hello")
    assert {name: run.outcome(name) for name in run.items} == OUTCOMES
    assert "all tasks: pass@1 33.33%" in run.output
    assert "[test_timeout] test exceeded 1 s" in run.items["collatz[0]"]["message"]
    assert "AssertionError: abc" in run.items["reverse[0]"]["message"]
    report = report_of(pytester)
    assert report["benchmark"] == "hello"
    # The bundled sample, found in the example's own installed package (Benchmark.dataset_package).
    assert report["dataset"]["path"] == str(hello / "data" / "tasks.jsonl")
    assert report["counts"] == {"passed": 1, "test_failed": 1, "test_timeout": 1}
    assert report["score"] == pytest.approx(100 / 3)
    assert {item["id"]: item["outcome"] for item in report["items"]} == OUTCOMES
    # The option the example declares is the run's, and read as its type.
    assert report["options"]["hello-timeout"] == 10.0


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])  # one image build a run
def test_the_example_grades_in_its_own_image(pytester, codebench, hello, engine):
    run = codebench(*DOCKER, benchmark="hello")
    assert {name: run.outcome(name) for name in run.items} == OUTCOMES
    # Built from the hello.Dockerfile beside its module, in the example's own package.
    assert re.search(r"codebench: docker image pytest-codebench/hello:\S+: built FROM", run.output), run.output


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])
def test_a_benchmark_without_a_dockerfile_is_told_which_file_to_add(
    pytester, codebench, hello_wheel, tmp_path, monkeypatch, engine
):
    package = install(hello_wheel, tmp_path / "site", monkeypatch)
    (package / "hello.Dockerfile").unlink()
    run = codebench(*DOCKER, benchmark="hello")
    assert {item["status"] for item in run.items.values()} == {"error"}
    message = run.items["add[0]"]["message"]
    assert "the docker runner builds its image from hello.Dockerfile" in message
    assert f"there is none in {package} or " in message
    assert "docs/adding-a-benchmark.md" in message and "--codebench-image" in message


def quoted(block: str, source: str) -> bool:
    """Whether ``block`` is a run of ``source``'s lines, shifted left as a whole (ruff formats a
    page's code blocks: a method is shown at the top level) and with blank lines of its own
    between definitions; any other difference, a line wrapped otherwise included, is a drift."""
    shown = [line for line in textwrap.dedent(block).splitlines() if line.strip()]
    lines = [line for line in source.splitlines() if line.strip()]
    for start, line in enumerate(lines):
        indent = line[: len(line) - len(line.lstrip())]
        if line == indent + shown[0] and lines[start : start + len(shown)] == [indent + each for each in shown]:
            return True
    return False


@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("python", SOURCE),
        ("toml", EXAMPLE / "pyproject.toml"),
        ("dockerfile", SOURCE.parent / "hello.Dockerfile"),
    ],
)
def test_the_walkthrough_quotes_the_example_as_it_is(language, source):
    # Every code block of the page is a run of the example's own lines: the page cannot drift.
    blocks = re.findall(rf"```{language}\n(.*?)```", WALKTHROUGH.read_text(), re.DOTALL)
    assert blocks
    for block in blocks:
        assert quoted(block, source.read_text()), f"not in {source.relative_to(ROOT)}:\n{block}"
