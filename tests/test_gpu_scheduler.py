"""The GPU scheduler: tests share a GPU up to a bound, timing phases hold it alone, machine-wide.

No GPU here: the scheduler only ever sees GPU ids, so a fake list of them is the whole GPU it
needs. Real processes hold the locks and log when they held them (monotonic clock, taken after
acquiring and before releasing, so a logged overlap is a real one); the tests check the
invariants over those intervals, never their durations.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import packs
import pytest

from conftest import junit_items
from pytest_codebench.errors import HarnessError
from pytest_codebench.gpu.scheduler import SHARE_CAP, GpuScheduler, parse_slots

# One process holding the scheduler: ``rounds`` times (``pause`` seconds apart), takes ``kind``
# (shared or exclusive; ``nest`` shared holds at once, of which it keeps those in ``keep``),
# holds it ``hold`` seconds or until the file ``until`` exists, and appends "kind gpu start end
# pid" to ``log``; "ask kind pid" just before each request and "held kind pid" once it holds.
HOLDER = """
import json, os, sys, time
from pathlib import Path
from pytest_codebench.gpu.scheduler import GpuScheduler

cfg = json.loads(sys.argv[1])
scheduler = GpuScheduler(Path(cfg["locks"]), cfg["gpus"], cfg["slots"])
log = os.open(cfg["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
keep = cfg.get("keep", range(cfg.get("nest", 1)))
while cfg.get("go") and not os.path.exists(cfg["go"]):
    time.sleep(0.005)
for round in range(cfg.get("rounds", 1)):
    time.sleep(cfg.get("pause", 0) if round else 0)
    os.write(log, f"ask {cfg['kind']} {os.getpid()}\\n".encode())
    holds = [getattr(scheduler, cfg["kind"])(60) for _ in range(cfg.get("nest", 1))]
    gpus = [hold.__enter__() for hold in holds]
    for index, hold in enumerate(holds):
        if index not in keep:
            hold.__exit__(None, None, None)
    start = time.monotonic_ns()
    os.write(log, f"held {cfg['kind']} {os.getpid()}\\n".encode())
    if cfg.get("until"):
        while not os.path.exists(cfg["until"]):
            time.sleep(0.005)
    else:
        time.sleep(cfg["hold"][round % len(cfg["hold"])])
    end = time.monotonic_ns()
    for index in keep:
        holds[index].__exit__(None, None, None)
        os.write(log, f"{cfg['kind']} {gpus[index]} {start} {end} {os.getpid()}\\n".encode())
"""


class Holders:
    """Holder processes started in ``tmp_path``, sharing one lock folder and one log."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.locks = tmp_path / "locks"
        self.log = tmp_path / "holds.log"
        self.log.touch()
        self.script = tmp_path / "holder.py"
        self.script.write_text(HOLDER)
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, **cfg: Any) -> subprocess.Popen[bytes]:
        cfg = {"locks": str(self.locks), "log": str(self.log), "gpus": ["0"], "slots": 2, "hold": [0.02], **cfg}
        process = subprocess.Popen([sys.executable, str(self.script), json.dumps(cfg)], stderr=subprocess.PIPE)
        self.processes.append(process)
        return process

    def wait(self) -> None:
        for process in self.processes:
            _, stderr = process.communicate(timeout=180)
            assert process.returncode == 0, stderr.decode()

    def lines(self, first: str) -> list[list[str]]:
        return [line.split() for line in self.log.read_text().splitlines() if line.split()[0] == first]

    def holds(self) -> list[tuple[str, str, int, int]]:
        """(kind, gpu, start, end) of every hold, in order of start."""
        rows = [row for row in (line.split() for line in self.log.read_text().splitlines()) if len(row) == 5]
        return sorted(((kind, gpu, int(start), int(end)) for kind, gpu, start, end, _ in rows), key=lambda h: h[2])

    def wait_for(self, what: str, condition: Any) -> None:
        deadline = time.monotonic() + 60
        while not condition():
            assert time.monotonic() < deadline, f"waited 60 s for {what}"
            time.sleep(0.01)

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.fixture
def holders(tmp_path: Path) -> Iterator[Holders]:
    started = Holders(tmp_path)
    yield started
    started.kill()


def most_at_once(intervals: list[tuple[int, int]]) -> int:
    """The most intervals open at one instant (one ending as another starts is not an overlap)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    open_now = peak = 0
    for _, step in events:
        open_now += step
        peak = max(peak, open_now)
    return peak


def test_shared_holders_stay_within_the_slots_and_an_exclusive_holder_is_alone(holders: Holders) -> None:
    """Eight processes on two GPUs with two slots each: six sharing (more than fit at once),
    two taking a GPU alone, all starting together."""
    go = holders.dir / "go"
    common = {"gpus": ["0", "1"], "slots": 2, "go": str(go)}
    for _ in range(6):
        holders.start(kind="shared", rounds=12, hold=[0.03, 0.01, 0.06, 0.02], **common)
    for _ in range(2):  # a pause between rounds lets the tests fill the slots again
        holders.start(kind="exclusive", rounds=6, hold=[0.02], pause=0.05, **common)
    go.touch()
    holders.wait()
    holds = holders.holds()
    assert len(holds) == 6 * 12 + 2 * 6
    by_gpu: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for kind, gpu, start, end in holds:
        by_gpu[gpu].append((kind, start, end))
    assert set(by_gpu) == {"0", "1"}  # both GPUs used
    for gpu, gpu_holds in by_gpu.items():
        shared = [(start, end) for kind, start, end in gpu_holds if kind == "shared"]
        assert most_at_once(shared) <= 2, f"more than 2 tests at once on GPU {gpu}"
        for kind, start, end in gpu_holds:
            if kind == "exclusive":
                others = [(s, e) for k, s, e in gpu_holds if (k, s, e) != (kind, start, end) and s < end and start < e]
                assert not others, f"GPU {gpu} held alone from {start} to {end} while others held it: {others}"
    # Not vacuous: the bound was reached, and both GPUs were busy at the same time.
    assert max(most_at_once([(s, e) for k, s, e in hs if k == "shared"]) for hs in by_gpu.values()) == 2
    across = [(s, e) for _, _, s, e in holds]
    assert most_at_once(across) > 2


def refused(scheduler: GpuScheduler) -> bool:
    """Whether a new test is refused a slot on ``scheduler``'s GPUs right now."""
    try:
        with scheduler.shared(0):
            return False
    except HarnessError:
        return True


@pytest.mark.parametrize("first", ["shared", "exclusive"])
def test_no_new_test_starts_on_a_gpu_a_timing_phase_waits_for(holders: Holders, first: str) -> None:
    """A holder (a test, or a timing phase) keeps the GPU; a timing phase asks for it alone;
    then tests ask, a slot being free: they start only after the timing phase."""
    release = holders.dir / "release"
    holders.start(kind=first, until=str(release))
    holders.wait_for("the first hold", lambda: len(holders.lines("held")) == 1)
    scheduler = GpuScheduler(holders.locks, ["0"], 2)
    if first == "shared":
        assert not refused(scheduler)  # the honest control: a slot is free to a new test
    holders.start(kind="exclusive", hold=[0.05])
    holders.wait_for("the timing phase to ask", lambda: len(holders.lines("ask")) == 2)
    if first == "shared":
        # Seen from outside: once the timing phase waits, the free slot is no longer given out.
        holders.wait_for("the waiting timing phase to keep new tests off", lambda: refused(scheduler))
    else:
        time.sleep(2)  # the timing phase's first try at the GPU comes right after its "ask"
    for _ in range(3):  # several, so that one would slip in were the timing phase not first in line
        holders.start(kind="shared", hold=[0.05])
    holders.wait_for("the tests to ask", lambda: len(holders.lines("ask")) == 5)
    release.touch()
    holders.wait()
    (_, _, _, first_end), (kind, _, phase_start, phase_end), *tests = holders.holds()
    assert kind == "exclusive" and first_end <= phase_start
    assert [kind for kind, _, _, _ in tests] == ["shared"] * 3
    assert all(phase_end <= start for _, _, start, _ in tests)


def test_every_wait_is_bounded_and_says_what_it_waited_for(holders: Holders) -> None:
    release = holders.dir / "release"
    # Another run, sharing without a bound, holds three slots of GPU 0 ...
    holders.start(kind="shared", slots=None, nest=3, until=str(release))
    holders.wait_for("the tests", lambda: len(holders.lines("held")) == 1)
    one_slot = GpuScheduler(holders.locks, ["0"], 1)
    with pytest.raises(HarnessError, match=r"waited 0 s for a shared slot on GPU 0 \(at most 1 at once per GPU\)"):
        with one_slot.shared(0.2):
            pass
    # ... and a timing phase of a run with a bound of 1 waits for all three.
    with pytest.raises(HarnessError, match=r"waited 0 s to hold a GPU alone \(GPU 0\): tests sharing GPU 0 did not"):
        with one_slot.exclusive(0.3):
            pass
    release.touch()
    holders.wait()
    with one_slot.exclusive(10) as gpu:  # the honest control: once they finish, it is alone
        assert gpu == "0"
    # A timing phase holds the GPU, a second one waits for it: a third finds no place at all.
    release = holders.dir / "release-2"
    holders.start(kind="exclusive", until=str(release))
    holders.wait_for("the timing phase", lambda: len(holders.lines("held")) == 2)
    with pytest.raises(HarnessError, match=r"to hold a GPU alone \(GPU 0\): another timing phase held GPU 0 alone"):
        with one_slot.exclusive(0.3):
            pass
    holders.start(kind="exclusive", hold=[0.01])
    holders.wait_for("the second timing phase to ask", lambda: len(holders.lines("ask")) == 3)
    time.sleep(2)  # its first try at the GPU's queue comes right after its "ask"
    with pytest.raises(HarnessError, match="other timing phases waited for or held every GPU"):
        with one_slot.exclusive(0.3):
            pass
    assert refused(one_slot)
    release.touch()
    holders.wait()


def test_a_timing_phase_waits_for_the_tests_of_a_run_with_another_bound(holders: Holders) -> None:
    """Another run shares without a bound: of three tests it started, the third still runs (in
    slot 2). A timing phase of a run that lets one test at a time waits for it all the same."""
    release = holders.dir / "release"
    holders.start(kind="shared", slots=None, nest=3, keep=[2], until=str(release))
    holders.wait_for("the test", lambda: len(holders.lines("held")) == 1)
    one_slot = GpuScheduler(holders.locks, ["0"], 1)
    assert not refused(one_slot)  # the honest control: its own single slot is free
    with pytest.raises(HarnessError, match=r"to hold a GPU alone \(GPU 0\): tests sharing GPU 0 did not finish"):
        with one_slot.exclusive(0.3):
            pass
    release.touch()
    holders.wait()
    with one_slot.exclusive(10) as gpu:
        assert gpu == "0"


def test_sharing_without_a_bound_takes_more_than_the_default_slots(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        unbounded = GpuScheduler(tmp_path, ["0"], None)
        assert [stack.enter_context(unbounded.shared(0)) for _ in range(20)] == ["0"] * 20
        with pytest.raises(RuntimeError, match="holds GPU 0 shared and asks for it alone"):
            with unbounded.exclusive(0):
                pass
    with contextlib.ExitStack() as stack:
        bounded = GpuScheduler(tmp_path, ["0", "1"], 8)
        taken = [stack.enter_context(bounded.shared(0)) for _ in range(16)]
        assert taken.count("0") == taken.count("1") == 8  # spread over both GPUs
        assert refused(bounded)


def test_slots_are_from_one_to_the_cap() -> None:
    assert parse_slots(" 8 ") == 8
    assert parse_slots(str(SHARE_CAP)) == SHARE_CAP
    for bad, why in [("0", "must be from 1 to 64"), (str(SHARE_CAP + 1), "--codebench-gpu-share"), ("x", "integer")]:
        with pytest.raises(ValueError, match=why):
            parse_slots(bad)


# A fake GPU for the plugin runs (the test commands are host programs).
FAKE_GPU = """
def pytest_codebench_probe_gpus(config):
    return {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"}]}
"""


def logged_test(task: int, log: Path, need: Path) -> str:
    """A test command that logs its GPU when it starts and ends, and in between waits (up to
    5 s) until the file ``need`` says enough tests have started, so that tests allowed to run
    at once do."""
    line = f'echo "$CUDA_VISIBLE_DEVICES T{task}'
    started = f'"$(grep -c start {log})" -lt "$(cat {need})"'
    wait = f"i=0; while [ {started} ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done"
    return f'{line} start $(date +%s%N)" >> {log}; {wait}; sleep 0.2; {line} end $(date +%s%N)" >> {log}; ./test.out'


def gpu_intervals(log: Path) -> dict[str, list[tuple[int, int]]]:
    """Per GPU, when each test ran on it."""
    stamps: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for gpu, task, kind, stamp in (line.split() for line in log.read_text().splitlines()):
        stamps[gpu, task][kind] = int(stamp)
    intervals: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (gpu, _), times in stamps.items():
        intervals[gpu].append((times["start"], times["end"]))
    return intervals


def test_under_xdist_at_most_n_tests_share_the_gpu(pytester: pytest.Pytester) -> None:
    """``-n 4`` with ``--codebench-gpu-slots 2``: each test waits (up to 5 s) for three to be
    running, which the bound never allows; so two do run at once, and a third would be seen
    were the bound not kept. The same run without xdist gives the same outcomes."""
    pytester.makeconftest(FAKE_GPU)
    log, need = pytester.path / "gpu.log", pytester.path / "need"
    problems = [packs.problem(f"T/{i}", test_command=logged_test(i, log, need)) for i in range(6)]
    pack = packs.write_problems(pytester.path / "p.tar.gz", problems)
    args = ["--codebench=computeeval", f"--codebench-dataset={pack}", "--codebench-gpu-slots=2"]
    # The commands log to one file outside their workspaces, which the local sandbox forbids.
    args += ["--codebench-sandbox=none", f"--junitxml={pytester.path / 'junit.xml'}"]
    args += ["--codebench-store=off"]  # the second run grades too: it must not be served from the first
    outcomes = {}
    for xdist, enough in ((["-n", "4"], 3), ([], 1)):
        need.write_text(str(enough))
        log.unlink(missing_ok=True)
        pytester.runpytest_subprocess(*args, *xdist).assert_outcomes(passed=6)
        items = junit_items(pytester.path / "junit.xml")
        outcomes[bool(xdist)] = {name: item["properties"]["category"] for name, item in items.items()}
        runs = gpu_intervals(log)
        assert list(runs) == ["0"] and len(runs["0"]) == 6
        assert most_at_once(runs["0"]) == (2 if xdist else 1), runs
    assert outcomes[True] == outcomes[False] == {f"T/{i}[0]": "passed" for i in range(6)}


def test_a_bad_slot_count_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--codebench=computeeval", "--codebench-gpu-slots=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--codebench-gpu-slots*must be from 1 to 64*"])
