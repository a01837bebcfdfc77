"""The local runner against real processes: trees killed, output capped, environment scrubbed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_codebench.options import Settings
from pytest_codebench.runners import OutputCap, allowed_names, scrub_env
from pytest_codebench.runners.local import LocalRunner
from pytest_codebench.runners.sandbox import SANDBOX


# Both ways commands run: in the sandbox where bwrap can run here (auto), and unconfined,
# where the runner alone keeps the process tree in hand.
@pytest.fixture(params=["auto", "none"], ids=["default", "unconfined"])
def runner(request: pytest.FixtureRequest, run_context) -> Iterator[LocalRunner]:
    settings = Settings({**run_context.settings.as_dict(), SANDBOX.name: request.param})
    local = LocalRunner(dataclasses.replace(run_context, settings=settings))
    yield local
    local.close()


def alive(marker: str) -> bool:
    """Whether a process matching ``marker`` still lives 60 s on: SIGKILL reaches a sandbox's
    processes as its namespace goes, which on a busy machine takes a moment after bwrap is
    reaped; a leftover the runner missed would sleep for 300 s. The wait ends as soon as none
    is left, so the room costs a passing test nothing (issue 22)."""
    deadline = time.monotonic() + 60
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)
    return False


def test_exit_codes_and_signals(runner, tmp_path):
    # Limits with room: a sandbox's start on a busy machine is no part of what is tested.
    assert runner.run("exit 3", cwd=tmp_path, timeout=60).exit_code == 3
    assert runner.run("kill -SEGV $$", cwd=tmp_path, timeout=60).exit_code == -11
    ok = runner.run("echo hello; echo oops >&2", cwd=tmp_path, timeout=60)
    assert ok.ok and ok.output == "hello\noops\n"


# Each case sleeps for its own odd duration: that is how alive() finds its processes, and
# under xdist the cases of one test run at the same time on different workers.
@pytest.mark.parametrize(
    ("command", "marker"),
    [
        ("sleep 300.101 & sleep 300.101", "sleep 300.101"),  # a child in the same process group
        ("setsid sleep 300.102 & sleep 300.102", "sleep 300.102"),  # a child that left for its own session
    ],
)
def test_a_timeout_kills_the_whole_tree(runner, tmp_path, command, marker):
    result = runner.run(command, cwd=tmp_path, timeout=0.5)
    assert result.timed_out and result.exit_code is None
    assert not alive(marker)


@pytest.mark.parametrize(
    ("command", "marker"),
    [
        ("sleep 300.201 & echo done", "sleep 300.201"),  # holds the output pipe open
        ("setsid sleep 300.202 > /dev/null 2>&1 & echo done", "sleep 300.202"),  # detached: no pipe, own session
    ],
)
def test_background_children_die_with_a_command_that_finished(runner, tmp_path, command, marker):
    # Had the runner waited for the child (300 s), the 60 s limit would have cut the command
    # off: ok says it did not, however slow a busy machine makes the command itself.
    result = runner.run(command, cwd=tmp_path, timeout=60)
    assert result.ok and not result.timed_out and result.output == "done\n"
    assert not alive(marker)


def test_output_is_capped_keeping_head_and_tail(runner, tmp_path):
    result = runner.run("echo FIRST; yes filler | head -c 1000000; echo; echo LAST", cwd=tmp_path, timeout=30)
    assert result.ok
    assert result.output.startswith("FIRST\n") and result.output.endswith("LAST\n")
    assert "bytes of output dropped" in result.output
    assert result.dropped_bytes > 990_000 and len(result.output) < 1200


def test_environment_is_scrubbed_and_home_is_the_workspace(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak")
    monkeypatch.setenv("HF_TOKEN", "leak")
    monkeypatch.setenv("MY_SETTING", "leak")
    monkeypatch.setenv("CUDA_HOME", "/opt/cuda")
    env = runner.run("env", cwd=tmp_path, timeout=5).output
    assert "leak" not in env
    assert "CUDA_HOME=/opt/cuda" in env and f"HOME={tmp_path}\n" in env
    assert f"TMPDIR={tmp_path / '.tmp'}" in env


def test_a_change_of_the_environment_reaches_the_next_command(runner, tmp_path, monkeypatch):
    # The runner keeps the scrubbed environment between commands while it stays the same.
    monkeypatch.setenv("CUDA_BENCH_SETTING", "one")
    assert runner.run("echo $CUDA_BENCH_SETTING", cwd=tmp_path, timeout=5).output == "one\n"
    monkeypatch.setenv("CUDA_BENCH_SETTING", "two")
    monkeypatch.setenv("CUDA_TOKEN", "leak")
    output = runner.run("echo $CUDA_BENCH_SETTING; env", cwd=tmp_path, timeout=5).output
    assert output.startswith("two\n") and "leak" not in output
    monkeypatch.delenv("CUDA_BENCH_SETTING")
    assert runner.run("echo x${CUDA_BENCH_SETTING}x", cwd=tmp_path, timeout=5).output == "xx\n"


def test_the_gpu_given_is_the_only_one_visible(runner, tmp_path):
    assert runner.run("echo $CUDA_VISIBLE_DEVICES", cwd=tmp_path, timeout=5, gpu="3").output == "3\n"


def test_scrub_env_allows_extra_names_but_never_secrets():
    environ = {"PATH": "/bin", "MY_SETTING": "1", "MY_API_KEY": "x", "CUDA_TOKEN": "y", "HOME": "/root"}
    assert scrub_env(environ) == {"PATH": "/bin"}
    assert scrub_env(environ, allowed_names(["MY_*", "CUDA_*"])) == {"PATH": "/bin", "MY_SETTING": "1"}


def test_output_cap_counts_what_it_drops():
    cap = OutputCap(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrst"):
        cap.feed(chunk)
    assert cap.dropped == 10
    assert cap.text() == "abcde\n[... 10 bytes of output dropped ...]\npqrst"


def test_stdin_is_fed_on_a_pipe(runner, tmp_path):
    data = b"x" * 3_000_000  # far more than a pipe holds
    result = runner.run("wc -c", cwd=tmp_path, timeout=60, stdin=data)
    assert result.ok and result.output.strip() == "3000000"
    assert runner.run("cat", cwd=tmp_path, timeout=60).output == ""  # none given: /dev/null


def test_a_command_that_never_reads_its_input_does_not_hang_the_runner(runner, tmp_path):
    result = runner.run("echo ignored", cwd=tmp_path, timeout=60, stdin=b"y" * 3_000_000)
    assert result.ok and not result.timed_out and result.output == "ignored\n"
    closed = runner.run("exec 0<&-; sleep 0.2; echo closed", cwd=tmp_path, timeout=60, stdin=b"z" * 3_000_000)
    assert closed.ok and closed.output == "closed\n"


# A harness that runs one unconfined command, then waits for it (until killed).
HARNESS = """
import sys
from pathlib import Path
from pytest_codebench.context import RunContext
from pytest_codebench.options import Settings
from pytest_codebench.runners.local import LocalRunner
from pytest_codebench.runners.sandbox import SANDBOX

run = Path(sys.argv[1])
runner = LocalRunner(RunContext(None, Settings({SANDBOX.name: "none"}), run, run, 1))
runner.run(sys.argv[2], cwd=run, timeout=600)
"""


def running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


def test_unconfined_commands_die_with_a_harness_killed_by_sigkill(tmp_path: Path) -> None:
    # What the command leaves running: a child in its group, one that left for its own session,
    # one that cleared its environment (and with it the runner's mark), and its own last step.
    command = "sleep 300.401 & setsid sleep 300.402 & env -i sleep 300.403 & sleep 300.404"
    patterns = [f"^sleep 300\\.40{n}$" for n in range(1, 5)]  # the sleeps, not the shell naming them
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(tmp_path), command])
    try:
        deadline = time.monotonic() + 30
        while not all(running(pattern) for pattern in patterns):
            assert time.monotonic() < deadline, "the command's processes never all started"
            time.sleep(0.1)
    finally:
        harness.kill()  # SIGKILL: the harness runs no code of its own on the way out
        harness.wait()
    assert not [pattern for pattern in patterns if alive(pattern)]
