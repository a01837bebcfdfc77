"""What the harness's own reporting plugin (:mod:`.codebench_witness`) saw of a suite, read
back from the workspace, and the suite report the verdict is drawn from; the plugin's copy for
one command, under a name of its own, with that command's nonce and canary tests.

The plugin's record is the source of each test's outcome; the suite's JUnit XML (written
outside the work tree) only adds failures the record lacks. Without the record the JUnit
XML alone is not trusted: the patch may have changed what writes it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from pytest_codebench.reports import junit

from .files import Unreadable, read_back, write_new

SOURCE = Path(__file__).with_name("codebench_witness.py")
SETTINGS = "_SETTINGS: dict[str, Any] = {}  # replaced by the harness's settings for the command"
ENV = "CODEBENCH_WITNESS"  # the file it appends to
RECORD_LIMIT = 32 << 20
JUNIT_LIMIT = 64 << 20
RAN = ("passed", "failed", "xpassed")  # a test that ran and was reported (xfailed: it did not pass)
SEVERITY = ("failed", "xfailed", "skipped", "xpassed", "passed")  # per id, the first of its phases' outcomes


@dataclasses.dataclass(frozen=True)
class Witnessed:
    """Per test id its outcome (one of :data:`SEVERITY`), the hook functions defined in the
    work tree (``file:hook``), the ids deselected, the exit status (None: the session never
    reached its end), who wrote the record: each session's (nonce, module name), and the
    tripwires it saw (pytest's machinery other than its files say)."""

    outcomes: dict[str, str]
    hooks: tuple[str, ...] = ()
    deselected: tuple[str, ...] = ()
    finished: int | None = None
    writers: tuple[tuple[str, str], ...] = ()
    tripwires: tuple[str, ...] = ()

    def without(self, tests: set[str]) -> Witnessed:
        """The record without ``tests`` (the harness's canaries)."""
        outcomes = {test: outcome for test, outcome in self.outcomes.items() if test not in tests}
        deselected = tuple(test for test in self.deselected if test not in tests)
        return dataclasses.replace(self, outcomes=outcomes, deselected=deselected)

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
    writers: list[tuple[str, str]] = []
    tripwires: list[str] = []
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
        elif "witness" in event:
            writers.append((str(event["witness"]), str(event.get("module"))))
        elif "tripwire" in event:
            tripwires.append(str(event["tripwire"]))
    if not seen:
        return None
    return Witnessed(outcomes, tuple(sorted(hooks)), tuple(deselected), finished, tuple(writers), tuple(tripwires))


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


@dataclasses.dataclass(frozen=True)
class Installed:
    """A copy of the plugin for one command: the module name to load, and the nonce that its
    record must begin with."""

    module: str
    nonce: str

    def wrote(self, witnessed: Witnessed) -> bool:
        """Whether every session that wrote the record was this copy (at least one did)."""
        return bool(witnessed.writers) and all(writer == (self.nonce, self.module) for writer in witnessed.writers)


def install(folder: Path, settings: dict[str, Any]) -> Installed:
    """A copy of the plugin in ``folder`` (a place of the harness's, outside any workspace,
    read-only to commands) under a random module name, with ``settings`` and a new nonce: a
    module of the work tree cannot be loaded in its place, since its name is drawn after the
    patch was written. Written whole, then renamed."""
    folder.mkdir(parents=True, exist_ok=True)
    installed = Installed(f"codebench_{secrets.token_hex(8)}", secrets.token_hex(16))
    source = SOURCE.read_text()
    assert source.count(SETTINGS) == 1, "the plugin's settings line moved"
    filled = {**settings, "nonce": installed.nonce}
    source = source.replace(SETTINGS, f"_SETTINGS: dict[str, Any] = json.loads({json.dumps(filled)!r})")
    partial = f".{installed.module}.{os.getpid()}.partial"
    write_new(folder, partial, source.encode())
    shutil.move(str(folder / partial), str(folder / f"{installed.module}.py"))
    return installed
