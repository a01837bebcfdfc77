"""What passing bwrap's options through a descriptor (``--args FD``, so that /proc/1/cmdline
shows no host path) costs a sandboxed command, against the same options on bwrap's command line.

    python bench/sandbox_args.py [--commands 80]

1. The same trivial command (``true``) through the local runner's sandbox both ways,
   interleaved (the order alternating), as wall time seen by the caller: medians and the ratio.
2. The harness's own work per command: writing the options to a memory file (many calls).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_codebench.context import RunContext
from pytest_codebench.options import Settings
from pytest_codebench.runners import sandbox
from pytest_codebench.runners.local import LocalRunner, sandbox_state

THROUGH_FD = sandbox.options_through_fd


def inline(argv: list[str]) -> tuple[list[str], int]:
    """Before: the options stay on the command line (a descriptor to close, as the runner expects)."""
    return argv, os.open(os.devnull, os.O_RDONLY)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=80, help="commands per way (default 80)")
    args = parser.parse_args()
    state = sandbox_state(Settings({sandbox.SANDBOX.name: "bwrap"}))
    if state.plan is None:
        raise SystemExit(f"no sandbox can run here: {state.why}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = root / "ws"
        workspace.mkdir()
        settings = Settings({sandbox.SANDBOX.name: "bwrap"})
        local = LocalRunner(RunContext(None, settings, root / "run", root, 1))  # type: ignore[arg-type]  # no pytest config
        ways: dict[str, Callable[[list[str]], tuple[list[str], int]]] = {"through fd": THROUGH_FD, "inline": inline}
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        for index in range(args.commands):
            for way in sorted(ways, reverse=index % 2 == 1):
                sandbox.options_through_fd = ways[way]
                started = time.perf_counter()
                result = local.run("true", cwd=workspace, timeout=60)
                seconds[way].append(time.perf_counter() - started)
                assert result.ok, result.output
        sandbox.options_through_fd = THROUGH_FD
        fd, boxed = (statistics.median(seconds[way]) * 1000 for way in ("through fd", "inline"))
        print(f"sandboxed `true`, median of {args.commands} each: through fd {fd:.2f} ms, inline {boxed:.2f} ms,")
        print(f"  ratio {fd / boxed:.3f}")
        plan = state.plan
        argv = plan.argv("true", workspace, 5, plan.mounts(workspace, None, {}))
        calls = 2000
        started = time.perf_counter()
        for _ in range(calls):
            os.close(THROUGH_FD(list(argv))[1])
        each = (time.perf_counter() - started) / calls * 1e6
        print(f"writing {len(argv)} arguments to a memory file: {each:.1f} us a command")


if __name__ == "__main__":
    main()
