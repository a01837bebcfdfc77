"""What goes in the page's data files: one TypedDict per record, as the scripts in assets/js read them."""

from __future__ import annotations

from typing import Any, TypedDict


class Metric(TypedDict):
    """One figure of a leaderboard row: pass@1, fast_1.0, geomean... ``value`` exactly as the
    JSON report gives it, in the report's unit (percent for pass@k and fast_p, x for speedups),
    with its 95% interval where the report has one."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    unit: str


class LeaderRow(TypedDict):
    """One model (solution set) of the leaderboard; ``model`` "" for a run of one unnamed set."""

    model: str
    metrics: list[Metric]
    #: Items by outcome, in the Outcome enum's order.
    counts: dict[str, int]
    items: int
    #: Skips and errors that stay out of the score (the machine's doing).
    excused: int
    #: Problems this machine could not grade at all (every item excused): out of pass@k.
    not_graded: int
    #: Problems in pass@k's denominator; None where the benchmark gives no pass@k.
    problems: int | None
    #: Why the run has no score on this machine (no GPU), else None: its pass@k cells are empty.
    no_score: str | None


class GroupRow(TypedDict):
    """One group: a cell per model, in Overview's ``models`` order, each [value, low, high]
    (compact: PIE's groups are its problems, thousands of rows in a large run)."""

    group: str
    cells: list[list[float | None]]


class GroupTable(TypedDict):
    #: What a cell is: "pass@1" (the benchmark's per-group figure) or "passed" (percent of the
    #: group's scored items that passed, where the benchmark gives none per group).
    metric: str
    rows: list[GroupRow]


class RunHeader(TypedDict):
    """What the header of every view says of the run."""

    benchmark: str
    dataset_path: str
    release: str | None
    sha256: str | None
    harness_version: str
    started: str | None
    wall_seconds: float | None
    run_dir: str
    #: The machine: (label, text) pairs (GPU, toolkit, runner, sandbox, calibration...).
    machine: list[list[str]]
    #: The run's command line, as a shell runs it (overview.command_lines).
    command: str
    #: The same without its positional arguments: an item's rerun line is it and the item's
    #: quoted node id; "" where the report does not say how it ran (a merge).
    rerun: str
    merged_from: list[str]
    #: What the figures are over where it is not every item (reports.scope's lines: a
    #: selection, an interruption); empty for a whole run.
    scope: list[str]
    #: The model of a run of one set, as its file names it (the report's ``model``): the
    #: name shown for the run's one row, whose key stays "".
    model: str | None


class Overview(TypedDict):
    """``data/overview.js``: everything the page needs at open, nothing per item."""

    run: RunHeader
    #: Outcome names; an item's outcome code is ``codes[i]`` for ``outcomes[i]``.
    outcomes: list[str]
    codes: str
    models: list[str]
    leaderboard: list[LeaderRow]
    groups: GroupTable
    comparisons: list[Any]
    items: int
    tasks: int
    #: The matrix's columns: [index in ``models`` (-1: no model), sample] each.
    slots: list[list[int]]
    #: The node ids' common start (``pie/generations::``): a cell's node id is
    #: ``prefix + TASK[MODEL:SAMPLE]`` unless its row names it.
    prefix: str
    matrix_files: int
    item_files: int
    #: Whether any item has a speedup (the Speed view and data/speed.js).
    speed: bool


class MatrixChunk(TypedDict):
    """``data/matrix-N.js``: rows of tasks, each [task id, group index (-1: none), one outcome
    code per slot ("." for no item), node ids per slot or null where ``prefix`` makes them]."""

    start: int
    groups: list[str]
    rows: list[list[Any]]


class ModelSpeed(TypedDict):
    model: str
    #: Every passed item's speedup, and which of them are suspect (indexes into ``speedups``).
    speedups: list[float]
    suspect: list[int]
    ids: list[str]
    #: The best speedup per task (index into Speed's ``tasks``), None where it has none.
    best: list[float | None]
    #: fast_p over p: the percent of problems correct with a best speedup above each ``p``.
    fast_p: list[float]
    problems: int


class Speed(TypedDict):
    """``data/speed.js``, loaded by the Speed view."""

    tasks: list[str]
    p: list[float]
    models: list[ModelSpeed]


class LogView(TypedDict):
    name: str
    #: The log as shown (ANSI stripped, capped); None where the file is gone.
    text: str | None
    #: The whole log's path relative to the page, where ``text`` was cut.
    whole: str | None
    path: str


class SolutionFile(TypedDict):
    path: str
    text: str


class ItemDetail(TypedDict):
    """One item in ``data/items/N.js`` (by :func:`~.items.shard_of` its node id)."""

    nodeid: str
    id: str
    task_id: str
    sample: int
    model: str | None
    group: str | None
    status: str
    outcome: str
    reason: str
    command: str | None
    exit_code: int | None
    output_tail: str
    figures: dict[str, Any]
    excused: bool
    cached: bool
    same_as: str | None
    started: str | None
    wall_seconds: float | None
    logs: list[LogView]
    solution: list[SolutionFile] | None
