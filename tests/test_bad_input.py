"""Bad input gets one clear error naming the file, line and field; never a traceback, and one
bad record never takes the others down."""

from __future__ import annotations

import json

import packs
import pytest

FORCE = "--codebench-run-without-gpu"


def assert_no_traceback(run) -> None:
    assert "Traceback" not in run.output and "INTERNALERROR" not in run.output


def test_bad_solution_lines_error_alone(pytester, codebench):
    dataset = packs.write_problems(pytester.path / "p.tar.gz", [packs.problem("T/1"), packs.problem("T/2")])
    lines = [
        json.dumps(packs.solution("T/1")),
        "{not json",
        json.dumps({"schema_version": 1, "type": "file", "files": []}),
        json.dumps(packs.solution("NOPE/9")),
        json.dumps({"task_id": "T/2", "files": [{"path": "solution.c"}]}),
        json.dumps({"task_id": "T/2", "type": "patch", "patch": "--- a\n+++ b\n"}),
        json.dumps(packs.solution("T/2")),
    ]
    solutions = pytester.path / "answers.jsonl"
    solutions.write_text("\n".join(lines) + "\n")
    run = codebench("--codebench-dataset", str(dataset), "--codebench-solutions", str(solutions), FORCE)
    assert_no_traceback(run)
    status = {name: item["status"] for name, item in run.items.items()}
    assert status == {
        "T/1[0]": "passed",
        "T/2[0]": "error",
        "T/2[1]": "failure",  # a patch solution that does not apply: the model's
        "T/2[2]": "passed",
        "answers.jsonl:2[0]": "error",
        "answers.jsonl:3[0]": "error",
        "NOPE/9[0]": "error",
    }
    message = {name: item["message"] for name, item in run.items.items()}
    assert f"{solutions}:2: not valid JSON" in message["answers.jsonl:2[0]"]
    assert f"{solutions}:3: field 'task_id': missing" in message["answers.jsonl:3[0]"]
    assert f"{solutions}:4: field 'task_id': 'NOPE/9' is not a task of the dataset" in message["NOPE/9[0]"]
    assert f"{solutions}:5: field 'files[0].content': missing" in message["T/2[0]"]
    assert run.outcome("T/2[1]") == "invalid_solution" and "patch does not apply" in message["T/2[1]"]
    run.result.assert_outcomes(passed=2, failed=1, errors=4)


def test_bad_problem_lines_and_integrity_mismatch(pytester, codebench):
    good, tampered = packs.problem("T/1"), packs.problem("T/2")
    dataset = packs.write_problems(pytester.path / "p.tar.gz", [good, tampered])
    # Rewrite T/2's line after hashing: its md5 no longer matches metadata.json.
    members = packs.read_archive(dataset)
    first, second = members["problems.jsonl"].splitlines(keepends=True)
    problems = first + second.replace(b"./test.out", b"true")
    problems += b'{"task_id": "T/3", "test_files": []}\n' + b"[1, 2]\n"
    packs.write_archive(dataset, {**members, "problems.jsonl": problems})
    run = codebench("--codebench-dataset", str(dataset), FORCE)
    assert_no_traceback(run)
    assert run.items["T/1[0]"]["status"] == "passed"
    assert run.items["T/2[0]"]["status"] == "error"
    assert "task 'T/2' fails its integrity check" in run.items["T/2[0]"]["message"]
    assert f"{dataset}:problems.jsonl:3: field 'test_command': missing" in run.items["T/3[0]"]["message"]
    assert f"{dataset}:problems.jsonl:4: not a JSON object" in run.items["problems.jsonl:4"]["message"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not a tarball", "not a readable .tar.gz datapack"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 20, "not a readable .tar.gz datapack"),
        (None, "the datapack has no problems.jsonl"),
    ],
    ids=["garbage", "truncated-gzip", "missing-member"],
)
def test_corrupt_archives_are_one_clear_collection_error(pytester, codebench, content, message):
    dataset = pytester.path / "broken-problems.tar.gz"
    if content is None:
        packs.write_archive(dataset, {"metadata.json": b"{}"})
    else:
        dataset.write_bytes(content)
    run = codebench("--codebench-dataset", str(dataset))
    assert_no_traceback(run)
    # pytest stops on a collection error (xdist reports it as a failed run).
    assert run.result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)
    run.result.stdout.fnmatch_lines([f"{dataset}: {message}*", "*1 error*"])


def test_missing_paths_are_usage_errors(pytester, codebench):
    run = codebench("--codebench-dataset", str(pytester.path / "nope.tar.gz"))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "does not exist" in run.output
    dataset = packs.write_problems(pytester.path / "p.tar.gz", [packs.problem("T/1")])
    run = codebench("--codebench-dataset", str(dataset), "--codebench-solutions", "missing.jsonl")
    assert_no_traceback(run)
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--codebench-solutions: missing.jsonl: no such file" in run.output


def test_unknown_benchmark_and_bad_option_values(pytester):
    result = pytester.runpytest("--codebench=nosuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown benchmark 'nosuch'; installed: computeeval*"])


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (["--codebench-k", "one"], "ERROR: --codebench-k=one: not an integer: 'one'"),
        (["--codebench-output-limit=-5"], "ERROR: --codebench-output-limit=-5: must be above 0, not -5"),
        (["--codebench-pie-metric=speed"], "ERROR: --codebench-pie-metric=speed: expected one of wall, instructions*"),
        ({"CODEBENCH_K": "0"}, "ERROR: CODEBENCH_K (environment)=0: must be above 0, not 0"),
        ("codebench_k = 1 ten", "ERROR: codebench_k (ini)=1 ten: not an integer: 'ten'"),
        ("codebench_output_limit = lots", "ERROR: codebench_output_limit (ini): invalid literal for int()*"),
        (
            "codebench_keep_workspaces = perhaps",
            "ERROR: codebench_keep_workspaces (ini): invalid truth value 'perhaps'",
        ),
    ],
    ids=["flag", "negative", "choice", "environment", "ini-list", "ini-int", "ini-bool"],
)
def test_a_bad_setting_stops_the_run_before_anything_is_graded(pytester, monkeypatch, where, message):
    # One usage error naming the option and where it was set; no item collected or graded.
    args: list[str] = []
    if isinstance(where, dict):
        for name, value in where.items():
            monkeypatch.setenv(name, value)
    elif isinstance(where, str):
        pytester.makeini(f"[pytest]\n{where}\n")
    else:
        args = where
    result = pytester.runpytest_subprocess("--codebench=computeeval", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "collected" not in result.stdout.str() and not (pytester.path / ".codebench" / "runs").exists()


def test_every_flag_has_a_no_form_and_ini_values_carry_their_types(pytester, codebench):
    dataset = packs.write_problems(pytester.path / "p.tar.gz", [packs.problem("T/1")])
    pytester.makeini("[pytest]\ncodebench_keep_workspaces = true\ncodebench_k = 1\ncodebench_output_limit = 4096\n")
    report = pytester.path / "report.json"
    run = codebench("--codebench-dataset", str(dataset), FORCE, "--codebench-report", str(report))
    options = json.loads(report.read_text())["options"]
    assert options["keep-workspaces"] is True and options["k"] == [1] and options["output-limit"] == 4096
    assert list((pytester.path / ".codebench" / "runs").glob("*/work/T_1_0"))  # kept, as the ini says
    run = codebench(
        "--codebench-dataset", str(dataset), FORCE, "--codebench-report", str(report), "--no-codebench-keep-workspaces"
    )
    assert json.loads(report.read_text())["options"]["keep-workspaces"] is False
    assert run.outcome("T/1[0]") == "passed"


def test_a_plain_problems_jsonl_is_accepted_unverified(pytester, codebench):
    dataset = pytester.path / "problems.jsonl"
    dataset.write_bytes(packs.jsonl([packs.problem("T/1")]))
    run = codebench("--codebench-dataset", str(dataset), FORCE)
    assert run.items["T/1[0]"]["properties"]["category"] == "passed"
    assert "dataset_release" not in run.items["T/1[0]"]["properties"]
