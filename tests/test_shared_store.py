"""``--codebench-store s3://BUCKET/PREFIX``: the verdict store a cluster shares, tested against
a real S3-protocol server on loopback (moto in server mode): each verdict written once, two
nodes and concurrent writers agreeing on the winner, another node served what one graded, a
store out of reach a usage error, a store gone mid-run costing only its reuse, and the
credentials never reaching a model's command."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import packs
import pytest

from conftest import Run
from pytest_codebench.sweeps.shared_store import SharedStore, _file_credentials
from pytest_codebench.sweeps.store import Stored, StoreError, VerdictStore
from pytest_codebench.sweeps.store_url import parse_url
from pytest_codebench.verdict import Outcome, Verdict

TASKS = [f"T/{n}" for n in range(4)]
SECRET = "codebench-test-secret-0451"


def _missing() -> str | None:
    for module, package in (("moto.server", "moto[server]"), ("obstore", "obstore")):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"{package} is not installed (pip install 'moto[server]' obstore)"
    return None


@pytest.fixture(autouse=True)
def _needs_s3() -> None:
    why = _missing()
    if why is not None:
        if os.environ.get("CODEBENCH_REQUIRE_S3"):
            pytest.fail(f"CODEBENCH_REQUIRE_S3 is set, but {why}")
        pytest.skip(why)


class S3Server:
    """moto's S3 server on a loopback port, as its own process."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        log = (folder / f"moto-{self.port}.log").open("w")
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto's server did not start: {(folder / f'moto-{self.port}.log').read_text()}")
            time.sleep(0.1)

    def answers(self) -> bool:
        try:
            urllib.request.urlopen(self.endpoint, timeout=1).close()
        except OSError:
            return False
        return True

    def bucket(self, name: str) -> str:
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{name}", method="PUT"), timeout=10).close()
        return name

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    server = S3Server(tmp_path)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "codebench")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    yield server
    server.stop()


def _node(folder: Path, url: str) -> SharedStore:
    """One machine's view: its own local file in front of the shared bucket."""
    return SharedStore(url, VerdictStore(folder / "verdicts.sqlite3"))


# -- the store --------------------------------------------------------------------------------


def test_a_url_names_a_bucket() -> None:
    assert parse_url("s3://verdicts/cluster/a") == ("verdicts", "cluster/a")
    assert parse_url("s3://verdicts") == ("verdicts", "")
    for bad in ("s3://", "s3:///prefix", "s3://A_B/x"):
        with pytest.raises(ValueError, match="expected s3://BUCKET/PREFIX"):
            parse_url(bad)


def test_keys_come_from_the_shared_files_only_where_the_environment_has_none(tmp_path: Path) -> None:
    (tmp_path / "credentials").write_text("[default]\naws_access_key_id = d\n[ci]\naws_access_key_id = c\n"
                                          "aws_secret_access_key = cs\n")  # fmt: skip
    (tmp_path / "config").write_text("[profile ci]\nregion = eu-west-1\n")
    files = {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"), "AWS_CONFIG_FILE": str(tmp_path / "config")}
    found = _file_credentials({**files, "AWS_PROFILE": "ci"})
    assert found == {"aws_access_key_id": "c", "aws_secret_access_key": "cs", "region": "eu-west-1"}
    assert _file_credentials(files) == {"aws_access_key_id": "d"}
    assert _file_credentials({**files, "AWS_ACCESS_KEY_ID": "env"}) == {}  # the environment's own win


def test_each_verdict_is_written_once_and_the_loser_serves_the_winner(tmp_path: Path, s3: S3Server) -> None:
    url = f"s3://{s3.bucket('verdicts')}/run"
    first, second = _node(tmp_path / "a", url), _node(tmp_path / "b", url)
    first.put("k", Stored(Verdict(Outcome.PASSED), "run-a", "T/0[0]", 1.5), "computeeval")
    second.put("k", Stored(Verdict(Outcome.TEST_FAILED, "late"), "run-b", "T/0[0]", 2.0), "computeeval")
    third = _node(tmp_path / "c", url)  # a node that graded nothing
    assert third.get("k") == Stored(Verdict(Outcome.PASSED), "run-a", "T/0[0]", 1.5)
    assert second.get("k") == third.get("k")  # the loser's own machine serves the winner from now on
    assert third.local.get("k") is not None  # read through: kept on the node for its next lookup
    # Control: a key nobody wrote is a miss everywhere.
    assert third.get("other") is None


def _race(url: str, folder: str, number: int, start: float) -> None:
    store = SharedStore(url, VerdictStore(Path(folder) / f"node{number}" / "verdicts.sqlite3"))
    time.sleep(max(0.0, start - time.time()))
    store.put("raced", Stored(Verdict(Outcome.PASSED, f"writer {number}"), f"run-{number}", "T/1[0]"), "computeeval")


def test_concurrent_writers_leave_one_verdict_that_every_node_reads(tmp_path: Path, s3: S3Server) -> None:
    url = f"s3://{s3.bucket('race')}/p"
    start = time.time() + 2
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_race, args=(url, str(tmp_path), n, start)) for n in range(6)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    seen = {_node(tmp_path / f"reader{n}", url).get("raced").verdict.reason for n in range(3)}  # type: ignore[union-attr]
    assert len(seen) == 1 and seen.pop().startswith("writer ")


def test_a_store_out_of_reach_is_one_error_naming_its_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    with pytest.raises(StoreError, match=r"the verdict store s3://gone/p cannot be reached"):
        _node(tmp_path, "s3://gone/p")


# -- runs -------------------------------------------------------------------------------------


def _dataset(folder: Path, code: str = packs.RIGHT) -> list[str]:
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in TASKS]
    packs.write_problems(folder / "p-problems.tar.gz", problems)
    packs.write_solutions(folder / "s-solutions.tar.gz", [packs.solution(task, code) for task in TASKS])
    return ["--codebench-dataset", "p-problems.tar.gz", "--codebench-solutions", "s-solutions.tar.gz",
            "--codebench-run-without-gpu"]  # fmt: skip


def test_another_node_is_served_what_one_graded(
    pytester: pytest.Pytester, codebench: Callable[..., Run], s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{s3.bucket('cluster')}/computeeval"
    args = [*_dataset(pytester.path), "--codebench-store", url]
    monkeypatch.setenv("CODEBENCH_CACHE_DIR", str(pytester.path / "node-a"))
    first = codebench(*args)
    assert f"verdict store (on): 0 of 4 items from earlier runs ({url})" in first.output
    monkeypatch.setenv("CODEBENCH_CACHE_DIR", str(pytester.path / "node-b"))  # another machine's cache
    second = codebench(*args)
    assert f"verdict store (on): 4 of 4 items from earlier runs ({url})" in second.output
    assert {item["status"] for item in second.items.values()} == {"passed"}

    # A bucket that does not exist: one usage error naming the URL, nothing graded.
    missing = codebench(*_dataset(pytester.path), "--codebench-store", "s3://no-such-bucket/x")
    assert missing.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the verdict store s3://no-such-bucket/x cannot be reached" in missing.output


def test_a_store_gone_mid_run_costs_only_its_reuse(
    pytester: pytest.Pytester, codebench: Callable[..., Run], s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{s3.bucket('flaky')}/p"
    # The server dies once the first item is reported: the rest can neither be read nor kept.
    pytester.makeconftest(f"""
        import os, signal
        def pytest_runtest_logreport(report):
            if report.when == "call":
                try:
                    os.kill({s3.process.pid}, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    """)
    monkeypatch.setenv("CODEBENCH_CACHE_DIR", str(pytester.path / "cache"))
    run = codebench(*_dataset(pytester.path), "--codebench-store", url, "--codebench-report", "r.json")
    assert {item["status"] for item in run.items.values()} == {"passed"}  # every verdict stands
    assert f"in the verdict store {url} (" in run.output or f"could not read the verdict store {url}" in run.output
    report = json.loads((pytester.path / "r.json").read_text())
    assert len(report["items"]) == 4


def test_the_stores_credentials_never_reach_a_models_command(
    pytester: pytest.Pytester, codebench: Callable[..., Run], s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{s3.bucket('creds')}/p"
    spy = (
        '#include <stdio.h>\n#include <stdlib.h>\n#include "add.h"\n'
        "int add(int a, int b) {\n"
        '    const char *names[] = {"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL"};\n'
        '    for (int i = 0; i < 3; i++) printf("%s=%s\\n", names[i], getenv(names[i]) ? getenv(names[i]) : "-");\n'
        "    return a - b;\n}\n"
    )
    monkeypatch.setenv("CODEBENCH_CACHE_DIR", str(pytester.path / "cache"))
    run = codebench(*_dataset(pytester.path, spy), "--codebench-store", url, "-k", "T/0")
    failure = run.items["T/0[0]"]
    assert failure["status"] == "failure" and "AWS_SECRET_ACCESS_KEY=-" in failure["message"]  # it looked
    assert SECRET not in run.output and "AWS_ACCESS_KEY_ID=-" in failure["message"]
