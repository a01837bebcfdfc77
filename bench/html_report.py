"""The HTML report at scale: a synthetic JSON report of 10 models x 10,000 tasks (100,000 items,
groups, speedups with suspects, two logs of a few KB each), its page written, and the page
opened in headless Chromium: the size of what loads at open, the time until each view is drawn
and the browser's memory.

    python bench/html_report.py [--models 10] [--tasks 10000] [--groups 100] [--out DIR] [--chromium PATH]

Sizes: index.html plus every file it loads at open (scripts, the chart library, the style sheet,
data/overview.js). Times: from Page.navigate until body[data-ready] names the view (polled every
50 ms), the overview opened from scratch; the other views then opened in the same tab, each
loading its own data (the matrix files, speed.js, one item file). Memory: the JS heap used
(DevTools Performance.getMetrics, after a garbage collection), the page's renderer process and
every Chromium process together (proportional set sizes, /proc/PID/smaps_rollup), about:blank's
first as the baseline. Chromium is driven by the tests' own DevTools client (tests/browser.py:
--remote-debugging-pipe, the standard library alone). The goal (issue 25): open in under 2 s and under 200 MB.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_codebench.reports.html import write_html

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from browser import Browser, Tab  # noqa: E402

OUTCOMES = ["passed"] * 5 + ["build_error", "test_failed", "wrong_output", "test_timeout", "runtime_error", "skipped"]
ANSI_LOG = "\x1b[1m{n}\x1b[0m: compiling kernel_{n}.cu ... \x1b[32mok\x1b[0m [{ms} ms]\n"


def synthetic_report(models: int, tasks: int, groups: int, where: Path) -> dict[str, Any]:
    """A JSON report as a sweep writes it; each item names two of 200 shared log files."""
    rng = random.Random(25)
    logs = where / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for n in range(200):
        (logs / f"build-{n}.log").write_text("".join(ANSI_LOG.format(n=i, ms=rng.randint(1, 999)) for i in range(50)))
        (logs / f"test-{n}.log").write_text("".join(f"test case {i}: PASS ({rng.random():.4f} s)\n" for i in range(40)))
    items, summaries = [], {}
    for m in range(models):
        name = f"model-{m:02d}"
        skill, passed, counts = rng.uniform(0.2, 0.9), 0, {}
        for t in range(tasks):
            outcome = "passed" if rng.random() < skill else rng.choice(OUTCOMES[5:])
            figures: dict[str, Any] = {"build_seconds": round(rng.uniform(0.5, 9), 3)}
            if outcome == "passed":
                passed += 1
                figures["speedup"] = round(math.exp(rng.gauss(0.2, 0.6)), 4)
                if rng.random() < 0.002:
                    figures["perf_suspect"] = "above the plausibility bound"
            counts[outcome] = counts.get(outcome, 0) + 1
            task = f"P/{t:05d}"
            items.append(
                {
                    "nodeid": f"computeeval/synthetic::{task}[{name}:0]",
                    "id": f"{task}[{name}:0]",
                    "task_id": task,
                    "sample": 0,
                    "group": f"group-{t % groups:02d}",
                    "status": {"passed": "passed", "skipped": "skipped"}.get(outcome, "failed"),
                    "outcome": outcome,
                    "reason": f"{outcome}: synthetic reason for {task}",
                    "command": "nvcc -o test kernel.cu",
                    "exit_code": 0 if outcome == "passed" else 1,
                    "output_tail": "",
                    "figures": figures,
                    "logs": {"build": str(logs / f"build-{t % 200}.log"), "test": str(logs / f"test-{t % 200}.log")},
                    "excused": outcome == "skipped",
                    "model": name,
                    "solution": {"files": [{"path": "kernel.cu", "content": f"// {task}\n__global__ void k() {{}}\n"}]},
                }
            )
        share = passed / tasks
        pass_k = {"pass@k": {"1": share}, "intervals": {"1": [share - 0.01, share + 0.01]}, "problems": tasks}
        perf = {"best_at_k": {"1": {"fast_p": {"1.0": 40.0, "1.5": 20.0, "2.0": 9.0}, "geomean": 1.2, "intervals": {}}}}
        summaries[name] = {"score": 100 * share, "metrics": {**pass_k, "excluded": [], "perf": perf}, "counts": counts}
    return {
        "benchmark": "computeeval",
        "harness_version": "0.1.0+synthetic",
        "dataset": {"path": "synthetic.tar.gz", "release": None, "sha256": "0" * 64},
        "options": {"benchmark": "computeeval", "k": [1]},
        "environment": {"gpus": ["synthetic"]},
        "models": summaries,
        "items": items,
    }


def opened(tab: Tab, route: str, go: Callable[[], object]) -> float:
    """Seconds from ``go()`` (a navigation, a change of the hash) until the page says it drew ``route``."""
    start = time.perf_counter()
    go()
    tab.wait_ready(route, timeout=60)
    return time.perf_counter() - start


def memory(browser: Browser, tab: Tab) -> str:
    """MB of JS heap used, of the page's renderer process and of every Chromium process
    together (PSS), as a line."""
    tab.send("HeapProfiler.collectGarbage")
    heap = tab.metrics()["JSHeapUsedSize"]
    sizes = processes(browser.process.pid)
    renderers = [size for command, size in sizes if "--type=renderer" in command]
    whole, renderer = sum(size for _, size in sizes), max(renderers, default=0)
    return f"JS heap {heap / 2**20:.1f} MB, renderer {renderer / 2**20:.0f} MB, Chromium {whole / 2**20:.0f} MB"


def processes(root: int) -> list[tuple[str, int]]:
    """(command line, bytes) of ``root`` and each of its descendants: proportional set sizes,
    so that pages shared between them (the libraries) count once in their sum."""
    children: dict[int, list[int]] = {}
    found: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int(re.search(r"PPid:\s+(\d+)", (entry / "status").read_text())[1])  # type: ignore[index]
            pss = re.search(r"Pss:\s+(\d+) kB", (entry / "smaps_rollup").read_text())
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, TypeError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
        found[int(entry.name)] = (command, int(pss[1]) * 1024 if pss else 0)
    listed, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in found:
            listed.append(found[pid])
        todo += children.get(pid, [])
    return listed


def loaded_at_open(out: Path) -> dict[str, int]:
    """index.html and every file its <script> and <link> tags name, by size."""
    index = (out / "index.html").read_text()
    names = ["index.html", *re.findall(r'(?:src|href)="([^"#]+)"', index)]
    return {name: (out / name).stat().st_size for name in names if (out / name).is_file()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--groups", type=int, default=100, help="PIE's groups are its problems: thousands")
    parser.add_argument("--out", type=Path, help="where the page goes (default: a temporary folder)")
    parser.add_argument("--chromium", default=os.environ.get("CODEBENCH_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch) / "page"
        started = time.perf_counter()
        report = synthetic_report(args.models, args.tasks, args.groups, Path(scratch))
        made = time.perf_counter()
        write_html(report, out)
        written = time.perf_counter()
        sizes = loaded_at_open(out)
        data = sum(path.stat().st_size for path in (out / "data").rglob("*") if path.is_file())
        files = sum(1 for _ in (out / "data").rglob("*.js"))
        print(f"items: {len(report['items'])} ({args.models} models x {args.tasks} tasks, {args.groups} groups)")
        print(f"synthetic report: {made - started:.1f} s; page written: {written - made:.1f} s")
        print(f"data files: {files}, {data / 2**20:.1f} MB in all (loaded on demand)")
        print(f"loaded at open: {sum(sizes.values()) / 1024:.0f} KB")
        for name, size in sizes.items():
            print(f"  {name}: {size / 1024:.1f} KB")
        with Browser(Path(scratch) / "profile", Path(args.chromium)) as browser, browser.tab() as tab:
            url = (out / "index.html").resolve().as_uri()
            print(f"about:blank: {memory(browser, tab)}")
            took = opened(tab, "#/", lambda: tab.goto(url))
            print(f"overview drawn in {took:.2f} s; {memory(browser, tab)}")
            first = report["items"][0]["nodeid"]
            item = "#/item/" + tab.evaluate(f"encodeURIComponent({json.dumps(first)})")
            for route in ("#/problems", "#/problems?outcome=build_error&group=group-07", "#/speed", item):
                took = opened(tab, route, lambda: tab.evaluate(f"location.hash = {json.dumps(route)}"))  # noqa: B023
                print(f"{route[:48]} drawn in {took:.2f} s; {memory(browser, tab)}")
            print(f"console errors: {len(tab.errors)}", *tab.errors, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
