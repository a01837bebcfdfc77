"""The logs of a cluster's parts for the page of their merge: each element of an array job
(``codebench launch``) leaves its run folder as ``OUT/parts/I.logs.tar.gz`` beside its report
``I.json``; its items' log paths name that folder on the node that graded them, which the
machine drawing the page may not have. The tarball is unpacked into the page's folder
(``DIR/parts/I.run``; its members as tarfile's ``data`` filter allows: no links out, no device,
no absolute name) and the items' paths are made to point there."""

from __future__ import annotations

import copy
import json
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# A part's tarball, as launch names it beside the part's report ("3.json", "3.logs.tar.gz").
SUFFIX = ".logs.tar.gz"


def with_part_logs(report: dict[str, Any], parts: Sequence[Path], folder: Path) -> tuple[dict[str, Any], list[str]]:
    """``report`` (a merge of ``parts``) with each item's logs where its part's tarball was
    unpacked under ``folder``, and a line per part whose tarball could not be (its items keep
    the paths the element wrote)."""
    moved = copy.deepcopy(report)
    where: dict[str, tuple[str, Path]] = {}  # node id -> (the element's run folder, its copy here)
    problems = []
    for part in parts:
        tarball = part.with_name(part.name.removesuffix(".json") + SUFFIX)
        if not tarball.is_file():
            continue
        data = json.loads(part.read_text())
        run_dir = str(data.get("run_dir") or "")
        target = folder / "parts"
        try:
            with tarfile.open(tarball) as archive:
                top = {Path(member.name).parts[0] for member in archive.getmembers() if Path(member.name).parts}
                archive.extractall(target, filter="data")
        except (tarfile.TarError, OSError) as exc:
            problems.append(f"{tarball}: its logs could not be unpacked ({exc}); its items link the element's paths")
            continue
        # The tarball holds the folder given as --codebench-run-dir: the run's own folder, or
        # (launch's elements) the folder the run's is made in.
        held = Path(run_dir)
        if held.name not in top and held.parent.name in top:
            held = held.parent
        for item in data.get("items") or []:
            where[item["nodeid"]] = (str(held), target / held.name)
    for item in moved.get("items") or []:
        if item["nodeid"] in where:
            old, new = where[item["nodeid"]]
            item["logs"] = {phase: _moved(str(path), old, new) for phase, path in (item.get("logs") or {}).items()}
    return moved, problems


def _moved(path: str, old: str, new: Path) -> str:
    if old and path.startswith(old.rstrip("/") + "/"):
        return str(new / path[len(old.rstrip("/")) + 1 :])
    return path
