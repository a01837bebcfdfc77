"""Whether a PIE row can tell a faster program from its slow one on this machine (its signal).

Every row carries a human ``target`` that PIE recorded as faster than the row's slow program.
Timed here, against the slow program, it must be measurably faster: the lower bound of its
speedup above 1.0. Where it is not, the machine cannot show the speedup PIE saw for that row,
and a candidate's speedup on the row says little. Such a candidate is still graded against the
slow program (its verdict is about itself), but the summary counts the rows that could not
discriminate, and names them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from ..speedup import bounds_text


def row_signal(figures: Mapping[str, Any]) -> tuple[bool, str] | None:
    """Whether the row's target was measurably faster than its slow program, and in words,
    from the row's figures (``reference_speedup`` with ``reference_ci_low``/``reference_ci_high``,
    ``reference_acc``); None where the row has no target."""
    if "reference_acc" not in figures:
        return None
    if figures["reference_acc"] != 1.0:
        return False, "the target fails this machine's test cases: it could not be timed"
    point, low, high = (figures.get(f"reference_{key}") for key in ("speedup", "ci_low", "ci_high"))
    if point is None or low is None:
        return False, "the target was not timed"
    shown = f"{point:.2f}x {bounds_text(low, high, places=2)}"
    if low > 1.0:
        return True, f"the target is measurably faster here: {shown}"
    return False, f"the target is not measurably faster here: {shown}"


class SignalMetrics(TypedDict):
    """Rows whose target was checked, and those where it showed a speedup."""

    rows: int
    holds: int
    share: float  # percent of ``rows``
    without: list[str]  # the rows that cannot discriminate here, sorted


def signal_metrics(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> SignalMetrics | None:
    """The row signal over (row, figures) pairs (several per row: the first with a signal
    counts); None where no row had its target checked."""
    seen: dict[str, bool] = {}
    for row, figures in rows:
        if row not in seen and "row_signal_holds" in figures:
            seen[row] = bool(figures["row_signal_holds"])
    if not seen:
        return None
    holds = sum(seen.values())
    return {
        "rows": len(seen),
        "holds": holds,
        "share": round(100 * holds / len(seen), 1),
        "without": sorted(row for row, held in seen.items() if not held),
    }


def signal_line(metrics: SignalMetrics) -> str:
    """The summary's line on the row signal."""
    line = (
        f"row signal: the target is measurably faster than the slow program on {metrics['holds']} of "
        f"{metrics['rows']} rows ({metrics['share']:g}%)"
    )
    if metrics["without"]:
        line += (
            f"; {len(metrics['without'])} cannot discriminate here (their candidates are still graded against "
            f"the slow program): {', '.join(metrics['without'][:5])}" + (", ..." if len(metrics["without"]) > 5 else "")
        )
    return line
