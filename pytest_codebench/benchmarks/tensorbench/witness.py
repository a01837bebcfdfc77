"""What the harness's own reporting plugin (:mod:`.codebench_witness`) saw of a suite, read
back from the workspace, and the suite report the verdict is drawn from.

The plugin's record is the source of each test's outcome; the suite's JUnit XML (written
outside the work tree) only adds failures the record lacks. Without the record the JUnit
XML alone is not trusted: the patch may have changed what writes it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from ... import junit
from .files import Unreadable, read_back, write_new

MODULE = "codebench_witness"  # loaded with -p
SOURCE = Path(__file__).with_name(f"{MODULE}.py")
ENV = "CODEBENCH_WITNESS"  # the file it appends to
RECORD_LIMIT = 32 << 20
JUNIT_LIMIT = 64 << 20
RAN = ("passed", "failed", "xpassed")  # a test that ran and was reported (xfailed: it did not pass)
SEVERITY = ("failed", "xfailed", "skipped", "xpassed", "passed")  # per id, the first of its phases' outcomes


@dataclasses.dataclass(frozen=True)
class Witnessed:
    """Per test id its outcome (one of :data:`SEVERITY`), the hook functions defined in the
    work tree (``file:hook``), the ids deselected, and the exit status (None: the session
    never reached its end)."""

    outcomes: dict[str, str]
    hooks: tuple[str, ...] = ()
    deselected: tuple[str, ...] = ()
    finished: int | None = None

    def report(self, suite: junit.SuiteReport | None) -> junit.SuiteReport:
        """The suite report: the record's outcomes, and failures only the JUnit XML has."""
        failed = [test for test, outcome in self.outcomes.items() if outcome == "failed"]
        failed += [test for test in (suite.failed if suite else []) if test not in self.outcomes]
        skipped = sum(outcome in ("skipped", "xfailed") for outcome in self.outcomes.values())
        passed = tuple(test for test, outcome in self.outcomes.items() if outcome in ("passed", "xpassed"))
        tests = len(set(self.outcomes) | set(failed))
        return junit.SuiteReport(tests=tests, failed=failed, skipped=skipped, passed=passed)


def parse(text: str) -> Witnessed | None:
    """The plugin's record; None when it wrote nothing (never loaded, or the run died first)."""
    outcomes: dict[str, str] = {}
    hooks: set[str] = set()
    deselected: list[str] = []
    finished = None
    seen = False
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if not isinstance(event, dict):
            continue
        seen = True
        if "id" in event and event.get("outcome") in SEVERITY:
            test, outcome = str(event["id"]), event["outcome"]
            now = outcomes.get(test, "passed")
            outcomes[test] = min(now, outcome, key=SEVERITY.index) if test in outcomes else outcome
        elif isinstance(event.get("hooks"), list):
            hooks.update(str(hook) for hook in event["hooks"])
        elif isinstance(event.get("deselected"), list):
            deselected += [str(test) for test in event["deselected"]]
        elif isinstance(event.get("finished"), int):
            finished = event["finished"]
    if not seen:
        return None
    return Witnessed(outcomes, tuple(sorted(hooks)), tuple(deselected), finished)


@dataclasses.dataclass(frozen=True)
class ReadBack:
    """What a test command left: the plugin's record and the JUnit XML (None: absent), and
    why a file there could not be read (a link, a FIFO, too large)."""

    witnessed: Witnessed | None
    suite: junit.SuiteReport | None
    refused: tuple[str, ...] = ()


def read(workspace: Path, folder: str) -> ReadBack:
    """The record and the JUnit XML in ``workspace/folder``, never through a link."""
    refused = []
    found: dict[str, bytes | None] = {}
    for name, limit in (("witness.jsonl", RECORD_LIMIT), ("junit.xml", JUNIT_LIMIT)):
        found[name] = None
        try:
            found[name] = read_back(workspace, f"{folder}/{name}", limit)
        except Unreadable as exc:
            refused.append(str(exc))
    record, xml = found["witness.jsonl"], found["junit.xml"]
    witnessed = parse(record.decode("utf-8", errors="replace")) if record is not None else None
    return ReadBack(witnessed, junit.parse(xml) if xml is not None else None, tuple(refused))


def install(folder: Path) -> Path:
    """The plugin's module in ``folder`` (a place of the harness's, outside any workspace);
    returns the folder to put on PYTHONPATH. Written whole, then renamed: concurrent workers."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{MODULE}.py"
    source = SOURCE.read_bytes()
    if not target.is_file() or target.is_symlink() or target.read_bytes() != source:
        partial = f".{MODULE}.{os.getpid()}.partial"
        write_new(folder, partial, source)
        shutil.move(str(folder / partial), str(target))
    return folder
