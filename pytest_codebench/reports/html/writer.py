"""Writes the page: DIR/index.html, DIR/assets (scripts, styles, the vendored chart library),
DIR/data (the JSON report as JS data files) and DIR/logs (whole logs the page cut). Pure in the
sense that matters for tests: a report dict in, files out; the only other thing read is the
items' log files the report names."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, cast

from ..reporting import ItemResult
from .items import item_shards, shard_count
from .jsdata import loader_call
from .matrix import matrix_chunks, outcome_codes, outcome_names, prefix_of, slots_of
from .overview import group_table, header, leaderboard
from .records import Overview
from .speed import has_speed, speed_data

# What a page is made of in its folder, replaced together (index.html last).
PARTS = ("assets", "data", "logs")
# The page's scripts, in load order (each a small file of one job, see assets/js).
# The views, then the data at open, then app.js, which draws the first view.
SCRIPTS = ("core.js", "dom.js", "header.js", "charts.js", "overview.js", "speed.js", "problems.js", "item.js")
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'none'">
<title>codebench report</title>
<link rel="stylesheet" href="assets/css/page.css">
</head>
<body>
<header id="run"></header>
<nav id="views"><a href="#/">Overview</a> <a href="#/speed">Speed</a> <a href="#/problems">Problems</a></nav>
<main id="view"></main>
<script src="assets/vendor/chart.umd.min.js"></script>
{scripts}
<script src="data/overview.js"></script>
<script src="assets/js/app.js"></script>
</body>
</html>
"""


def _items(report: Mapping[str, Any]) -> list[ItemResult]:
    """The report's items by node id, each with the keys an older report may lack."""
    defaults: dict[str, Any] = {"group": None, "model": None, "sample": 0, "figures": {}, "logs": {}, "excused": False}
    items = [cast(ItemResult, {**defaults, **item}) for item in report.get("items") or []]
    for item in items:
        item.setdefault("task_id", item["nodeid"].rpartition("::")[2])
    return sorted(items, key=lambda item: item["nodeid"])


def write_html(report: Mapping[str, Any], out: Path) -> Path:
    """Writes the page of ``report`` (a JSON report as read) into the folder ``out``; returns
    its index.html. What an earlier page left there (assets, data, logs) is replaced, once the
    new page is whole: it is written beside them first, so that a run stopped half way (Ctrl-C)
    leaves the earlier page as it was, never a part of a new one."""
    out.mkdir(parents=True, exist_ok=True)
    partial, old = Path(tempfile.mkdtemp(dir=out, prefix=".partial-")), Path(tempfile.mkdtemp(dir=out, prefix=".old-"))
    try:
        _write(report, partial)
        for name in (*PARTS, "index.html"):
            if (out / name).exists():
                os.replace(out / name, old / name)
            if (partial / name).exists():
                os.replace(partial / name, out / name)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return out / "index.html"


def _write(report: Mapping[str, Any], out: Path) -> None:
    """The page of ``report`` in the empty folder ``out``."""
    items = _items(report)
    (out / "data" / "items").mkdir(parents=True)
    with resources.as_file(resources.files(__package__) / "assets") as assets:
        shutil.copytree(assets, out / "assets")
    rows = leaderboard(report, items, outcome_names(items))
    models = [row["model"] for row in rows]
    slots, prefix = slots_of(items, models), prefix_of(items)
    chunks = matrix_chunks(items, models, slots, prefix)
    speed = has_speed(items)
    overview: Overview = {
        "run": header(report),
        "outcomes": outcome_names(items),
        "codes": outcome_codes(items),
        "models": models,
        "leaderboard": rows,
        "groups": group_table(report, items),
        # A report older than named differences gave pass@1's alone, as pass_at_1.
        "comparisons": [
            {"differences": {"pass@1": pair.get("pass_at_1")}, **pair} if "differences" not in pair else pair
            for pair in report.get("comparisons") or []
        ],
        "items": len(items),
        "tasks": len({item["task_id"] for item in items}),
        "slots": slots,
        "prefix": prefix,
        "matrix_files": len(chunks),
        "item_files": shard_count(len(items)),
        "speed": speed,
    }
    data = out / "data"
    _text(data / "overview.js", loader_call("overview", overview))
    for number, chunk in enumerate(chunks):
        _text(data / f"matrix-{number}.js", loader_call(f"matrix-{number}", chunk))
    if speed:
        _text(data / "speed.js", loader_call("speed", speed_data(report, items, models)))

    def keep(relative: str, text: str) -> None:
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        _text(path, text)

    for shard, details in item_shards(items, keep):
        _text(data / "items" / f"{shard}.js", loader_call(f"items/{shard}", details))
    scripts = "\n".join(f'<script src="assets/js/{name}"></script>' for name in SCRIPTS)
    (out / "index.html").write_text(PAGE.replace("{scripts}", scripts))


def _text(path: Path, text: str) -> None:
    """``text`` as UTF-8, a lone surrogate (a task id or model name that was not valid UTF-8)
    as its escape ``\\udcff``: inside the data's JSON strings, the same string again."""
    path.write_bytes(text.encode("utf-8", "backslashreplace"))
