"""Each test's CPU, with everything it started: a pytest plugin, and the report of what it wrote.

    rm -rf .cpu-by-test && PYTHONPATH=scripts pytest -n 2 -p cpu_by_test   # .cpu-by-test/*.json
    python scripts/cpu_by_test.py .cpu-by-test        # the heaviest modules and tests

--durations gives wall time, which on a busy 2-core machine says little about whose CPU it is,
and rusage misses what a test starts that its own process never waits for (sandboxes,
reparented children). Here each pytest process (each xdist worker) moves itself into a cgroup
of its own, which every process it starts inherits; a test's CPU is what that cgroup used while
the test ran, setup and teardown included. What a daemon does on a test's behalf (dockerd,
containerd, a container's processes) is not in it. Needs root and cgroup v1's cpuacct (as on
this project's machines); elsewhere the plugin says so and measures nothing.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
OUT = Path(os.environ.get("CPU_BY_TEST_OUT", ".cpu-by-test"))


class CpuByTest:
    """The cgroup of one pytest process, and (node id, CPU s, wall s) per test it ran."""

    def __init__(self, group: Path) -> None:
        self.group = group
        self.rows: list[tuple[str, float, float]] = []

    def used(self) -> float:
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        cpu, wall = self.used(), time.monotonic()
        try:
            return (yield)
        finally:
            self.rows.append((item.nodeid, self.used() - cpu, time.monotonic() - wall))

    def pytest_unconfigure(self) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"{self.group.name}.json").write_text(json.dumps(self.rows))
        (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        try:
            self.group.rmdir()
        except OSError:
            pass  # a process it started still lives there


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        return  # xdist's controller runs no test: each worker measures its own
    if not os.access(CPUACCT / "cgroup.procs", os.W_OK):
        print(f"cpu_by_test: cannot create cgroups under {CPUACCT} (needs root and cgroup v1's cpuacct)")
        return
    group = CPUACCT / f"cpu-by-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    group.mkdir(exist_ok=True)
    (group / "cgroup.procs").write_text(str(os.getpid()))
    config.pluginmanager.register(CpuByTest(group), "cpu-by-test")


def report(folder: Path, top: int = 40) -> str:
    rows = [row for path in sorted(folder.glob("*.json")) for row in json.loads(path.read_text())]
    lines = [f"{len(rows)} tests: {sum(r[1] for r in rows):.0f} s CPU, {sum(r[2] for r in rows):.0f} s wall"]
    modules: collections.Counter[str] = collections.Counter()
    walls: collections.Counter[str] = collections.Counter()
    for nodeid, cpu, wall in rows:
        modules[nodeid.split("::")[0]] += cpu
        walls[nodeid.split("::")[0]] += wall
    lines += ["", "   CPU s   wall s  module"]
    lines += [f"{cpu:8.1f} {walls[name]:8.1f}  {name}" for name, cpu in modules.most_common(top)]
    lines += ["", "   CPU s   wall s  test"]
    lines += [f"{cpu:8.1f} {wall:8.1f}  {nodeid}" for nodeid, cpu, wall in sorted(rows, key=lambda r: -r[1])[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1] if len(sys.argv) > 1 else OUT)))
