"""What grading one (task, sample) concluded: plain data that travels from xdist workers unchanged."""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Any

from .runners.text import printable

if TYPE_CHECKING:
    from .runners import RunResult


class Status(enum.StrEnum):
    """How pytest reports an item."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"


class Outcome(enum.StrEnum):
    """One outcome enum for every benchmark: each member is a category of one pytest status.

    Failures are the model's. ``SKIPPED`` and ``ERROR`` count against it too once its code
    could have acted, unless the verdict is ``excused`` (see :meth:`Verdict.leaves_score`).
    """

    PASSED = "passed"
    #: The solutions name no answer for the task: the problem still counts, as failed.
    MISSING_SOLUTION = "missing_solution"
    INVALID_SOLUTION = "invalid_solution"
    EMPTY_PATCH = "empty_patch"
    PATCH_FAILED = "patch_failed"
    SETUP_FAILED = "setup_failed"
    MISSING_API = "missing_api"
    BUILD_ERROR = "build_error"
    BUILD_TIMEOUT = "build_timeout"
    TEST_FAILED = "test_failed"
    TEST_TIMEOUT = "test_timeout"
    WRONG_OUTPUT = "wrong_output"
    RUNTIME_ERROR = "runtime_error"
    NOT_FASTER = "not_faster"
    VACUOUS_TESTS = "vacuous_tests"
    #: compute-sanitizer found errors (racecheck: or warnings) in a passing test, or could
    #: not vouch for it (the gate fails closed).
    SANITIZER_FAILED = "sanitizer_failed"
    #: The suite's own code changed how its tests are run or reported: a canary test the
    #: harness added came back wrong or missing, or its reporting plugin was not itself.
    TAMPERED = "tampered"
    SKIPPED = "skipped"
    ERROR = "error"

    @property
    def status(self) -> Status:
        if self in (Outcome.PASSED, Outcome.SKIPPED, Outcome.ERROR):
            return Status(self.value)
        return Status.FAILED


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The grade of one item.

    ``figures`` holds numbers worth reporting (``build_seconds``, ``test_seconds``...);
    ``logs`` maps a phase to the file holding its whole (capped) output.
    """

    outcome: Outcome
    reason: str = ""
    command: str | None = None
    exit_code: int | None = None
    output_tail: str = ""
    figures: dict[str, float | str] = dataclasses.field(default_factory=dict)
    logs: dict[str, str] = dataclasses.field(default_factory=dict)
    #: A skip or error that is the machine's doing, not the model's (a requirement this
    #: machine cannot meet, no GPU, the problem's own reference failing or skipping here too):
    #: it leaves the problem out of the score instead of counting as a failure.
    excused: bool = False

    def __post_init__(self) -> None:
        # Reasons and output tails quote what the model wrote: no terminal control sequences.
        for name in ("reason", "command", "output_tail"):
            if getattr(self, name):
                object.__setattr__(self, name, printable(getattr(self, name)))

    @classmethod
    def of_run(cls, outcome: Outcome, reason: str, result: RunResult, **fields: Any) -> Verdict:
        """The verdict on a command's run: its command, exit code and the tail of its output."""
        return cls(
            outcome, reason, command=result.command, exit_code=result.exit_code, output_tail=result.tail(), **fields
        )

    def leaves_score(self, model_acted: bool) -> bool:
        """Whether this verdict leaves its item out of the score: only a skip or an error, and
        only one the benchmark excused as the machine's doing or one that came before the
        model's answer could act (``model_acted``: its commands ran, or the harness was
        handling it when it stopped). Any other skip or error counts as failed: a model must
        not raise its score by making the harness give up."""
        if self.outcome.status in (Status.PASSED, Status.FAILED):
            return False
        return self.excused or not model_acted

    def describe(self) -> str:
        """The failure text: category, command, exit code, then the tail of the output."""
        lines = [f"[{self.outcome.value}] {self.reason}".rstrip()]
        if self.command is not None:
            lines.append(f"command: {self.command}")
        if self.exit_code is not None:
            lines.append(f"exit code: {self.exit_code}")
        if self.output_tail:
            lines += ["--- output (tail) ---", self.output_tail.rstrip()]
        lines += [f"{phase} log: {path}" for phase, path in self.logs.items()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Builtins only: execnet carries nothing else between xdist processes."""
        return {**dataclasses.asdict(self), "outcome": self.outcome.value}
