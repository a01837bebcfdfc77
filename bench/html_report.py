"""The HTML report at scale: a synthetic JSON report of 10 models x 10,000 tasks (100,000 items,
groups, speedups with suspects, two logs of a few KB each), its page written, and the page
opened in headless Chromium: the size of what loads at open, the time until each view is drawn
and the browser's memory.

    python bench/html_report.py [--models 10] [--tasks 10000] [--groups 100] [--out DIR] [--chromium PATH]

Sizes: index.html plus every file it loads at open (scripts, the chart library, the style sheet,
data/overview.js). Times: from Page.navigate until body[data-ready] names the view (polled every
10 ms), the overview opened from scratch; the other views then opened in the same tab, each
loading its own data (the matrix files, speed.js, one item file). Memory: the JS heap used
(DevTools Performance.getMetrics, after a garbage collection), the page's renderer process and
every Chromium process together (proportional set sizes, /proc/PID/smaps_rollup), about:blank's
first as the baseline. Chromium is driven over --remote-debugging-pipe with the standard library
alone. The goal (issue 25): open in under 2 s and under 200 MB.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_codebench.reports.html import write_html

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


class Chromium:
    """Headless Chromium over the DevTools pipe (fd 3: to it, fd 4: from it, NUL-separated JSON)."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome, self._write = os.pipe()
        self._read, from_chrome = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", f"--user-data-dir={profile}"]
        # Chromium's ends moved above fd 9 (so that putting them on 3 and 4 overwrites neither),
        # then bash puts them on 3 and 4, where Chromium looks, and execs it in a session of its own.
        low = (to_chrome, from_chrome)
        to_chrome, from_chrome = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in low)
        for fd in low:
            os.close(fd)
        script = f'exec "$0" "$@" 3<&{to_chrome} 4>&{from_chrome} {to_chrome}<&- {from_chrome}>&-'
        self.process = subprocess.Popen(
            ["/bin/bash", "-c", script, binary, *flags, "about:blank"],
            pass_fds=(to_chrome, from_chrome),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer, self._next = b"", 0
        self.errors: list[str] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Performance"):
            self.call(f"{domain}.enable", session=self.session)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                self._buffer += os.read(self._read, 1 << 20)
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("method") == "Runtime.exceptionThrown" or (
                reply.get("method") == "Runtime.consoleAPICalled" and reply["params"]["type"] == "error"
            ):
                self.errors.append(json.dumps(reply["params"])[:300])
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply["result"])

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=self.session, expression=expression, returnByValue=True)
        return result["result"].get("value")

    def open(self, url: str, route: str, navigate: bool) -> float:
        """Seconds from asking for ``url`` until the page says it drew ``route``."""
        start = time.perf_counter()
        if navigate:
            self.call("Page.navigate", session=self.session, url=url)
        else:
            self.evaluate(f"location.hash = {json.dumps(route)}")
        while self.evaluate("document.body ? document.body.dataset.ready || '' : ''") != route:
            if time.perf_counter() - start > 60:
                raise TimeoutError(f"{route} not drawn in 60 s")
            time.sleep(0.01)
        return time.perf_counter() - start

    def memory(self) -> str:
        """MB of JS heap used, of the page's renderer process and of every Chromium process
        together (PSS), as a line."""
        self.call("HeapProfiler.collectGarbage", session=self.session)
        metrics = self.call("Performance.getMetrics", session=self.session)["metrics"]
        heap = next(metric["value"] for metric in metrics if metric["name"] == "JSHeapUsedSize")
        sizes = processes(self.process.pid)
        renderers = [size for command, size in sizes if "--type=renderer" in command]
        whole, renderer = sum(size for _, size in sizes), max(renderers, default=0)
        return f"JS heap {heap / 2**20:.1f} MB, renderer {renderer / 2**20:.0f} MB, Chromium {whole / 2**20:.0f} MB"

    def close(self) -> None:
        """Ends Chromium and every process it started (its own session)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


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
        browser = Chromium(args.chromium, Path(scratch) / "profile")
        try:
            url = (out / "index.html").resolve().as_uri()
            print(f"about:blank: {browser.memory()}")
            opened = browser.open(url, "#/", navigate=True)
            print(f"overview drawn in {opened:.2f} s; {browser.memory()}")
            first = report["items"][0]["nodeid"]
            item = "#/item/" + browser.evaluate(f"encodeURIComponent({json.dumps(first)})")
            for route in ("#/problems", "#/problems?outcome=build_error&group=group-07", "#/speed", item):
                took = browser.open(url, route, navigate=False)
                print(f"{route[:48]} drawn in {took:.2f} s; {browser.memory()}")
            print(f"console errors: {len(browser.errors)}", *browser.errors, sep="\n  ")
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
