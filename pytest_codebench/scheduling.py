"""xdist's scheduling where one item grades its task's other samples too (PIE's rows).

A PIE row is checked and timed as a unit by whichever of its items comes first (the others read
its outcome): spread over workers by xdist's default ``load`` distribution, a row's items would
wait on each other's lock, one worker idle while the other times the row. Kept on one worker,
each worker grades rows of its own. Imported only where pytest-xdist is.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

from .sweeps.solution_sets import split_id


class TaskScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """``load``, with each task's items (of one solution set) sent to one worker together."""

    def _split_scope(self, nodeid: str) -> str:
        path, _, item_id = nodeid.rpartition("::")
        task, model, _ = split_id(item_id)
        return f"{path}::{task}[{model or ''}]"
