"""The records that flow from a benchmark's loader through the core: one :class:`Case` per
test item, gathered in a :class:`Dataset`."""

from __future__ import annotations

import dataclasses
from typing import Any

from .names import escape_controls


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
    #: The solution set (model) the sample comes from; None where the run has one set, not named.
    model: str | None = None
    #: The image its commands run in, where its task names one of its own (ComputeEval's
    #: ``base_image``): container runners honour it, the local runner cannot.
    image: str | None = None

    def __post_init__(self) -> None:
        # What names the item (its node id, its files, the reports' keys) holds no lone
        # surrogate (a dataset's or a model's text that was not UTF-8) and nothing a terminal acts
        # on (an ESC sequence that clears the screen, a CR, a bidi override): each as its escape,
        # ``\udcff``, ``\x1b``, so that pytest's files, xdist's messages and every report carry
        # it, and every line that names the item shows it as it is.
        for field in ("id", "task_id", "model", "group"):
            value = getattr(self, field)
            if isinstance(value, str):
                object.__setattr__(self, field, escape_controls(value))


@dataclasses.dataclass(frozen=True)
class Dataset:
    """What a benchmark loaded: its cases and what identifies the data they came from."""

    path: str
    sha256: str
    release: str | None
    cases: list[Case]

    def to_json(self) -> dict[str, Any]:
        """Every task's record once (``records``), each case naming its own by position: the
        samples of a task share one record, and 100 samples a task would write it 100 times
        (and make the workers that read it back hold 100 copies)."""
        # Shallow on purpose: records are JSON already, and asdict's deep copy of every
        # record costs seconds on a large dataset.
        records: list[dict[str, Any]] = []
        position: dict[int, int] = {}  # by identity: the cases hold their records meanwhile
        cases = []
        for case in self.cases:
            at = position.setdefault(id(case.record), len(records))
            if at == len(records):
                records.append(case.record)
            cases.append({**vars(case), "record": at})
        return {**vars(self), "records": records, "cases": cases}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Dataset:
        fields = dict(data)
        records = fields.pop("records")
        cases = [Case(**{**case, "record": records[case["record"]]}) for case in fields.pop("cases")]
        return cls(**fields, cases=cases)
