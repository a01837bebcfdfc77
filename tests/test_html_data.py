"""The HTML report's builder on made-up reports, without a browser: the data files hold the
JSON report's own numbers, every item is where the page looks for it, logs are stripped and
capped with the whole log beside the page, and hostile text stays inert data."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_codebench.reports.html import write_html
from pytest_codebench.reports.html.items import shard_of
from pytest_codebench.reports.html.logs import SHOWN
from pytest_codebench.reports.merge import main

HOSTILE = '</script><script>alert(1)</script><img src=x onerror=alert(1)> \u2028 " \u2029 <!-- &amp;'
CALL = re.compile(r'\Acodebench\.load\(("[^"]*"),(.*)\);\n\Z', re.S)


def item(task: str, model: str | None, sample: int, outcome: str, **more: Any) -> dict[str, Any]:
    name = f"{task}[{model + ':' if model else ''}{sample}]"
    status = {"passed": "passed", "skipped": "skipped", "error": "error"}.get(outcome, "failed")
    return {
        "nodeid": f"computeeval/p::{name}",
        "id": name,
        "task_id": task,
        "sample": sample,
        "group": "g1" if task < "T/3" else "g2",
        "status": status,
        "outcome": outcome,
        "reason": f"{outcome} reason",
        "command": None,
        "exit_code": None,
        "output_tail": "",
        "figures": {},
        "logs": {},
        "excused": outcome == "skipped",
        "model": model,
        "solution": {"files": [{"path": "kernel.cu", "content": "int main() {}"}]},
        **more,
    }


def model_summary(pass1: float, low: float, high: float, counts: dict[str, int]) -> dict[str, Any]:
    metrics = {"pass@k": {"1": pass1}, "intervals": {"1": [low, high]}, "problems": 3, "excluded": ["T/9"]}
    metrics["groups"] = {"g1": {"pass@k": {"1": 0.5}, "intervals": {"1": [0.0, 1.0]}}, "g2": {"pass@k": {"1": 1.0}}}
    return {"score": 100 * pass1, "metrics": metrics, "counts": counts}


def report(items: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "benchmark": "computeeval",
        "harness_version": "0.1.0+abc",
        "dataset": {"path": "/data/p.tar.gz", "release": "2025-3", "sha256": "f" * 64},
        "options": {"benchmark": "computeeval", "k": [1], "perf": False, "report": None},
        "environment": {"runner": {"summary": "local sandbox: bubblewrap"}, "gpus": ["H100"]},
        "items": items,
        **more,
    }


def sweep() -> dict[str, Any]:
    items = [
        item("T/1", "a", 0, "passed", figures={"speedup": 2.5, "build_seconds": 1.25}),
        item("T/2", "a", 0, "build_error"),
        item("T/3", "a", 0, "passed", figures={"speedup": 40.0, "perf_suspect": "above 10x"}),
        item("T/1", "b", 0, "wrong_output"),
        item("T/2", "b", 0, "passed", figures={"speedup": 0.8}),
        item("T/3", "b", 0, "skipped"),
    ]
    models = {
        "a": model_summary(2 / 3, 1 / 3, 1.0, {"passed": 2, "build_error": 1}),
        "b": model_summary(1 / 3, 0.0, 2 / 3, {"passed": 1, "wrong_output": 1, "skipped": 1}),
    }
    return report(items, models=models, metrics={"pass@k": {"1": 0.5}}, counts={}, comparisons=[])


def read_data(path: Path) -> tuple[str, Any]:
    """A data file's name and value: its text must be exactly one loader call with JSON."""
    found = CALL.match(path.read_text())
    assert found, path.read_text()[:200]
    return json.loads(found[1]), json.loads(found[2])


def page_items(out: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in (out / "data" / "items").glob("*.js"):
        name, value = read_data(path)
        assert name == f"items/{path.stem}"
        found.update(value)
    return found


def test_the_leaderboard_holds_the_reports_numbers_per_model(tmp_path: Path) -> None:
    data = sweep()
    write_html(data, tmp_path)
    name, overview = read_data(tmp_path / "data" / "overview.js")
    assert name == "overview"
    rows = {row["model"]: row for row in overview["leaderboard"]}
    assert list(rows) == ["a", "b"]
    for model, summary in data["models"].items():
        score, pass1 = rows[model]["metrics"]  # the gate's figure first, then the benchmark's
        assert (score["name"], score["value"]) == ("score", summary["score"])
        assert pass1["name"] == "pass@1" and pass1["unit"] == "%"
        assert pass1["value"] == 100 * summary["metrics"]["pass@k"]["1"]
        assert [pass1["low"], pass1["high"]] == [100 * end for end in summary["metrics"]["intervals"]["1"]]
        assert rows[model]["counts"] == summary["counts"]
        assert rows[model]["not_graded"] == 1 and rows[model]["problems"] == 3
    assert rows["b"]["excused"] == 1 and rows["a"]["excused"] == 0
    assert overview["groups"]["metric"] == "pass@1"
    cells = {
        (row["group"], model): cell
        for row in overview["groups"]["rows"]
        for model, cell in zip(overview["models"], row["cells"], strict=True)
    }
    half, whole = [50.0, 0.0, 100.0], [100.0, None, None]  # g2's pass@1 has no interval
    assert cells == {("g1", "a"): half, ("g1", "b"): half, ("g2", "a"): whole, ("g2", "b"): whole}
    assert overview["run"]["sha256"] == "f" * 64 and overview["run"]["harness_version"] == "0.1.0+abc"
    assert ["runner", "local sandbox: bubblewrap"] in overview["run"]["machine"]
    assert "--codebench-k=1" in overview["run"]["command"] and "--codebench=computeeval" in overview["run"]["command"]


def test_a_run_of_one_unnamed_set_has_one_row_of_its_own_figures(tmp_path: Path) -> None:
    items = [item("T/1", None, 0, "passed"), item("T/2", None, 0, "test_failed")]
    metrics = {"pass@k": {"1": 0.5}, "intervals": {"1": [0.0, 1.0]}, "problems": 2, "excluded": []}
    write_html(report(items, metrics=metrics, counts={"passed": 1, "test_failed": 1}, models={}), tmp_path)
    _, overview = read_data(tmp_path / "data" / "overview.js")
    (row,) = overview["leaderboard"]
    shown = {metric["name"]: metric["value"] for metric in row["metrics"]}
    assert row["model"] == "" and shown["pass@1"] == 50.0 and row["counts"] == {"passed": 1, "test_failed": 1}


def test_an_old_report_without_newer_keys_still_makes_a_page(tmp_path: Path) -> None:
    old = {"benchmark": "pie", "dataset": {"path": "g.jsonl"}, "options": {}, "items": []}
    old["items"] = [{"nodeid": "pie/g::p1[0]", "task_id": "p1", "outcome": "passed", "status": "passed"}]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert main(["html", str(path), "-o", str(tmp_path / "page")]) == 0
    _, overview = read_data(tmp_path / "page" / "data" / "overview.js")
    assert overview["items"] == 1 and overview["comparisons"] == [] and overview["run"]["harness_version"] == "unknown"
    assert list(page_items(tmp_path / "page")) == ["pie/g::p1[0]"]


def test_every_item_is_in_the_file_its_node_id_names(tmp_path: Path) -> None:
    data = sweep()
    data["items"] += [item(f"T/{n}", "c", 0, "passed") for n in range(10, 200)]
    write_html(data, tmp_path)
    _, overview = read_data(tmp_path / "data" / "overview.js")
    assert overview["item_files"] > 1
    for path in (tmp_path / "data" / "items").glob("*.js"):
        _, value = read_data(path)
        assert all(shard_of(nodeid, overview["item_files"]) == int(path.stem) for nodeid in value)
    shown = page_items(tmp_path)
    assert sorted(shown) == sorted(each["nodeid"] for each in data["items"])
    first = shown["computeeval/p::T/1[a:0]"]
    assert first["figures"] == {"speedup": 2.5, "build_seconds": 1.25}
    assert first["solution"] == [{"path": "kernel.cu", "text": "int main() {}"}]


def test_the_matrix_gives_every_items_outcome_and_node_id(tmp_path: Path) -> None:
    data = sweep()
    odd = item("T/2", "c", 1, "error")
    odd["nodeid"] = "computeeval/other::T/2 odd"
    data["items"].append(odd)
    write_html(data, tmp_path)
    _, overview = read_data(tmp_path / "data" / "overview.js")
    found = {}
    for number in range(overview["matrix_files"]):
        _, chunk = read_data(tmp_path / "data" / f"matrix-{number}.js")
        for task, group, codes, nodeids in chunk["rows"]:
            for slot, code in enumerate(codes):
                if code == ".":
                    continue
                model = overview["models"][overview["slots"][slot][0]]
                usual = f"{overview['prefix']}{task}[{model}:{overview['slots'][slot][1]}]"
                nodeid = (nodeids or [None] * len(codes))[slot] or usual
                found[nodeid] = (overview["outcomes"][overview["codes"].index(code)], chunk["groups"][group])
    assert found == {each["nodeid"]: (each["outcome"], each["group"]) for each in data["items"]}


def test_speed_data_marks_the_suspects_and_pairs_the_best_speedups(tmp_path: Path) -> None:
    write_html(sweep(), tmp_path)
    _, speed = read_data(tmp_path / "data" / "speed.js")
    a, b = speed["models"]
    assert (a["model"], a["speedups"], a["suspect"]) == ("a", [2.5, 40.0], [1])
    assert b["speedups"] == [0.8]
    # The suspect 40x is no task's best (the run did not accept suspects); fast_p at p=1: a's
    # T/1 is above 1x, of its 3 problems.
    assert dict(zip(speed["tasks"], a["best"], strict=True)) == {"T/1": 2.5, "T/2": None, "T/3": None}
    assert a["fast_p"][speed["p"].index(1.0)] == pytest.approx(100 / 3)
    assert b["fast_p"][speed["p"].index(1.0)] == 0.0


def test_fast_p_follows_the_benchmarks_denominator_and_accepted_suspects(tmp_path: Path) -> None:
    data = sweep()
    data["models"]["a"]["metrics"]["perf"] = {"accept_suspect": True, "best_at_k": {"1": {"problems": 2}}}
    write_html(data, tmp_path)
    _, speed = read_data(tmp_path / "data" / "speed.js")
    a = speed["models"][0]
    assert a["problems"] == 2 and a["best"][speed["tasks"].index("T/3")] == 40.0
    assert a["fast_p"][speed["p"].index(1.0)] == 100.0 and a["fast_p"][speed["p"].index(4.0)] == 50.0


def test_reports_of_two_benchmarks_make_no_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = []
    for name in ("pie", "computeeval"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"benchmark": name, "dataset": {}, "options": {}, "items": []}))
        parts.append(str(path))
    assert main(["html", *parts, "-o", str(tmp_path / "page")]) == 1
    assert "html: error: not parts of one run" in capsys.readouterr().err
    assert not (tmp_path / "page" / "index.html").exists()


def test_a_long_log_is_stripped_capped_and_kept_whole_beside_the_page(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    body = "".join(f"\x1b[31mline {n}\x1b[0m error\n" for n in range(20000))
    log.write_text(body)
    short = tmp_path / "test.log"
    short.write_text("\x1b]0;title\x07ok\n")
    logs = {"build": str(log), "test": str(short), "gone": "/no/x"}
    data = report([item("T/1", None, 0, "build_error", logs=logs, output_tail="\x1b[1;31merror\x1b[0m: x")])
    write_html(data, tmp_path / "page")
    (shown,) = page_items(tmp_path / "page").values()
    assert shown["output_tail"] == "error: x"
    build, test, gone = shown["logs"]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", body)
    assert "\x1b" not in build["text"] and len(build["text"]) < SHOWN + 200
    assert build["text"].startswith("line 0 error\n") and build["text"].endswith("line 19999 error\n")
    assert (tmp_path / "page" / build["whole"]).read_text() == plain and build["whole"].startswith("logs/")
    assert (test["text"], test["whole"]) == ("ok\n", None)
    assert (gone["text"], gone["path"]) == (None, "/no/x")


def test_hostile_text_stays_data_in_every_file(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(HOSTILE)
    evil = item("T/1", None, 0, "wrong_output", reason=HOSTILE, output_tail=HOSTILE, logs={"run": str(log)})
    evil["solution"] = {"code": HOSTILE}
    evil["figures"] = {"note": HOSTILE}
    evil["task_id"] = evil["group"] = HOSTILE
    evil["nodeid"] = "computeeval/p::" + HOSTILE
    write_html(report([evil], environment={"gpu": HOSTILE}), tmp_path / "page")
    for path in (tmp_path / "page" / "data").rglob("*.js"):
        text = path.read_text()
        for dangerous in ("</script", "<script", "<img", "<!--", "\u2028", "\u2029"):
            assert dangerous not in text, (path, dangerous)
        read_data(path)  # one loader call of plain JSON: nothing else runs
    (shown,) = page_items(tmp_path / "page").values()
    assert shown["reason"] == shown["output_tail"] == shown["figures"]["note"] == HOSTILE
    assert shown["solution"] == [{"path": "", "text": HOSTILE}] and shown["logs"][0]["text"] == HOSTILE
    assert shown["nodeid"] == "computeeval/p::" + HOSTILE
    _, overview = read_data(tmp_path / "page" / "data" / "overview.js")
    assert ["gpu", HOSTILE] in overview["run"]["machine"]
    assert "alert" not in (tmp_path / "page" / "index.html").read_text()  # index.html holds no data


def test_a_solution_is_shown_as_a_diff_against_what_it_replaces(tmp_path: Path) -> None:
    slow = "n = int(input())\ntotal = 0\nfor i in range(n):\n    total += i\nprint(total)\n"
    fast = "n = int(input())\nprint(n * (n - 1) // 2)\n"
    items = [
        item("T/1", None, 0, "passed", solution={"code": fast}, context={"": slow}),
        item("T/2", None, 0, "passed", context={"kernel.cu": "int main() { return 1; }"}),
        item("T/3", None, 0, "passed", context={}),  # a new file: as it is
        item("T/4", None, 0, "passed", solution={"code": fast}),  # an older report: no context
    ]
    write_html(report(items), tmp_path / "out")
    shown = {
        nodeid.rpartition("::")[2]: details["solution"] for nodeid, details in page_items(tmp_path / "out").items()
    }
    program = shown["T/1[0]"][0]["text"].splitlines()
    assert program[:2] == ["--- before", "+++ solution"]
    # Every line is there, the slow program's marked removed and the candidate's added.
    assert "-    total += i" in program and "+print(n * (n - 1) // 2)" in program and " n = int(input())" in program
    assert shown["T/2[0]"] == [
        {
            "path": "kernel.cu",
            "text": "--- before\n+++ solution\n@@ -1 +1 @@\n-int main() { return 1; }\n+int main() {}",
        }
    ]
    assert shown["T/3[0]"] == [{"path": "kernel.cu", "text": "int main() {}"}]
    assert shown["T/4[0]"] == [{"path": "", "text": fast}]
