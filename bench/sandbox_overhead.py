"""What the local runner's bubblewrap sandbox costs per command, and whether its clock is honest.

    python bench/sandbox_overhead.py [--commands 40] [--work 0.2]

1. Per command: the same trivial command (``true``) through the local runner unconfined
   (``--codebench-sandbox none``) and sandboxed, interleaved, as wall time seen by the caller.
2. The clock: a command doing a fixed amount of CPU work (a shell loop of about ``--work``
   seconds), timed by ``RunResult.seconds`` both ways, interleaved. The sandboxed figure is the
   clock inside the sandbox; a ratio near 1 means timed runs (PIE, performance) do not pay for
   the sandbox's start-up.
Prints medians and the ratios sandboxed / unconfined, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pytest_codebench.context import RunContext
from pytest_codebench.options import Settings
from pytest_codebench.runners.local import LocalRunner, sandbox_state
from pytest_codebench.runners.sandbox import SANDBOX


def runner(mode: str, run_dir: Path) -> LocalRunner:
    # Every other option keeps its default.
    settings = Settings({SANDBOX.name: mode})
    return LocalRunner(RunContext(None, settings, run_dir, run_dir, 1))  # type: ignore[arg-type]  # no pytest config


def caller_seconds(local: LocalRunner, workspace: Path, command: str) -> float:
    started = time.perf_counter()
    result = local.run(command, cwd=workspace, timeout=600)
    assert result.ok, result.output
    return time.perf_counter() - started


def calibrate(local: LocalRunner, workspace: Path, target: float) -> int:
    """Loop iterations of ``busy`` that take about ``target`` seconds unconfined."""
    count = 10_000
    while True:
        seconds = local.run(busy(count), cwd=workspace, timeout=600).seconds
        if seconds >= target / 4:
            return max(int(count * target / seconds), 1)
        count *= 4


def busy(count: int) -> str:
    return f"i=0; while [ $i -lt {count} ]; do i=$((i+1)); done"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=40, help="commands per mode (default 40)")
    parser.add_argument("--work", type=float, default=0.2, help="seconds of the fixed-work command (default 0.2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = root / "ws"
        workspace.mkdir()
        state = sandbox_state(Settings({SANDBOX.name: "bwrap"}))
        if state.plan is None:
            raise SystemExit(f"no sandbox can run here: {state.why}")
        print(f"sandbox: {state.version}")
        modes = {"unconfined": runner("none", root), "sandboxed": runner("bwrap", root)}
        trivial: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(args.commands):
            for mode, local in modes.items():
                trivial[mode].append(caller_seconds(local, workspace, "true"))
        count = calibrate(modes["unconfined"], workspace, args.work)
        clocked: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(max(args.commands // 4, 5)):
            for mode, local in modes.items():
                clocked[mode].append(local.run(busy(count), cwd=workspace, timeout=600).seconds)
        for title, figures in (("`true`, seen by the caller", trivial), ("fixed work, RunResult.seconds", clocked)):
            bare, boxed = statistics.median(figures["unconfined"]), statistics.median(figures["sandboxed"])
            print(
                f"{title}: unconfined {bare * 1000:.2f} ms, sandboxed {boxed * 1000:.2f} ms, ratio {boxed / bare:.3f}"
            )


if __name__ == "__main__":
    main()
