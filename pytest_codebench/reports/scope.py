"""What a run's figures are over, computed once as the session finishes: every item of the
dataset, a selection of them (``-k``, ``-m``, ``--lf``, node ids, a shard...), or fewer than
it was to grade (interrupted). Every output renders this record: the terminal and markdown's
first lines, the JSON report's ``selection`` and ``interrupted``, JUnit's suite properties,
the page, and the gate (which never passes a partial run). Pure functions.

A selection is told by its counts, not by the options given: ``--lf`` after a run with no
failures selects every item, and is no selection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from .reporting import examples


class Selection(TypedDict):
    """The part of the dataset a run was to grade, where it is less than all of it."""

    items: int
    """The items the run was to grade."""
    of: int
    """The items the dataset gives (every task's samples, before any selection)."""
    by: list[str]
    """What chose them, as the user gave it (``-k 'CUDA/3'``, ``--codebench-shard 1/4``)."""


class Interrupted(TypedDict):
    """A run that ended before it reached every item it was to grade (Ctrl-C, ``-x``, a crash)."""

    not_reached: list[str]
    """The node ids of the items it did not reach."""
    items: int
    """The items it was to grade."""


@dataclasses.dataclass(frozen=True)
class Scope:
    """What the run's figures are over (see the module's docstring); both None: every item."""

    selection: Selection | None = None
    interrupted: Interrupted | None = None

    @property
    def whole(self) -> bool:
        return self.selection is None and self.interrupted is None

    def lines(self) -> list[str]:
        """The summary's first lines, which every text output starts with."""
        found = []
        if self.interrupted:
            missed = self.interrupted["not_reached"]
            ids = [nodeid.rpartition("::")[2] for nodeid in missed]
            found.append(
                f"interrupted: {len(ids)} of {self.interrupted['items']} items not reached ({examples(ids)}); "
                "the figures below are over the items graded"
            )
        if self.selection:
            found.append(f"selection: {selection_text(self.selection)}; the figures below are over them")
        return found

    def gate_missed(self) -> list[str]:
        """Why a gate cannot pass on this scope: a score over part of what was to be graded
        passes nothing. A selection is the user's choice, which the gate's lines state."""
        if not self.interrupted:
            return []
        count = len(self.interrupted["not_reached"])
        return [f"the run was interrupted: {count} of {self.interrupted['items']} items not reached"]

    def properties(self) -> list[tuple[str, str]]:
        """JUnit's suite properties: what a CI system reading JUnit alone must know."""
        found = []
        if self.interrupted:
            found.append(("interrupted", f"{len(self.interrupted['not_reached'])} of {self.interrupted['items']}"))
        if self.selection:
            found.append(("selection", selection_text(self.selection)))
        return found

    def to_json(self) -> dict[str, Any]:
        """The JSON report's ``selection`` and ``interrupted`` (null where whole)."""
        return {"selection": self.selection, "interrupted": self.interrupted}


def selection_text(selection: Selection) -> str:
    """``2 of the dataset's 9 items, chosen by -k 'CUDA/1'``."""
    how = ", ".join(selection["by"]) or "options pytest gave no name for"
    return f"{selection['items']} of the dataset's {selection['of']} items, chosen by {how}"


def scope_of(expected: Sequence[str], graded: set[str], dataset_items: int | None, by: Sequence[str]) -> Scope:
    """The scope of a run that was to grade ``expected`` (node ids), graded ``graded`` of them,
    of a dataset of ``dataset_items`` items (None: unknown, no selection said), chosen by ``by``."""
    not_reached = [nodeid for nodeid in expected if nodeid not in graded]
    interrupted: Interrupted | None = {"not_reached": not_reached, "items": len(expected)} if not_reached else None
    # A dataset that failed to load collected nothing: no selection to speak of.
    chosen = dataset_items is not None and 0 < len(expected) < dataset_items
    selection: Selection | None = (
        {"items": len(expected), "of": dataset_items, "by": list(by)} if chosen and dataset_items else None
    )
    return Scope(selection, interrupted)


def scope_from_json(report: Mapping[str, Any]) -> Scope:
    """The scope a JSON report gives (older reports: whole)."""
    return Scope(report.get("selection"), report.get("interrupted"))


def merged_scope(parts: Sequence[Mapping[str, Any]]) -> Scope:
    """The scope of the merge of ``parts`` (JSON reports): a part's interruption is the
    merge's; selections that together cover the dataset (its shards) make it whole."""
    not_reached = [nodeid for part in parts for nodeid in ((part.get("interrupted") or {}).get("not_reached") or [])]
    expected = sum((part.get("interrupted") or {}).get("items", len(part.get("items") or [])) for part in parts)
    interrupted: Interrupted | None = {"not_reached": not_reached, "items": expected} if not_reached else None
    selections = [part["selection"] for part in parts if part.get("selection")]
    of = max((selection["of"] for selection in selections), default=0)
    whole = not selections or expected >= of
    by = list(dict.fromkeys(how for selection in selections for how in selection["by"]))
    selection: Selection | None = None if whole else {"items": expected, "of": of, "by": by}
    return Scope(selection, interrupted)


def subset_refusal(path: str, report: Mapping[str, Any]) -> str | None:
    """Why a tool that compares or combines whole runs refuses the report at ``path``: its
    figures are over a selection, or it was interrupted. None where it is whole."""
    scope = scope_from_json(report)
    if scope.whole:
        return None
    return f"{path} is not over every item of its dataset: {'; '.join(scope.lines())}"
