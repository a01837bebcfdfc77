"""``--codebench-html DIR``: the controller writes the page after the JSON report, from the same
figures, with and without xdist (never a worker)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import packs
import pytest


def data(path: Path) -> Any:
    found = re.fullmatch(r'codebench\.load\("[^"]*",(.*)\);\n', path.read_text(), re.S)
    assert found, path
    return json.loads(found[1])


def test_a_run_writes_its_page_with_the_reports_numbers(pytester: pytest.Pytester, codebench: Any) -> None:
    tasks = [packs.problem(task, min_cuda_toolkit=None) for task in ("T/1", "T/2")]
    problems = packs.write_problems(pytester.path / "p.tar.gz", tasks)
    right = packs.write_solutions(pytester.path / "a.tar.gz", [packs.solution("T/1", packs.RIGHT)])
    wrong = packs.write_solutions(
        pytester.path / "b.tar.gz", [packs.solution("T/1", packs.WRONG), packs.solution("T/2", packs.RIGHT)]
    )
    run = codebench(
        f"--codebench-dataset={problems}",
        f"--codebench-solutions=a={right},b={wrong}",
        "--codebench-run-without-gpu",
        "--codebench-report=out.json",
        "--codebench-html=page",
    )
    report = json.loads((pytester.path / "out.json").read_text())
    assert f"html: {Path('page') / 'index.html'}" in run.output
    overview = data(pytester.path / "page" / "data" / "overview.js")
    rows = {row["model"]: row for row in overview["leaderboard"]}
    assert set(rows) == set(report["models"]) == {"a", "b"}
    for name, model in report["models"].items():
        pass1 = next(metric for metric in rows[name]["metrics"] if metric["name"] == "pass@1")
        assert pass1["value"] == 100 * model["metrics"]["pass@k"]["1"]
        assert rows[name]["counts"] == model["counts"]
    assert overview["items"] == len(report["items"]) == 4
    shown: dict[str, Any] = {}
    for path in (pytester.path / "page" / "data" / "items").glob("*.js"):
        shown.update(data(path))
    assert set(shown) == {item["nodeid"] for item in report["items"]}
    for item in report["items"]:  # the solution the page shows is the sample's, for answered tasks
        files = [{"path": each["path"], "text": each["content"]} for each in (item["solution"] or {}).get("files", [])]
        assert shown[item["nodeid"]]["solution"] == (files if item["solution"] else None)
    assert sum(1 for item in report["items"] if item["solution"]) == 3
    assert (pytester.path / "page" / "index.html").is_file()
    assert (pytester.path / "page" / "assets" / "vendor" / "chart.umd.min.js").is_file()
