"""Where a test run's CPU goes, by kind of process: samples /proc while a command runs.

    python scripts/cpu-by-command.py -- pytest -n 2 tests/test_tensorbench.py

pytest's --durations gives wall time per test; on a busy 2-core machine the suite is CPU-bound,
so what counts is whose CPU it is. rusage misses processes that are reparented or run by
another daemon (sandboxes, containers: dockerd, runc), and process accounting names only the
executable: this samples every process every 0.1 s, keeps each one's last CPU time (minus what
it had used when first seen, for daemons running before), and sums by a kind taken from its
command line. Processes that live under 0.1 s are missed: the total is a lower bound.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Seen:
    """One process: its CPU seconds when first seen (0 if it started while sampling), when last
    seen, and its command line (a kernel thread's name in parentheses)."""

    before: float
    last: float
    command: str


def kind(command: str) -> str:
    """A process's kind, from its command line: the executable, or for Python what it runs."""
    if command.startswith("("):
        return command  # a kernel thread's name
    words = command.split()
    exe = words[0].rsplit("/", 1)[-1] if words else "?"
    if "python" not in exe:
        return exe
    for needle, name in (
        ("-u -c", "python: xdist worker"),
        ("--codebench", "python: pytest --codebench"),
        ("pip", "python: pip"),
        ("pytest", "python: pytest"),
    ):
        if needle in command:
            return name
    return "python: " + " ".join(words[1:2])[:60]


def sample(seen: dict[str, Seen], first: bool) -> None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) / TICK
            key = f"{pid}:{fields[19]}"  # the start time tells a reused pid apart
            if key in seen:
                seen[key].last = cpu
                continue
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            seen[key] = Seen(cpu if first else 0.0, cpu, command or stat[stat.index("(") : stat.rindex(")") + 1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile


def main(command: list[str]) -> int:
    seen: dict[str, Seen] = {}
    sample(seen, first=True)
    process = subprocess.Popen(command)
    while process.poll() is None:
        sample(seen, first=False)
        time.sleep(0.1)
    totals: collections.defaultdict[str, float] = collections.defaultdict(float)
    counts: collections.Counter[str] = collections.Counter()
    for process_seen in seen.values():
        name = kind(process_seen.command)
        totals[name] += process_seen.last - process_seen.before
        counts[name] += 1
    print(f"{sum(totals.values()):8.1f} s CPU seen in all (a lower bound)")
    for name, seconds in sorted(totals.items(), key=lambda kind_seconds: -kind_seconds[1])[:30]:
        if seconds < 0.05:
            break
        print(f"{seconds:8.1f} s {counts[name]:6d} processes  {name}")
    return process.returncode


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    if not arguments:
        sys.exit(__doc__)
    sys.exit(main(arguments))
