"""PIE's rows: the slow program and the target checked and timed once per row for all its
candidates (serial and across xdist's workers), and each row's signal (is the target measurably
faster here?) said per row and counted in the summary, the JSON report and PIE's report."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from test_pie import FAST, SLOW, categories, write_pie

from conftest import PieRun
from pytest_codebench.benchmarks.pie.row_signal import row_signal, signal_line, signal_metrics


def figures(point: float | None, low: float | None, high: float | None, acc: float = 1.0) -> dict[str, Any]:
    return {"reference_acc": acc, "reference_speedup": point, "reference_ci_low": low, "reference_ci_high": high}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (figures(3.1, 2.9, 3.3), (True, "the target is measurably faster here: 3.10x [2.90, 3.30]")),
        (figures(1.02, 0.97, 1.08), (False, "the target is not measurably faster here: 1.02x [0.97, 1.08]")),
        # The low end on 1.0 is no evidence: the rule is strictly above.
        (figures(1.1, 1.0, 1.2), (False, "the target is not measurably faster here: 1.10x [1.00, 1.20]")),
        (
            figures(None, None, None, acc=0.5),
            (False, "the target fails this machine's test cases: it could not be timed"),
        ),
        (figures(None, None, None), (False, "the target was not timed")),
    ],
)
def test_a_rows_signal_is_its_targets_lower_bound_above_one(given: dict[str, Any], expected: tuple[bool, str]) -> None:
    assert row_signal(given) == expected


def test_a_row_without_a_target_has_no_signal() -> None:
    assert row_signal({"reference_speedup": 2.0}) is None


def test_the_signal_is_counted_once_a_row() -> None:
    rows = [
        ("p1/s1", {"row_signal_holds": True}),
        ("p1/s1", {"row_signal_holds": True}),
        ("p2/s2", {"row_signal_holds": False}),
        ("p2/s2", {}),  # a candidate that failed before the row was read
        ("p3/s3", {}),  # a row without a target
        ("p4/s4", {"row_signal_holds": False}),
    ]
    metrics = signal_metrics(rows)
    assert metrics == {"rows": 3, "holds": 1, "share": 33.3, "without": ["p2/s2", "p4/s4"]}
    assert signal_line(metrics) == (
        "row signal: the target is measurably faster than the slow program on 1 of 3 rows (33.3%); 2 cannot "
        "discriminate here (their candidates are still graded against the slow program): p2/s2, p4/s4"
    )
    assert signal_metrics([("p3/s3", {})]) is None


# A "target" slower than the slow program: its row cannot show a speedup here. Its loop runs
# twice, some 0.5x: a loop doing a little more work each turn (about 0.9x with start-up) once
# came out above 1.0 in three of five trials beside a busy worker, and was not stopped as futile.
SLOWER = (
    "n = int(input())\nfor _ in range(2):\n    total = 0\n    for i in range(n):\n        total += i\nprint(total)\n"
)
SLOW_TOO = SLOW + "# the second row's slow program\n"


def test_the_target_is_timed_once_a_row_and_its_signal_reported(pytester: pytest.Pytester, pie: PieRun) -> None:
    references = [
        {"problem_id": "p1", "submission_id_v0": "s1", "language": "python", "input": SLOW, "target": FAST},
        {"problem_id": "p1", "submission_id_v0": "s2", "language": "python", "input": SLOW_TOO, "target": SLOWER},
    ]
    rows = [
        {"input": SLOW, "generated_answers": [FAST, FAST + "# a comment\n", FAST + "# another\n"]},
        {"input": SLOW_TOO, "generated_answers": [FAST]},
    ]
    config = write_pie(pytester.path, rows, references)
    report = pytester.path / "codebench.json"
    run = pie(config, "--codebench-report", str(report))
    assert categories(run) == {"p1/s1[0]": "passed", "p1/s1[1]": "passed", "p1/s1[2]": "passed", "p1/s2[0]": "passed"}
    first = [run.items[f"p1/s1[{index}]"]["properties"] for index in range(3)]
    # The target ran once for the row: every candidate carries the very same figures of it.
    shared = ("reference_time_mean", "reference_time_std", "reference_speedup", "reference_ci_low", "reference_ci_high")
    assert {tuple(item[name] for name in shared) for item in first} == {tuple(first[0][name] for name in shared)}
    # ... and the slow program ran once a trial for all three: each candidate's ratio is paired
    # with the same runs of it (each item timed it again, issue 24).
    assert len({item["input_time_mean"] for item in first}) == 1
    # The first candidate is the target's own text: the target's runs are its runs.
    assert first[0]["speedup"] == first[0]["reference_speedup"]
    assert all(item["row_signal"].startswith("the target is measurably faster here: ") for item in first)
    second = run.items["p1/s2[0]"]["properties"]
    assert second["row_signal"].startswith("the target is not measurably faster here: ")
    run.result.stdout.fnmatch_lines(
        [
            "row signal: the target is measurably faster than the slow program on 1 of 2 rows (50%); 1 cannot "
            "discriminate here (their candidates are still graded against the slow program): p1/s2"
        ]
    )
    written = json.loads(report.read_text())
    reasons = {item["id"]: item["reason"] for item in written["items"]}
    assert "; row_signal: the target is not measurably faster here: " in reasons["p1/s2[0]"]
    assert "row_signal" not in reasons["p1/s1[0]"]
    metrics = written["metrics"]
    assert metrics["row_signal"] == {"rows": 2, "holds": 1, "share": 50.0, "without": ["p1/s2"]}
    pie_report = [json.loads(line) for line in (pytester.path / "out" / "report.jsonl").read_text().splitlines()]
    assert [(row["row_signal_holds"], row["reference_acc"]) for row in pie_report] == [(True, 1.0), (False, 1.0)]
    assert pie_report[1]["row_signal"] == second["row_signal"]


def test_a_candidate_that_only_changes_comments_made_no_edit(pytester: pytest.Pytester, pie: PieRun) -> None:
    # Real A/A (issue 24): such a candidate, timed, passed a 5% test as faster one time in twenty.
    renamed = SLOW.replace("total", "acc")  # the same work in other words: an edit, timed
    answers = [SLOW, "# optimised!\n" + SLOW + "\n\n", FAST, renamed, FAST, renamed + "# a comment\n"]
    config = write_pie(pytester.path, [{"input": SLOW, "generated_answers": answers}])
    run = pie(config)
    found = categories(run)
    assert [found[f"p1/s1[{index}]"] for index in (0, 1, 2, 4)] == ["not_faster", "not_faster", "passed", "passed"]
    assert "byte-identical to the slow program: no edit" in run.items["p1/s1[0]"]["message"]
    commented = run.items["p1/s1[1]"]
    assert "the slow program's code, comments and blank space aside: no edit" in commented["message"]
    assert commented["properties"]["metric"] == "none (identical)" and "trials" not in commented["properties"]
    # The renamed program is timed, as is the faster one; the two copies of it share its runs,
    # and so does the renamed one with a comment added, checked on its own text.
    renamed_timed = run.items["p1/s1[3]"]["properties"]
    assert "trials" in renamed_timed and "timed_as" not in renamed_timed
    assert run.items["p1/s1[2]"]["properties"]["speedup"] == run.items["p1/s1[4]"]["properties"]["speedup"]
    commented_rename = run.items["p1/s1[5]"]["properties"]
    assert commented_rename["speedup"] == renamed_timed["speedup"]
    assert commented_rename["timed_as"] == "another candidate's code, comments and blank space aside: its runs"


# "1if" is "1 if" to tokenize: a warning to the harness's Python, an error under -W error.
SLOW_IF = SLOW.replace("total += i", "total += i * 1 if i else 0")


def test_a_candidate_the_programs_interpreter_refuses_runs_though_it_reads_as_the_slow_program(
    pytester: pytest.Pytester, pie: PieRun
) -> None:
    # The harness's Python is not the programs' interpreter (another version, other flags): a
    # text of the slow program's form to the one may not compile in the other. It runs, and fails.
    references = [
        {"problem_id": "p1", "submission_id_v0": "s1", "language": "python", "input": SLOW_IF, "target": FAST}
    ]
    answers = [SLOW_IF + "# a comment\n", SLOW_IF.replace("1 if", "1if")]
    config = write_pie(pytester.path, [{"input": SLOW_IF, "generated_answers": answers}], references)
    run = pie(config, "--codebench-python", f"{sys.executable} -W error")
    assert categories(run) == {"p1/s1[0]": "not_faster", "p1/s1[1]": "runtime_error"}
    assert "the slow program's code, comments and blank space aside: no edit" in run.items["p1/s1[0]"]["message"]
    assert "invalid decimal literal" in run.items["p1/s1[1]"]["message"]


def test_a_slower_candidate_stops_once_no_trial_to_come_could_show_it_faster(
    pytester: pytest.Pytester, pie: PieRun
) -> None:
    config = write_pie(pytester.path, [{"input": SLOW, "generated_answers": [FAST, SLOWER]}])
    report, html = pytester.path / "codebench.json", pytester.path / "html"
    run = pie(config, "--codebench-report", str(report), "--codebench-html", str(html))
    assert categories(run) == {"p1/s1[0]": "passed", "p1/s1[1]": "not_faster"}
    slower = {item["id"]: item for item in json.loads(report.read_text())["items"]}["p1/s1[1]"]
    figures = slower["figures"]
    # 6 trials, the first ignored: "faster" needs all 5 kept ones above 1.0, so once three
    # are below it, neither the verdict nor the median's side (PIE's metrics) can change.
    assert figures["trials_stop"] == "futile" and figures["trials"] < 6
    assert figures["speedup"] < 1.0 and figures["ci_high"] is None  # no bound before the first look
    assert f"its timing stopped after {figures['trials']} of at most 6 trials" in slower["reason"]
    assert "[0.000, inf]" in slower["reason"]
    assert run.items["p1/s1[0]"]["properties"]["trials_stop"] == "above 1.1"
    assert (html / "index.html").exists()
    run.result.stdout.fnmatch_lines(["trials: * run * stopped at: above 1.1 (1), futile (1)*"])
