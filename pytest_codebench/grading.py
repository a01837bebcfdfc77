"""One item's grading, set up once: every step runs and logs through it, and it concludes.

Like SWE-bench's ``run_instance``, the per-item state (the case, its workspace, the runner,
the figures and logs gathered so far) lives in one place, so that a benchmark's ``grade``
only says what to run and what the results mean.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from .cases import Case
from .context import RunContext
from .first_error import first_error_line
from .options import CACHE_DIR
from .runners import Runner, RunResult
from .verdict import Outcome, Verdict

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .runners import RunHow

VERDICT_KEY = pytest.StashKey[Verdict]()


@dataclasses.dataclass(frozen=True)
class Step:
    """One command of an item, and how its failure and its timeout read."""

    phase: str
    command: str
    failed: Outcome
    timed_out: Outcome


@dataclasses.dataclass
class Grading:
    """One item's grading: runs its steps in its workspace, keeps each step's log and
    seconds, and concludes with a verdict carrying them.

    ``prefix`` names the logs and figures of a second grading in the same item (the
    problem's reference, graded to tell the machine's fault from the model's)."""

    context: RunContext
    case: Case
    workspace: Path
    runner: Runner
    prefix: str = ""
    figures: dict[str, float | str] = dataclasses.field(default_factory=dict)
    logs: dict[str, str] = dataclasses.field(default_factory=dict)
    #: Whether a command ran where the model's code lives (see :meth:`model_place`): from
    #: then on a skip or an error may be the model's doing, unless the verdict is excused.
    model_ran: bool = dataclasses.field(default=False, init=False)

    def __post_init__(self) -> None:
        # Every command of the item goes through this runner, the benchmark's own helpers
        # included (PIE's sandbox runs programs in a folder of its own), so it is here that
        # the grading learns the model's code ran: no benchmark has to remember to say so.
        self.runner = cast(Runner, _Watched(self.runner, self))

    def model_place(self, cwd: Path) -> bool:
        """Whether a command run in ``cwd`` may run the model's code: anywhere but the places
        the harness keeps for itself (the run's folder and the machine's cache, where probes,
        references and shared environments run), the item's own workspace always."""
        if cwd == self.workspace:  # nearly every command: no need to resolve anything
            return True
        where = Path(cwd).resolve()
        if where.is_relative_to(self.workspace.resolve()):
            return True
        harness = (self.context.run_dir, Path(self.context.settings[CACHE_DIR]))
        return not any(where.is_relative_to(Path(place).resolve()) for place in harness)

    def run(self, phase: str, command: str, *, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        """``command`` in the workspace; its output is logged and its seconds recorded."""
        result = self.runner.run(command, cwd=self.workspace, timeout=timeout, **how)
        self.log(phase, result)
        self.figures[f"{phase}_seconds"] = round(result.seconds, 3)
        return result

    def log(self, phase: str, result: RunResult | str) -> str:
        """Keep the whole (capped) output of one step, or a text the harness made, under
        the run's logs; returns its path."""
        if isinstance(result, str):
            result = RunResult(command=phase, exit_code=0, timed_out=False, seconds=0, output=result)
        path = self._log_folder / f"{self.prefix}{phase}.log"
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        _write(path, f"$ {result.command}\n# {status} after {result.seconds:.2f} s\n{result.output}")
        self.logs[f"{self.prefix}{phase}"] = str(path)
        return str(path)

    @functools.cached_property
    def _log_folder(self) -> Path:
        """The item's folder of logs, made at its first log."""
        directory = self.context.log_folder(self.case.id)
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def verdict(self, outcome: Outcome, reason: str = "", result: RunResult | None = None, **fields: Any) -> Verdict:
        """The conclusion, with the figures and logs so far; given the ``result`` of the
        command it is about, also its command, exit code and the tail of its output. A build
        error's reason starts with the first error its output names (the compiler's, not
        pip's wrapping): the tail shows only the last lines, where the cause seldom is."""
        if result is not None and outcome is Outcome.BUILD_ERROR:
            first = first_error_line(result.output)
            reason = f"{first} ({reason})" if first and reason else first or reason
        if result is not None:
            fields = {"command": result.command, "exit_code": result.exit_code, "output_tail": result.tail(), **fields}
        return Verdict(outcome, reason, figures=dict(self.figures), logs=dict(self.logs), **fields)

    def conclude(self, verdict: Verdict) -> Verdict:
        """A verdict a pure rule reached, with its own figures added to those gathered so far
        and every log."""
        self.figures.update(verdict.figures)
        return dataclasses.replace(verdict, figures=dict(self.figures), logs=dict(self.logs))

    def step(self, step: Step, *, timeout: float, **how: Unpack[RunHow]) -> Verdict | None:
        """Run ``step``: the verdict when it failed or timed out, None when it passed."""
        result = self.run(step.phase, step.command, timeout=timeout, **how)
        if result.timed_out:
            return self.verdict(step.timed_out, f"{step.phase} exceeded {timeout:g} s", result)
        if not result.ok:
            return self.verdict(step.failed, f"{step.phase} failed", result)
        return None


def _write(path: Path, text: str) -> None:
    """``path.write_text(text)`` in the fewest system calls: two logs an item add up."""
    data = text.encode("utf-8", "replace")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


class _Watched:
    """An item's runner as its grading hands it out: the same runner, noting in the grading
    when a command runs where the model's code lives (before it runs: one that dies half way
    may have acted)."""

    def __init__(self, runner: Runner, grading: Grading) -> None:
        self._runner = runner
        self._grading = grading

    def run(self, command: str, *, cwd: Path, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        if self._grading.model_place(cwd):
            self._grading.model_ran = True
        return self._runner.run(command, cwd=cwd, timeout=timeout, **how)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)


@dataclasses.dataclass
class Exposure:
    """How far an item got in handing the model's answer to the harness: what tells, when it
    ends in a skip or an error, the machine's doing from the model's."""

    #: The case's own error is the model's (a malformed answer), not the dataset's.
    answer_error: bool = False
    #: The harness was writing or grading the answer when it stopped, without saying why
    #: (an unexpected exception, a timeout): the answer may have made it stop.
    handling: bool = False
    grading: Grading | None = None

    @property
    def model_acted(self) -> bool:
        return self.answer_error or self.handling or (self.grading is not None and self.grading.model_ran)


EXPOSURE_KEY = pytest.StashKey[Exposure]()
