"""Each item's details in ``data/items/N.js``, a few dozen items a file, loaded when the item is
opened: the file of an item is :func:`shard_of` its node id, which the page computes the same
way (assets/js/core.js), so that opening an item needs no index of 100,000 node ids."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..reporting import ItemResult
from .logs import cap, read_log, strip_ansi
from .records import ItemDetail, LogView, SolutionFile

# Items per data/items/N.js file, on average.
PER_FILE = 50
# A log's file name under DIR/logs, from its item's position and phase: nothing of the model's.
SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def shard_count(items: int) -> int:
    return max(1, -(-items // PER_FILE))


def shard_of(nodeid: str, shards: int) -> int:
    """FNV-1a (32 bits) of the node id's UTF-8 bytes, modulo ``shards``; a lone surrogate is
    U+FFFD, as the page's TextEncoder makes it."""
    digest = 0x811C9DC5
    for byte in LONE_SURROGATE.sub("\ufffd", nodeid).encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return digest % shards


# The fields of a sample that hold the model's answer as text: PIE's program, ComputeEval's
# and TensorBench's patches.
ANSWER_FIELDS = ("code", "patch", "model_patch")


def solution_files(solution: Any, context: Mapping[str, str] | None = None) -> list[SolutionFile] | None:
    """The sample's answer as files, where the report carries it (``item["solution"]``, older
    reports do not), each a diff against what it replaces where the report has that
    (``item["context"]``: PIE's slow program, a ComputeEval context file)."""
    files = _answer_files(solution)
    if files is None or not context:
        return files
    return [{"path": file["path"], "text": _against(context.get(file["path"]), file)} for file in files]


def _against(before: str | None, file: SolutionFile) -> str:
    """The file as a diff against ``before`` showing it whole (every line, the changed ones
    marked); as it is where nothing was before it, or it is a diff itself."""
    if before is None or before == file["text"]:
        return file["text"]
    after = file["text"]
    lines = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        "before",
        "solution",
        n=before.count("\n") + after.count("\n") + 1,
        lineterm="",
    )
    return "\n".join(lines)


def _answer_files(solution: Any) -> list[SolutionFile] | None:
    """ComputeEval's ``files`` ([{"path", "content"}]), or the text of an answer field (a
    program, a patch: shown as a diff), or the record itself as JSON; None: no solution."""
    if solution is None:
        return None
    if not isinstance(solution, Mapping):
        return [{"path": "", "text": str(solution)}]
    files = solution.get("files")
    if isinstance(files, list):
        return [
            {"path": str(entry.get("path", "")), "text": str(entry.get("content", ""))}
            for entry in files
            if isinstance(entry, Mapping)
        ]
    answers = [name for name in ANSWER_FIELDS if isinstance(solution.get(name), str)]
    if answers:
        return [{"path": "", "text": solution[name]} for name in answers]
    return [{"path": "", "text": json.dumps(solution, indent=2, default=str)}]


# Writes a whole log under DIR/logs by its relative path (the writer's; a test's own).
WholeLog = Callable[[str, str], None]


def log_views(number: int, item: ItemResult, keep: WholeLog) -> list[LogView]:
    views: list[LogView] = []
    for phase, path in (item.get("logs") or {}).items():
        text = read_log(str(path))
        shown, cut = cap(text) if text is not None else (None, False)
        whole = None
        if cut and text is not None:
            whole = f"logs/{number}-{SAFE.sub('_', phase)[:80]}.txt"
            keep(whole, text)
        views.append({"name": str(phase), "text": shown, "whole": whole, "path": str(path)})
    return views


def detail(number: int, item: ItemResult, keep: WholeLog) -> ItemDetail:
    return {
        "nodeid": item["nodeid"],
        "id": item.get("id", ""),
        "task_id": item.get("task_id", ""),
        "sample": item.get("sample", 0),
        "model": item.get("model"),
        "group": item.get("group"),
        "status": item.get("status", ""),
        "outcome": item["outcome"],
        "reason": strip_ansi(item.get("reason") or ""),
        "command": item.get("command"),
        "exit_code": item.get("exit_code"),
        "output_tail": strip_ansi(item.get("output_tail") or ""),
        "figures": dict(item.get("figures") or {}),
        "excused": bool(item.get("excused")),
        "cached": bool(item.get("cached")),
        "same_as": item.get("same_as"),
        "started": item.get("started"),
        "wall_seconds": item.get("wall_seconds"),
        "logs": log_views(number, item, keep),
        "solution": solution_files(item.get("solution"), item.get("context")),
    }


def item_shards(items: Sequence[ItemResult], keep: WholeLog) -> Iterator[tuple[int, dict[str, ItemDetail]]]:
    """Each file's number and its items' details by node id; one item's details at a time in
    memory per file, so that 100,000 items with their logs never sit in memory at once."""
    shards = shard_count(len(items))
    members: list[list[int]] = [[] for _ in range(shards)]
    for number, item in enumerate(items):
        members[shard_of(item["nodeid"], shards)].append(number)
    for shard, numbers in enumerate(members):
        yield shard, {items[number]["nodeid"]: detail(number, items[number], keep) for number in numbers}
