"""ComputeEval releases from the Hugging Face dataset, through the real ``huggingface_hub``
client talking to a Hub of our own on loopback (tests/hubserver.py) that requires a token: online,
from the warm cache offline, and the two ways it cannot work, each one clear error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import packs
import pytest
from hubserver import TOKEN, Hub

from pytest_codebench.benchmarks.computeeval.loading import hub
from pytest_codebench.sweeps.verdict_keys import digest

FORCE = "--codebench-run-without-gpu"  # the problems are host-only C: they grade without a GPU


# A test that checks nothing: H/1 "corrected" to it makes the model's wrong answer pass.
LENIENT = '#include "add.h"\nint main(void) { return add(2, 3) * 0; }\n'


def _problems(h1_test: str = packs.TEST) -> list[dict]:
    return [
        packs.problem("H/0", min_cuda_toolkit=None),
        packs.problem("H/1", min_cuda_toolkit=None, test_files=[{"path": "test/test_main.c", "content": h1_test}]),
    ]


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Hub]:
    """The Hub, serving 2026-2; the inner pytest (and its xdist workers) sees it through
    HF_ENDPOINT, with a token and an empty Hugging Face home of its own."""
    with Hub(hub.REPO) as server:
        server.publish({"data/problems.jsonl": packs.jsonl(_problems())})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


def _args(pytester: pytest.Pytester, report: str, *more: str) -> list[str]:
    # The model's answers: H/0 right, H/1 wrong (a failure that the store keeps).
    answers = [packs.solution("H/0", packs.RIGHT), packs.solution("H/1", packs.WRONG)]
    solutions = str(packs.write_solutions(pytester.path / "answers-solutions.tar.gz", answers))
    cache = str(pytester.path / "cache")
    return [
        *("--codebench-dataset", "2026-2", "--codebench-solutions", solutions, "--codebench-cache-dir", cache),
        f"--codebench-report={report}",
        *more,
    ]


def _report(pytester: pytest.Pytester, name: str) -> dict:
    return json.loads((pytester.path / name).read_text())


def test_a_release_downloads_with_a_token_and_grades_the_same_offline_from_the_warm_cache(
    hub_server, pytester, codebench, monkeypatch
):
    online = codebench(*_args(pytester, "online.json", FORCE, "--codebench-store=off"))
    online.result.assert_outcomes(passed=1, failed=1)
    online.result.stdout.fnmatch_lines([f"codebench: ComputeEval release 2026-2 from {hub.REPO}:data/problems.jsonl*"])
    release = _report(pytester, "online.json")["environment"]["release"]
    assert release["source"] == "hugging face hub" and release["revision"] == hub_server.commit
    assert release["problem_sha256"] == {p["task_id"]: digest(p) for p in _problems()}
    assert any("resolve/main/data/problems.jsonl" in request for request in hub_server.requests)

    hub_server.stop()  # no Hub any more, and the client told not to look for one
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = codebench(*_args(pytester, "offline.json", FORCE, "--codebench-store=off"))
    offline.result.assert_outcomes(passed=1, failed=1)
    assert offline.items.keys() == online.items.keys()
    assert all(offline.outcome(name) == online.outcome(name) for name in online.items)
    assert _report(pytester, "offline.json")["environment"]["release"] == release


def test_without_a_token_the_gated_dataset_is_one_error_naming_hf_token(hub_server, pytester, codebench, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    run = codebench(*_args(pytester, "r.json"))
    assert run.result.ret != 0 and not run.items
    assert "refused access to the gated dataset, with no token (HF_TOKEN is not set)" in run.output
    assert "set HF_TOKEN to a token of that account or run `hf auth login`" in run.output
    assert "Traceback" not in run.output


def test_offline_with_no_cache_is_one_error_saying_what_to_run_where(pytester, codebench, monkeypatch, tmp_path):
    home = tmp_path / "empty-hf-home"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # never asked: offline
    run = codebench(*_args(pytester, "r.json"))
    assert run.result.ret != 0 and not run.items
    assert "offline mode is on (HF_HUB_OFFLINE)" in run.output
    assert (
        f"On a machine with network run `hf download {hub.REPO} data/problems.jsonl --repo-type dataset`" in run.output
    )
    assert f"point HF_HOME at it (here it is {home})" in run.output
    assert "Traceback" not in run.output


def test_a_problem_corrected_in_place_is_graded_again_and_an_unchanged_one_comes_from_the_store(
    hub_server, pytester, codebench
):
    first = codebench(*_args(pytester, "first.json", FORCE))
    first.result.assert_outcomes(passed=1, failed=1)
    before = _report(pytester, "first.json")["environment"]["release"]
    # NVIDIA fixes H/1 in place: same release name, a new commit, H/0 untouched.
    hub_server.publish({"data/problems.jsonl": packs.jsonl(_problems(LENIENT))})
    second = codebench(*_args(pytester, "second.json", FORCE))
    second.result.assert_outcomes(passed=2)
    report = _report(pytester, "second.json")
    after = report["environment"]["release"]
    assert after["revision"] == hub_server.commit != before["revision"]
    assert after["problem_sha256"]["H/0"] == before["problem_sha256"]["H/0"]
    assert after["problem_sha256"]["H/1"] != before["problem_sha256"]["H/1"]
    assert report["reused"]["cached"] == 1
    assert second.items["H/0[0]"]["properties"].get("cached") == "true"
    assert "cached" not in second.items["H/1[0]"]["properties"]


# -- pure rules ------------------------------------------------------------------------------------


def test_release_names_map_to_the_datasets_files():
    assert hub.filename("2026-2") == "data/problems.jsonl"
    assert hub.filename("2025-1") == "data/archive/2025-1/problems.jsonl"


def test_the_revision_is_the_snapshot_folder_of_the_clients_cache():
    sha = "a" * 40
    path = Path(f"/h/hub/datasets--nvidia--compute-eval/snapshots/{sha}/data/problems.jsonl")
    assert hub.revision_of(path) == sha
    assert hub.revision_of(Path("/elsewhere/problems.jsonl")) is None


def test_an_older_release_comes_from_the_hub_before_any_wheel_and_offline_from_its_cache(
    hub_server, pytester, codebench, monkeypatch, dead_index
):
    # NVIDIA corrects releases in place on the Hub: its copy wins over the 2026.1 wheel's, which
    # pip would find here (its only index is a port nothing listens on: asking it would show).
    hub_server.publish({"data/archive/2025-1/problems.jsonl": packs.jsonl(_problems())})
    args = [a.replace("2026-2", "2025-1") for a in _args(pytester, "r.json", FORCE, "--codebench-store=off")]
    first = codebench(*args)
    first.result.assert_outcomes(passed=1, failed=1)
    assert "package index" not in first.output and "cannot give release" not in first.output
    assert _report(pytester, "r.json")["environment"]["release"]["revision"] == hub_server.commit
    # Offline, the client's cache answers, still before any wheel.
    hub_server.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = codebench(*args)
    again.result.assert_outcomes(passed=1, failed=1)
    assert "package index" not in again.output and "cannot give release" not in again.output
    assert _report(pytester, "r.json")["environment"]["release"]["source"] == "hugging face hub"
