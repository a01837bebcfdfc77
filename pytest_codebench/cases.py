"""The records that flow from a benchmark's loader through the core: one :class:`Case` per
test item, gathered in a :class:`Dataset`."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Case:
    """One test item: a task record and one sample of the model's answer for it.

    A record that could not be read still becomes a case, with ``error`` saying why, so one
    bad line is reported as an error of its own and never hides the others.
    """

    id: str
    task_id: str
    sample: int
    record: dict[str, Any] = dataclasses.field(default_factory=dict)
    solution: dict[str, Any] | None = None
    group: str | None = None
    timeout: float | None = None
    error: str | None = None
    line: int = 0  # where the sample's record starts in its file (0-based), for reports
    #: Why there is no answer to grade (the solutions name none for the task): the item
    #: fails as ``missing_solution``; the problem stays in the score.
    missing: str | None = None
    #: ``error`` is the model's answer's (a malformed sample of a task of the dataset), not
    #: the dataset's: the item still errors, and counts as failed.
    answer_error: bool = False


@dataclasses.dataclass(frozen=True)
class Dataset:
    """What a benchmark loaded: its cases and what identifies the data they came from."""

    path: str
    sha256: str
    release: str | None
    cases: list[Case]

    def to_json(self) -> dict[str, Any]:
        # Shallow on purpose: records are JSON already, and asdict's deep copy of every
        # record costs seconds on a large dataset.
        return {**vars(self), "cases": [vars(case) for case in self.cases]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Dataset:
        return cls(**{**data, "cases": [Case(**case) for case in data["cases"]]})
