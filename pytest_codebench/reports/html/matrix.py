"""The Problems view's task x model matrix, compact: a row per task with one outcome code per
column (a model's sample), node ids only where they are not the usual ``PREFIX TASK[MODEL:N]``,
in files of a few thousand rows (100,000 items load in well under a second)."""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...verdict import Outcome
from ..reporting import ItemResult
from .records import MatrixChunk

# Rows per data/matrix-N.js file.
CHUNK = 2000
# One character per outcome, in the enum's order, then any outcome a newer harness wrote.
CODES = string.ascii_letters + string.digits
ABSENT = "."


def outcome_names(items: Sequence[ItemResult]) -> list[str]:
    known = [outcome.value for outcome in Outcome]
    return known + sorted({item["outcome"] for item in items} - set(known))


def prefix_of(items: Sequence[ItemResult]) -> str:
    """The most common node id start up to its ``::`` (one dataset file per run)."""
    starts = Counter(item["nodeid"].rpartition("::")[0] + "::" for item in items if "::" in item["nodeid"])
    return starts.most_common(1)[0][0] if starts else ""


def usual_nodeid(prefix: str, item: ItemResult) -> str:
    model = item.get("model")
    return f"{prefix}{item['task_id']}[{f'{model}:' if model else ''}{item['sample']}]"


def slots_of(items: Sequence[ItemResult], models: Sequence[str]) -> list[list[int]]:
    """The matrix's columns: (model index, sample), each model's samples side by side."""
    index = {name: number for number, name in enumerate(models)}
    return [list(slot) for slot in sorted({(index.get(item.get("model") or "", -1), item["sample"]) for item in items})]


def matrix_chunks(
    items: Sequence[ItemResult], models: Sequence[str], slots: Sequence[Sequence[int]], prefix: str
) -> list[MatrixChunk]:
    codes = {name: CODES[number % len(CODES)] for number, name in enumerate(outcome_names(items))}
    index = {name: number for number, name in enumerate(models)}
    column = {(slot[0], slot[1]): number for number, slot in enumerate(slots)}
    tasks: dict[str, list[ItemResult]] = {}
    for item in items:
        tasks.setdefault(item["task_id"], []).append(item)
    groups = sorted({group for item in items if (group := item.get("group"))})
    group_index = {group: number for number, group in enumerate(groups)}
    rows: list[list[Any]] = []
    for task in sorted(tasks):
        cells = [ABSENT] * len(slots)
        nodeids: list[str | None] = [None] * len(slots)
        for item in tasks[task]:
            at = column[(index.get(item.get("model") or "", -1), item["sample"])]
            cells[at] = codes[item["outcome"]]
            if item["nodeid"] != usual_nodeid(prefix, item):
                nodeids[at] = item["nodeid"]
        group = tasks[task][0].get("group")
        named = nodeids if any(nodeids) else None
        rows.append([task, group_index[group] if group else -1, "".join(cells), named])
    return [
        {"start": start, "groups": groups, "rows": rows[start : start + CHUNK]} for start in range(0, len(rows), CHUNK)
    ]


def outcome_codes(items: Sequence[ItemResult]) -> str:
    return "".join(CODES[number % len(CODES)] for number, _ in enumerate(outcome_names(items)))
