"""``codebench merge``: the console script, its help as plain text, and the shards' JUnit XML
files merged into one that says what one run's file says."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from test_merge import _sweep

from conftest import Run
from pytest_codebench.reports.junit_merge import JUnitMergeError, merge_junit

COUNTS = ("tests", "failures", "errors", "skipped")


def codebench_script() -> Path:
    """The console script pip installed beside this interpreter."""
    return Path(sys.executable).parent / "codebench"


def _cases(path: Path) -> dict[tuple[str | None, str | None], str]:
    """Each test case of a JUnit file and how it ended."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        ended = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        cases[case.get("classname"), case.get("name")] = ",".join(ended) or "passed"
    return cases


def _suite(path: Path) -> ET.Element:
    suites = list(ET.parse(path).getroot().iter("testsuite"))
    assert len(suites) == 1
    return suites[0]


def test_the_console_script_merges_and_its_help_is_plain_text(tmp_path: Path) -> None:
    done = subprocess.run([codebench_script(), "merge", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: codebench merge")
    assert "--junitxml ALL.xml" in done.stdout
    assert "``" not in done.stdout and ":func:" not in done.stdout  # no reStructuredText
    # python -m names itself as it was called.
    module = subprocess.run([sys.executable, "-m", "pytest_codebench", "merge", "--help"],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert module.stdout.startswith("usage: python -m pytest_codebench merge")


def test_two_shards_junit_files_merge_into_what_one_run_writes(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = _sweep(pytester.path)
    codebench(*args)
    shutil.copy(pytester.path / "junit.xml", pytester.path / "whole.xml")
    for part in (1, 2):
        codebench(*args, f"--codebench-shard={part}/2", "--codebench-report", f"part{part}.json")
        shutil.copy(pytester.path / "junit.xml", pytester.path / f"part{part}.xml")
    parts = [pytester.path / f"part{part}.xml" for part in (1, 2)]
    assert all(_cases(part) for part in parts)  # each shard ran some of the items

    done = subprocess.run(
        [codebench_script(), "merge", "part1.json", "part2.json", "-o", "all.json",
         "--junit", *map(str, parts), "--junitxml", "all.xml"],
        capture_output=True, text=True, check=False, cwd=pytester.path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    whole, merged = pytester.path / "whole.xml", pytester.path / "all.xml"
    assert _cases(merged) == _cases(whole)
    for count in COUNTS:
        assert _suite(merged).get(count) == _suite(whole).get(count), count
    assert f"junit: all.xml ({_suite(whole).get('tests')} tests," in done.stdout
    # The items' properties (category, model...) come through as each shard wrote them.
    properties = {p.get("name") for p in ET.parse(merged).getroot().iter("property")}
    assert {"category", "model"} <= properties


def test_a_test_case_in_two_junit_files_is_refused_naming_both(tmp_path: Path) -> None:
    xml = '<testsuites><testsuite name="pytest" tests="1"><testcase classname="a" name="t"/></testsuite></testsuites>'
    first, second = tmp_path / "one.xml", tmp_path / "two.xml"
    first.write_text(xml)
    second.write_text(xml)
    with pytest.raises(JUnitMergeError, match=r"one\.xml and .*two\.xml both hold a::t"):
        merge_junit([first, second], tmp_path / "all.xml")
    (tmp_path / "bad.xml").write_text("<html/>")
    with pytest.raises(JUnitMergeError, match=r"bad\.xml: not a JUnit XML file"):
        merge_junit([tmp_path / "bad.xml"], tmp_path / "all.xml")


def test_counts_are_computed_again_from_the_cases(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(
        '<testsuite name="pytest" tests="9" failures="9" timestamp="2026-01-02T00:00:00">'
        '<testcase classname="m" name="ok" time="1.5"/><testcase classname="m" name="bad" time="0.5">'
        "<failure message='x'/></testcase></testsuite>"
    )
    (tmp_path / "b.xml").write_text(
        '<testsuites><testsuite name="pytest" timestamp="2026-01-01T00:00:00"><testcase classname="m" name="skip">'
        "<skipped/></testcase><testcase classname="
        '"m" name="err"><error/></testcase></testsuite></testsuites>'
    )
    counts = merge_junit([tmp_path / "a.xml", tmp_path / "b.xml"], tmp_path / "all.xml")
    assert counts == {"tests": 4, "failures": 1, "errors": 1, "skipped": 1}
    suite = _suite(tmp_path / "all.xml")
    assert (suite.get("tests"), suite.get("failures"), suite.get("time")) == ("4", "1", "2.000")
    assert suite.get("timestamp") == "2026-01-01T00:00:00"
