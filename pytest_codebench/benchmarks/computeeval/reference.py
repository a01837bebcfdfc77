"""Whether this machine can grade a problem at all: the problem's own reference solution,
built and tested once per machine, toolkit and problem, remembered in the cache directory.

A model's build or test failure only counts when the reference passes the same steps here.
The check runs only after a failure, so a run whose solutions pass pays nothing for it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from filelock import FileLock

from pytest_codebench.gpu.cuda import Machine
from pytest_codebench.once import write_atomically
from pytest_codebench.verdict import Outcome, Verdict

from .rules import SKIP_KIND

# Bumped when what a stored answer means changes, so older answers are not trusted
# (2: tests run under the main guard, and a skip records how it skipped; 3: a pass also
# passed its canary run).
FORMAT = 3


class StoredReference(TypedDict):
    """What the cache keeps of one reference run."""

    outcome: str
    """The reference's outcome (``passed``, ``build_error``, ``skipped``...)."""
    reason: str
    output_tail: str
    """The tail of the failing command's output, where the first error line is found."""
    skip: str
    """How its test said it could not judge here (no GPU, exit 200, a SKIP line), else ""."""


def reference_key(record: Mapping[str, Any], machine: Machine, runner: str) -> str:
    """Names one (problem, machine) pair: the problem's exact record, the toolkit and GPUs
    probed, and the runner's own fingerprint (host, image)."""
    identity = {
        "format": FORMAT,
        "problem": record,
        "toolkit": machine["toolkit"],
        "gpus": machine["gpu"].get("gpus"),
        "runner": runner,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:40]


class ReferenceCache:
    """References' outcomes by :func:`reference_key`, shared by every run on the machine.

    One process runs a given reference while the others wait for its answer (a file lock per
    key). Harness trouble during the run (an exception) is not stored: the next item tries again.
    """

    def __init__(self, cache_dir: Path) -> None:
        self.directory = cache_dir / "computeeval" / "references"

    def outcome(self, key: str, run: Callable[[], Verdict]) -> Verdict:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{key}.json"
        with FileLock(str(path) + ".lock"):
            if path.exists():
                stored: StoredReference = json.loads(path.read_text())
                figures: dict[str, float | str] = {SKIP_KIND: stored["skip"]} if stored["skip"] else {}
                return Verdict(
                    Outcome(stored["outcome"]), stored["reason"], output_tail=stored["output_tail"], figures=figures
                )
            verdict = run()
            stored = {
                "outcome": verdict.outcome.value,
                "reason": verdict.reason,
                "output_tail": verdict.output_tail,
                "skip": str(verdict.figures.get(SKIP_KIND, "")),
            }
            write_atomically(path, json.dumps(stored))
            return verdict
