"""``--codebench-html DIR``: the controller writes the page after the JSON report, from the same
figures, with and without xdist (never a worker)."""

from __future__ import annotations

import json
import re
import subprocess
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


def test_an_items_rerun_line_runs_that_item_as_shown(pytester: pytest.Pytester) -> None:
    """The page's rerun line (header's run.rerun and the item's quoted node id, as item.js
    joins them) is a command a shell runs as shown: the run's folder, its options (a path with
    a space and a quote in it, a -k expression), and only that item."""
    folder = pytester.path / "it's here"
    folder.mkdir()
    problems = [packs.problem(f"T/{i}") for i in (1, 2, 3)]
    dataset = packs.pack_args(
        folder, problems, [packs.solution("T/1"), packs.solution("T/2", packs.WRONG), packs.solution("T/3")]
    )
    pytester.chdir()
    args = [
        "--codebench=computeeval",
        *dataset,
        "--codebench-run-without-gpu",
        "-k",
        "T/1 or T/2",
        "--codebench-html=page",
    ]
    pytester.runpytest_subprocess(*args)
    overview = data(pytester.path / "page" / "data" / "overview.js")
    item = "computeeval/p-problems::T/2[0]"
    line = overview["run"]["rerun"] + " " + "'" + item.replace("'", "'\"'\"'") + "'"  # as item.js writes it
    assert line.startswith(f"cd {pytester.path} && pytest ") and " --codebench=computeeval " in line
    assert " -k 'T/1 or T/2' " in line
    done = subprocess.run(
        ["bash", "-c", line + " -p no:cacheprovider"], capture_output=True, text=True, cwd="/", timeout=300
    )
    assert re.search(r"\b1 failed in\b", done.stdout), done.stdout + done.stderr  # T/2 alone, as the run graded it
