"""``codebench launch slurm|k8s``: the array job that grades a plan's parts on a cluster, and the
merge after it. Slurm's is submitted to a real cluster on loopback (tests/slurm_cluster.py):
its merged report must be the single-machine run's; an element killed halfway and requeued
still ends whole; a part that never ran leaves the merge incomplete (exit 3), naming it.
Kubernetes' Job objects are checked against the API's models offline, and one element's
command runs here as a pod would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from slurm_cluster import Cluster
from test_merge import FIGURES, _outcomes, _sweep

ARGS_WITH_SPACES = ["-k", "T/0 or T/1 or T/2 or T/3 or T/4 or T/5 or T/6 or T/7"]  # every task, said with spaces


# An element's grader, slowed: a second after each item, which it names in graded.txt.
SLOW_ITEMS = """
import time

def pytest_runtest_logfinish(nodeid, location):
    time.sleep(1)
    with open("graded.txt", "a") as graded:
        graded.write(nodeid.replace(" ", "_") + "\\n")
"""


def _codebench(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_codebench", *args]
    clean = {key: value for key, value in (env or os.environ).items() if not key.startswith("PYTEST_")}
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=folder, env=clean)


def _single_run_and_plan(pytester: pytest.Pytester, parts: int, whole: bool = True) -> list[str]:
    """The sweep's arguments (with a -k that keeps every task, spaces and all), graded on this
    machine into whole.json (where ``whole``), and planned into ``parts`` parts (plan.json)."""
    args = ["--codebench=computeeval", *_sweep(pytester.path), *ARGS_WITH_SPACES]
    if whole:
        single = pytester.runpytest_subprocess(*args, "--codebench-report", "whole.json", "--codebench-store", "off")
        assert (pytester.path / "whole.json").is_file(), single.stdout.str()
    planned = _codebench(pytester.path, "plan", "--parts", str(parts), "-o", "plan.json", "--", *args)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    return args


def _same_as_whole(folder: Path, report: Path) -> None:
    whole = json.loads((folder / "whole.json").read_text())
    merged = json.loads(report.read_text())
    for key in FIGURES:
        assert merged[key] == whole[key], key
    assert _outcomes(merged) == _outcomes(whole)


def _launch(cluster: Cluster, folder: Path, args: list[str], *options: str) -> dict[str, str]:
    done = _codebench(folder, "launch", "slurm", "--submit", "--plan", "plan.json", "--out", "out", *options,
                      "--", *args, env=cluster.env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "submitted: array job" in done.stdout
    return dict(json.loads((folder / "out" / "jobs.json").read_text()))


def _job(cluster: Cluster, job: str) -> str:
    return cluster.run("scontrol", "show", "job", job).stdout


# -- Slurm, for real ------------------------------------------------------------------------------


@pytest.mark.slow  # a real Slurm cluster, its jobs queued and run
def test_a_slurm_array_of_three_parts_merges_into_exactly_the_single_machine_run(
    pytester: pytest.Pytester, slurm: Cluster
) -> None:
    args = _single_run_and_plan(pytester, 3)
    jobs = _launch(slurm, pytester.path, args, "--gpus", "1", "--parallel", "2", "--time", "10")
    script = (pytester.path / "out" / "parts.sbatch").read_text()
    assert "#SBATCH --array=0-2%2" in script and "#SBATCH --gres=gpu:1" in script and "--requeue" in script
    slurm.wait_gone(jobs["merge"], timeout=600)
    out = pytester.path / "out"
    assert (out / "report.json").is_file(), (out / "merge.out").read_text() + slurm.logs()
    _same_as_whole(pytester.path, out / "report.json")
    assert "ExitCode=0:0" in _job(slurm, jobs["merge"])
    plan = json.loads((out / "plan.json").read_text())
    for index, tasks in enumerate(plan["parts"]):
        part = json.loads((out / "parts" / f"{index}.json").read_text())
        assert {item["task_id"] for item in part["items"]} == set(tasks)
        assert part["plan_part"]["index"] == index
        with tarfile.open(out / "parts" / f"{index}.logs.tar.gz") as logs:
            assert any(name.startswith(f"{index}.run/") for name in logs.getnames())
        # Each element had a GPU of the node's two, as --gres asked.
        assert "TresPerNode=gres:gpu:1" in _job(slurm, f"{jobs['parts']}_{index}")
    assert "junit: " in (out / "merge.out").read_text() and (out / "report.xml").is_file()


@pytest.mark.slow  # a real Slurm cluster, its jobs queued and run
def test_an_element_killed_halfway_and_requeued_still_ends_whole(pytester: pytest.Pytester, slurm: Cluster) -> None:
    args = _single_run_and_plan(pytester, 2)
    # One element at a time, each item slowed by a second, so that element 0 is caught with
    # part of its part graded (the store keeps those verdicts: the second try grades the rest).
    pytester.makeconftest(SLOW_ITEMS)
    jobs = _launch(slurm, pytester.path, args, "--parallel", "1")
    element, out = f"{jobs['parts']}_0", pytester.path / "out"
    log, graded = out / "parts" / "0.out", pytester.path / "graded.txt"
    end = time.monotonic() + 300
    while time.monotonic() < end and len(graded.read_text().split() if graded.exists() else []) < 2:
        time.sleep(0.2)
    assert slurm.job_states(jobs["parts"]).get(element) == "RUNNING", slurm.logs()
    requeued = slurm.run("scontrol", "requeue", element)
    assert requeued.returncode == 0, requeued.stderr
    # Slurm holds a requeued job back for a while (its BeginTime) once it is pending again:
    # let it start now.
    end = time.monotonic() + 120
    while time.monotonic() < end and slurm.job_states(jobs["parts"]).get(element) != "PENDING":
        time.sleep(0.2)
    slurm.run("scontrol", "update", f"jobid={element}", "StartTime=now")
    slurm.wait_gone(jobs["merge"], timeout=600)
    assert "DUE TO JOB REQUEUE" in log.read_text() and "Restarts=1" in _job(slurm, element)
    assert log.read_text().count("codebench: part 0 of plan.json") == 2  # both tries, appended
    assert (out / "report.json").is_file(), (out / "merge.out").read_text()
    _same_as_whole(pytester.path, out / "report.json")
    # The second try graded only what the first had not: the rest came from the verdict store.
    assert json.loads((out / "parts" / "0.json").read_text())["reused"]["cached"] >= 1


@pytest.mark.slow  # a real Slurm cluster, its jobs queued and run
def test_a_part_that_never_ran_leaves_the_merge_job_incomplete_naming_it(
    pytester: pytest.Pytester, slurm: Cluster
) -> None:
    args = _single_run_and_plan(pytester, 3, whole=False)
    jobs = _launch(slurm, pytester.path, args, "--parallel", "1")
    cancelled = slurm.run("scancel", f"{jobs['parts']}_2")  # still pending: one element at a time
    assert cancelled.returncode == 0, cancelled.stderr
    slurm.wait_gone(jobs["merge"], timeout=600)
    out = pytester.path / "out"
    plan = json.loads((out / "plan.json").read_text())
    said = (out / "merge.out").read_text()
    assert f"part 2 is missing (no report): {len(plan['parts'][2])} tasks ({', '.join(plan['parts'][2])})" in said
    assert "ExitCode=3:0" in _job(slurm, jobs["merge"]) and not (out / "report.json").exists()
    assert (out / "parts" / "0.json").is_file() and (out / "parts" / "1.json").is_file()  # the control


# -- without a cluster ----------------------------------------------------------------------------


@pytest.mark.parametrize(("engine", "tool"), [("slurm", "sbatch"), ("k8s", "kubectl")])
def test_submit_without_the_engines_command_is_one_usage_error_naming_it(
    tmp_path: Path, engine: str, tool: str
) -> None:
    (tmp_path / "plan.json").write_text(json.dumps({"format": 1, "made_for": {"benchmark": "pie"}, "parts": [["a"]]}))
    env = {**os.environ, "PATH": str(tmp_path / "nothing")}
    options = ["--plan", "plan.json", "--out", "out", *(["--image", "img"] if engine == "k8s" else []), "--", "-x"]
    done = _codebench(tmp_path, "launch", engine, "--submit", *options, env=env)
    assert done.returncode == 2 and f"--submit needs {tool}, which is not on PATH" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    written = _codebench(tmp_path, "launch", engine, *options, env=env)  # the control: no --submit
    assert written.returncode == 0, written.stderr
    assert "to submit:" in written.stdout and tool in written.stdout


def test_the_runs_page_is_drawn_once_by_the_merge_not_by_each_element(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text(json.dumps({"format": 1, "made_for": {"benchmark": "pie"}, "parts": [["a"]]}))
    options = ["--plan", "plan.json", "--out", "out", "--", "-k", "a b", "--codebench-html", "my page"]
    done = _codebench(tmp_path, "launch", "slurm", *options)
    assert done.returncode == 0, done.stderr
    element, merge = (tmp_path / "out" / "parts.sbatch").read_text(), (tmp_path / "out" / "merge.sbatch").read_text()
    assert "--codebench-html" not in element and "-k 'a b'" in element
    assert 'merge --plan "$OUT/plan.json" -o "$OUT/report.json" --html \'my page\' ' in merge


def _checked_by_kubernetes(job: dict[str, Any]) -> None:
    """The object read by the Kubernetes client's own V1Job model and written back unchanged:
    a field the API lacks, or a value of the wrong type, would not come back as it was."""
    try:
        from kubernetes import client  # type: ignore[import-untyped]
    except ImportError:
        if os.environ.get("CODEBENCH_REQUIRE_KUBERNETES"):
            pytest.fail("the kubernetes client is not installed: pip install kubernetes")
        pytest.skip("the kubernetes client (pip install kubernetes) checks the Job objects against the API's models")

    api = client.ApiClient()
    model = api.deserialize(json.dumps(job), "V1Job", "application/json")
    assert api.sanitize_for_serialization(model) == job


def test_a_kubernetes_indexed_job_is_valid_and_its_element_grades_its_part_here(pytester: pytest.Pytester) -> None:
    args = _single_run_and_plan(pytester, 3)
    done = _codebench(pytester.path, "launch", "k8s", "--plan", "plan.json", "--out", "out", "--gpus", "1",
                      "--parallel", "2", "--image", "registry.example/codebench:1", "--", *args)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = pytester.path / "out"
    job, merge = (yaml.safe_load((out / name).read_text()) for name in ("job.yaml", "merge-job.yaml"))
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 2)
    assert spec["backoffLimitPerIndex"] >= 1 and spec["template"]["spec"]["restartPolicy"] == "Never"
    container = spec["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert container["image"] == "registry.example/codebench:1"
    assert {volume["name"] for volume in spec["template"]["spec"]["volumes"]} == {"data", "results"}
    for obj in (job, merge):
        _checked_by_kubernetes(obj)

    # One element's command, as its pod runs it: the data volume as working directory, OUT the
    # results volume, its index from JOB_COMPLETION_INDEX.
    pod_env = {item["name"]: item["value"] for item in container["env"]}
    env = {**os.environ, **pod_env, "OUT": str(out), "PYTHON": sys.executable, "JOB_COMPLETION_INDEX": "1"}
    env = {key: value for key, value in env.items() if not key.startswith("PYTEST_")}
    element = subprocess.run(container["command"], cwd=pytester.path, env=env, capture_output=True, text=True,
                             timeout=300, check=False)  # fmt: skip
    assert element.returncode == 0, element.stdout + element.stderr  # the mixed model's failures are verdicts
    plan = json.loads((out / "plan.json").read_text())
    part = json.loads((out / "parts" / "1.json").read_text())
    assert {item["task_id"] for item in part["items"]} == set(plan["parts"][1])
    assert (out / "parts" / "1.logs.tar.gz").is_file() and (out / "parts" / "1.xml").is_file()
    # The merge Job's command, with parts 0 and 2 never run: incomplete, naming them.
    merge_command = merge["spec"]["template"]["spec"]["containers"][0]["command"]
    merged = subprocess.run(merge_command, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120,
                            check=False)  # fmt: skip
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert "part 0 is missing (no report)" in merged.stderr and "part 2 is missing" in merged.stderr


def test_a_folder_that_holds_another_plans_parts_is_refused_and_the_same_plan_launches_again(tmp_path: Path) -> None:
    plan = {"format": 1, "made_for": {"benchmark": "pie"}, "parts": [["a"], ["b"]]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    options = ["--out", "out", "--", "--codebench=pie"]
    assert _codebench(tmp_path, "launch", "slurm", "--plan", "plan.json", *options).returncode == 0
    (tmp_path / "out" / "parts" / "0.json").write_text("{}")  # part 0 reported; part 1 still to grade
    again = _codebench(tmp_path, "launch", "slurm", "--plan", "plan.json", *options)
    assert again.returncode == 0, again.stderr  # the control: the same plan, for its missing parts
    (tmp_path / "other.json").write_text(json.dumps({**plan, "parts": [["a", "b"]]}))
    other = _codebench(tmp_path, "launch", "slurm", "--plan", "other.json", *options)
    assert other.returncode == 2 and "holds 1 part reports of another plan" in other.stderr
    assert json.loads((tmp_path / "out" / "plan.json").read_text()) == plan  # left as it was
