"""The JSON report says when the run and each item began and how long each took (wall time)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable

import packs
import pytest

from conftest import Run


def moment(text: str) -> datetime.datetime:
    """An ISO 8601 moment in UTC, as the report writes it."""
    parsed = datetime.datetime.fromisoformat(text)
    assert parsed.utcoffset() == datetime.timedelta(0)
    return parsed


def test_the_report_has_the_start_and_wall_time_of_the_run_and_of_each_item(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem("T/1"), packs.problem("T/2")])
    answers = packs.write_solutions(pytester.path / "s-solutions.tar.gz", [packs.solution("T/1")])
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    run = codebench(
        "--codebench-dataset", str(dataset), "--codebench-solutions", str(answers),
        "--codebench-run-without-gpu", "--codebench-report", "r.json",
    )  # fmt: skip
    assert run.items["T/2[0]"]["properties"]["category"] == "missing_solution"
    after = datetime.datetime.now(datetime.UTC)
    report = json.loads((pytester.path / "r.json").read_text())
    started = moment(report["started"])
    assert before <= started <= after
    assert isinstance(report["wall_seconds"], float) and report["wall_seconds"] >= 0
    for item in report["items"]:  # graded and missing alike
        assert started <= moment(item["started"]) <= after, item["id"]
        assert isinstance(item["wall_seconds"], float) and item["wall_seconds"] >= 0
