"""Conformance on NVIDIA's real ComputeEval releases, as the plugin resolves them by name.

The releases come from the nvidia-compute-eval wheel on PyPI, downloaded once per session into
the pytest cache (shared by xdist workers; a second run does not download again). Their license
forbids committing them, so nothing of them is written into the repository. Without PyPI the
tests skip, unless CODEBENCH_REQUIRE_RELEASES=1 (CI) makes them fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock
from hubserver import TOKEN, Hub

from pytest_codebench.benchmarks.computeeval.benchmark import ComputeEval
from pytest_codebench.benchmarks.computeeval.loading import hub
from pytest_codebench.benchmarks.computeeval.loading.releases import Resolved, resolve
from pytest_codebench.benchmarks.computeeval.sourcecode import missing_references
from pytest_codebench.benchmarks.records import archive_members
from pytest_codebench.context import RunContext, slug
from pytest_codebench.errors import HarnessError
from pytest_codebench.options import CORE_OPTIONS, Settings

RELEASES = ("2025-1", "2025-2", "2025-3", "2026-1")
# Problems graded per (release, group): 20 pairs, and 2025-1 has a single cublas problem, so 39;
# the newest release tops the sample up to MINIMUM. Each nvcc build takes 5-40 s; two at a time
# keep the four inner runs within about 6 minutes on 2 busy cores.
PER_GROUP = 2
MINIMUM = 40

# The outcomes a reference may have here: built, then skipped for want of a GPU; skipped before
# building for a requirement the problem states or a library the toolkit lacks; skipped because
# this machine cannot grade the problem (its reference fails here); or, where a GPU runs the
# test, passed or skipped by the test itself.
ACCEPTED_SKIPS = re.compile(
    r"no usable CUDA GPU; (build ok in|nothing to build)"
    r"|requires CUDA toolkit >= |requires compute capability |requires a data-centre GPU"
    r"|the CUDA toolkit here (cannot link|has no) lib|no CUDA toolkit"
    r"|this machine cannot grade "
    r"|the test skipped itself|the test exited 200"
)


@pytest.fixture(scope="session")
def release_cache(request: pytest.FixtureRequest) -> Path:
    """Where the wheel and the extracted datapacks live: the pytest cache when it is on."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("codebench-releases"))
    default = next(option.default for option in CORE_OPTIONS if option.name == "cache-dir")
    return Path(default)


@pytest.fixture(scope="session")
def releases(release_cache: Path) -> dict[str, Resolved]:
    """Every release, resolved as `--codebench-dataset NAME` would (downloaded once, under a
    file lock that the xdist workers share)."""
    try:
        return {name: resolve(name, release_cache, print) for name in RELEASES}
    except HarnessError as exc:
        if os.environ.get("CODEBENCH_REQUIRE_RELEASES"):
            pytest.fail(f"the real ComputeEval releases cannot be had: {exc}")
        pytest.skip(f"the real ComputeEval releases cannot be had (set CODEBENCH_REQUIRE_RELEASES=1 to fail): {exc}")


def problem_lines(path: Path) -> tuple[dict, list[bytes]]:
    with tarfile.open(path) as archive:
        metadata = json.loads(archive.extractfile("metadata.json").read())  # type: ignore[union-attr]
        lines = archive.extractfile("problems.jsonl").read().splitlines(keepends=True)  # type: ignore[union-attr]
    return metadata, lines


def spread_sample(
    packs: dict[str, list[tuple[str, str, str]]], per_group: int, minimum: int = 0
) -> dict[str, list[str]]:
    """For each release (in order) and each of its groups, the first ``per_group`` problems
    (task id, group, md5 of the line) not already picked for an earlier release: a release
    repeats many of the one before byte for byte, and grading those twice would teach nothing.
    Below ``minimum`` in all, the last release adds one more of each group, round after round."""
    picked: set[str] = set()
    sample: dict[str, list[str]] = {}
    for release, problems in packs.items():
        by_group: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for task_id, group, digest in problems:
            by_group[group].append((task_id, digest))
        chosen = []
        for members in by_group.values():
            fresh = [member for member in members if member[1] not in picked]
            for task_id, digest in (fresh + [m for m in members if m not in fresh])[:per_group]:
                picked.add(digest)
                chosen.append(task_id)
        sample[release] = chosen
    last = list(packs)[-1] if packs else None
    while last and sum(map(len, sample.values())) < minimum:
        spare: dict[str, list[str]] = defaultdict(list)
        for task_id, group, _ in packs[last]:
            if task_id not in sample[last]:
                spare[group].append(task_id)
        if not spare:
            break
        for members in spare.values():
            if sum(map(len, sample.values())) < minimum:
                sample[last].append(members[0])
    return sample


def test_the_spread_sample_covers_every_group_without_repeating_a_problem():
    packs = {
        "r1": [("A/1", "g", "a1"), ("A/2", "g", "a2"), ("A/3", "g", "a3"), ("B/1", "h", "b1")],
        "r2": [("A/1", "g", "a1"), ("A/2", "g", "a2"), ("A/3", "g", "a3"), ("B/1", "h", "b1"), ("C/1", "k", "c1")],
        "r3": [("A/1", "g", "a1-rewritten"), ("B/1", "h", "b1")],
    }
    assert spread_sample(packs, 2) == {
        "r1": ["A/1", "A/2", "B/1"],
        "r2": ["A/3", "A/1", "B/1", "C/1"],  # a group with too few new problems repeats the first
        "r3": ["A/1", "B/1"],
    }
    # Topped up from the last release, one more of each group per round.
    assert spread_sample(packs, 1, minimum=7)["r3"] == ["A/1", "B/1"]
    topped = spread_sample({"r1": packs["r1"], "r2": packs["r2"]}, 1, minimum=6)
    assert topped == {"r1": ["A/1", "B/1"], "r2": ["A/2", "B/1", "C/1", "A/1"]}


@pytest.fixture(scope="session")
def sample(releases: dict[str, Resolved]) -> dict[str, list[str]]:
    packs = {}
    for name, resolved in releases.items():
        lines = problem_lines(resolved.path)[1]
        records = [json.loads(line) for line in lines]
        packs[name] = [
            (r["task_id"], r["group"], hashlib.md5(line).hexdigest()) for r, line in zip(records, lines, strict=True)
        ]
    return spread_sample(packs, PER_GROUP, MINIMUM)


@pytest.mark.parametrize("release", RELEASES)
def test_every_problem_loads_verifies_and_materialises(release, releases, tmp_path, pytestconfig):
    path = releases[release].path
    metadata, lines = problem_lines(path)
    hashes = metadata.get("task_id_hashes") or {}
    settings = Settings({"dataset": str(path), "cache-dir": str(tmp_path / "cache")})
    context = RunContext.create(pytestconfig, settings, run_dir=tmp_path / "run")
    benchmark = ComputeEval(context)
    cases = benchmark.load().cases
    # Every line is a problem whose md5 was checked (a mismatch would set case.error).
    assert len(cases) == len(lines) == metadata["total_count"] == len(hashes)
    assert {case.task_id for case in cases} == set(hashes)
    problems: list[str] = []
    for case in cases:
        files = {f["path"]: f["content"] for f in (case.solution or {}).get("files", [])}
        try:
            missing = missing_references(files, case.record.get("source_references"))
        except ValueError as exc:
            missing = [f"source_references do not parse: {exc}"]
        workspace = tmp_path / "work" / slug(case.id)
        workspace.mkdir(parents=True)
        try:
            rejected = None if case.error else benchmark.prepare(case, workspace)
        except Exception as exc:  # noqa: BLE001 - every problem's trouble is listed, not the first
            rejected = f"{type(exc).__name__}: {exc}"
        written = [*(case.record.get("context_files") or []), *case.record["test_files"]]
        absent = sorted(p for p in {f["path"] for f in written} | set(files) if not (workspace / p).is_file())
        shutil.rmtree(workspace)
        for trouble in [case.error, *missing, rejected, f"not written: {absent}" if absent else None]:
            if trouble:
                problems.append(f"{case.id}: {trouble}")
    assert not problems, f"{len(problems)} of {len(cases)} problems of {release}:\n" + "\n".join(problems[:50])


# Where a verdict's reason differs only in a duration ("build ok in 12.3 s").
_NUMBERS = re.compile(r"\d+(\.\d+)?")


def _grade(folder: Path, release: str, cache: Path, *more: str) -> tuple[str, dict]:
    """``pytest --codebench=computeeval`` on ``release``'s references in ``folder``, in this
    process's environment: its output and its JSON report (asserted written)."""
    report = folder / "report.json"
    command = [sys.executable, "-m", "pytest", "--codebench=computeeval", f"--codebench-dataset={release}"]
    command += ["--codebench-solutions=baseline", f"--codebench-cache-dir={cache}", f"--codebench-report={report}"]
    # --codebench-store=off: each run grades for itself (the cache outlives the session). Its
    # own --basetemp, as pytester gives an inner run: pytest's numbered folders are the outer run's.
    command += ["--codebench-store=off", "-p", "no:cacheprovider", f"--basetemp={folder / 'basetemp'}", *more]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    assert report.exists(), output[-6000:]
    return output, json.loads(report.read_text())


def _verdicts(data: dict, task_ids: list[str]) -> dict:
    """The release and each of ``task_ids``' verdicts in a JSON report, durations taken out."""
    items = {item["task_id"]: item for item in data["items"]}
    verdicts = {
        task_id: (items[task_id]["status"], _NUMBERS.sub("N", items[task_id]["reason"] or "")) for task_id in task_ids
    }
    return {"release": data["environment"]["release"], "items": verdicts}


@pytest.fixture(scope="session")
def graded(sample: dict[str, list[str]], release_cache: Path, shared_tmp: Path) -> Callable[[str], dict]:
    """``graded(release)``: the JSON report of the sample's references of ``release`` graded
    through the wheel, once per test run: the reference test and the hub test both read it (the
    xdist workers share it under a file lock; each nvcc build takes 5-40 s)."""

    def grade(release: str) -> dict:
        folder = shared_tmp / "conformance" / release
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(folder.with_suffix(".lock")):
            if not (folder / "report.json").exists():
                keyword = " or ".join(f"{task_id}[0]" for task_id in sample[release])
                _grade(folder, release, release_cache, "-n", "2", "-k", keyword)
            return json.loads((folder / "report.json").read_text())

    return grade


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_reference_solutions_build_or_skip_for_a_stated_reason(release, releases, sample, graded):
    chosen = sample[release]
    data = graded(release)
    assert data["environment"]["release"]["version"] == releases[release].version
    items = {item["task_id"]: item for item in data["items"]}
    assert sorted(items) == sorted(chosen), "the -k selection must pick exactly the sample"
    wrong = [
        f"{task_id}: {item['status']} ({item['outcome']}): {(item['reason'] or '').splitlines()[0:1]}"
        for task_id, item in sorted(items.items())
        if item["status"] in ("failed", "error")
        or (item["status"] == "skipped" and not ACCEPTED_SKIPS.match(item["reason"] or ""))
    ]
    assert not wrong, f"references of {release} that did not build or skip for a stated reason:\n" + "\n".join(wrong)
    # The link check (guard.link) read every built reference's test program and refused
    # none: on NVIDIA's own references a refusal is a false positive of its rules.
    refused = [
        f"{task_id}: {item['reason']}" for task_id, item in items.items() if "tampered: " in (item["reason"] or "")
    ]
    assert not refused, "references the link check refused:\n" + "\n".join(refused)
    built = [item for item in items.values() if "build ok in" in (item["reason"] or "") or item["status"] == "passed"]
    read = sum(int(item["figures"].get("linked_programs", 0)) for item in built)
    assert read >= 1 or not built, "the link check read no built test program"


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_the_hub_path_gives_the_same_problems_and_verdicts_as_the_wheel(
    release, releases, sample, graded, pytester, monkeypatch, request
):
    """Done when of issue 23: the wheel's release reshaped into the dataset's layout
    (data/archive/<release>/problems.jsonl, bare JSON lines) and served by a Hub of our own
    reads as the same problems (content hashes) and grades to the same verdicts."""
    data = archive_members(releases[release].path, ["problems.jsonl"])["problems.jsonl"]
    # Every problem is compared by content; one (the sample's first) is graded through the Hub
    # and compared with its verdict through the wheel (the reference test's run), which keeps
    # the four releases to about a minute of nvcc on CI.
    chosen = [sample[release][0]]
    wheel = _verdicts(graded(release), chosen)
    with Hub(hub.REPO) as server:
        server.publish({hub.filename(release): data})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(pytester.path / "hf-home"))
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        # No wheel here and pip's index dead: the Hub is the only place left.
        request.getfixturevalue("dead_index")
        output, report = _grade(pytester.path, release, pytester.path / "empty-cache", "-k", f"{chosen[0]}[0]")
    hubbed = _verdicts(report, chosen)
    assert f"from {hub.REPO}:data/archive/{release}/problems.jsonl, revision {server.commit}" in output
    assert (hubbed["release"]["source"], hubbed["release"]["revision"]) == ("hugging face hub", server.commit)
    assert "may predate NVIDIA's in-place corrections" not in output
    assert hubbed["release"]["problem_sha256"] == wheel["release"]["problem_sha256"]
    assert len(wheel["release"]["problem_sha256"]) == len(data.splitlines())
    assert [item["task_id"] for item in report["items"]] == chosen
    assert hubbed["items"] == wheel["items"]
