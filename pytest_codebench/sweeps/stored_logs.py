"""The logs of a verdict the store served: copied into this run's folder, where its report
points, because the run that graded it may be pruned (``--codebench-keep-logs``) or belong to
another checkout, whose paths would mean nothing here."""

from __future__ import annotations

import dataclasses
import shutil
import stat
from pathlib import Path

from ..names import safe_name
from ..verdict import Verdict

# The figure that says where the logs of a served verdict are, or why they are not.
STORED_LOGS = "stored_logs"


def bring_logs(verdict: Verdict, into: Path, run: str) -> Verdict:
    """``verdict`` with its logs copied into ``into`` (the item's folder in this run's logs),
    its paths then this run's; a log gone since (its run pruned) is dropped and said in
    :data:`STORED_LOGS`. Only regular files are copied (never a link): the logs are the
    harness's own, but a path stored by an older run is not trusted to still be one."""
    kept: dict[str, str] = {}
    gone: list[str] = []
    for phase, given in verdict.logs.items():
        source = Path(given)
        try:
            regular = stat.S_ISREG(source.lstat().st_mode)
        except OSError:
            regular = False
        if not regular:
            gone.append(phase)
            continue
        into.mkdir(parents=True, exist_ok=True)
        target = into / safe_name(f"stored-{source.name}")
        shutil.copyfile(source, target, follow_symlinks=False)
        kept[phase] = str(target)
    said = (
        f"copied from run {run}" if not gone else f"run {run}, which graded it, no longer has its {', '.join(gone)} log"
    )
    figures = {**verdict.figures, STORED_LOGS: said} if verdict.logs else dict(verdict.figures)
    return dataclasses.replace(verdict, logs=kept, figures=figures)
