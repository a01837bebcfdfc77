"""``--codebench-fail-under``: which scores its bars compare, checked at configure, and whether
a finished run meets them.

A bar is ``PERCENT`` (the benchmark's score), ``NAME=PERCENT`` where NAME is a model of the
sweep, a named score the benchmark reports (ComputeEval's ``fast_1.0``) or ``pass@K``, or
several of them. ``:lower`` after a bar compares the lower end of the score's 95% interval
(a bootstrap over problems) instead: met only when the data show the score above the bar.
In a sweep every bar that names no model applies to each model on its own score, never to the
pooled figure of all models' samples: one strong model must not carry a weak one through the
gate. A bar naming a model replaces, for that model, a bar of the same score that names none.

A gate has three answers: met (exit status 0), NOT met (1), and cannot judge here
(:data:`CANNOT_JUDGE`, 6): a bar on a score this machine could not compute (``Summary.no_score``:
no GPU) is neither met nor missed, and a run whose bars are otherwise met says so by its status.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import pytest

from ..options import ALLOW_ERRORS
from ..stats.bootstrap import TOO_FEW
from .comparison import ModelSummary
from .reporting import Summary, examples
from .thresholds import LOWER, Threshold


@dataclasses.dataclass(frozen=True)
class Check:
    """One comparison: the score ``score`` (None: the benchmark's score) of the model ``model``
    (None: the whole run, one unnamed set) against ``value`` percent."""

    model: str | None
    score: str | None
    value: float
    #: Met by the lower end of the score's 95% interval (``:lower``).
    lower: bool = False

    def __str__(self) -> str:  # the bar, as the terminal shows it
        whose = f" ({self.model})" if self.model else ""
        return f"{self.score + '=' if self.score else ''}{self.value:g}%{LOWER if self.lower else ''}{whose}"


# pass@K names a score of every benchmark that reports pass@k (``pass@1=40:lower``).
PASS_AT = re.compile(r"pass@(\d+)")
# The exit status of a run whose gate cannot judge here: none of pytest's (0 to 5), so that CI
# tells "this machine cannot say" from "the model missed the bar".
CANNOT_JUDGE = 6


class Gate(NamedTuple):
    """The gate's account: a line per comparison; why it is not met (empty when it is not
    missed); why a bar cannot be judged here."""

    lines: list[str]
    missed: list[str]
    unjudged: list[str]


def validate_fail_under(bars: list[Threshold], models: Sequence[str], score_names: Sequence[str], where: str) -> None:
    """One usage error, before anything is graded, for a bar whose name is neither a model of
    this run (``models``: the sets' names; none for one unnamed set) nor a score the benchmark
    reports with these options (``score_names``): it could only fail the gate once every item
    was graded."""
    for bar in bars:
        if bar.name is None or bar.name in models or bar.name in score_names or PASS_AT.fullmatch(bar.name):
            continue
        have = f"its models: {', '.join(models)}" if models else "it grades one unnamed set"
        scores = ", ".join(score_names) or "none"
        raise pytest.UsageError(
            f"{where}={bar}: {bar.name} names no model of this run ({have}) and no score the benchmark reports "
            f"with these options (its named scores: {scores})"
        )


def checks(bars: Sequence[Threshold], models: Sequence[str]) -> list[Check]:
    """The comparisons ``bars`` ask of a run whose models are ``models`` (none: one unnamed set)."""
    named = {bar.name: bar for bar in bars if bar.name in models}
    found: list[Check] = []
    for bar in bars:
        if bar.name in named:
            continue
        if not models:
            found.append(Check(None, bar.name, bar.value, bar.lower))
        else:
            found += [
                Check(model, bar.name, bar.value, bar.lower) for model in models if bar.name or model not in named
            ]
    found += [Check(model, None, bar.value, bar.lower) for model, bar in named.items() if model is not None]
    return found


def compared_score(check: Check, summary: Summary) -> float | None:
    """The score ``check`` compares in ``summary``: the benchmark's, or the named one (pass@K
    from the pass@k figures); with ``:lower``, the lower end of its interval. None when not reported."""
    if check.lower:
        bounds = summary.intervals.get(check.score or "score")
        return None if bounds is None else bounds[0]
    if check.score is None:
        return summary.score
    pass_at = PASS_AT.fullmatch(check.score)
    if pass_at and check.score not in summary.scores:
        value = summary.metrics.get("pass@k", {}).get(pass_at[1])
        return None if value is None else 100 * value
    return summary.scores.get(check.score)


def unjudged(check: Check, summary: Summary) -> str | None:
    """Why ``check`` cannot be judged on this machine: it compares the score (or pass@K) of a
    summary that has none for the machine's reason. None when it can be."""
    if summary.no_score is None or (check.score is not None and not PASS_AT.fullmatch(check.score)):
        return None
    return f"{check.model + ': ' if check.model else ''}{summary.no_score}"


def shortfall(check: Check, summary: Summary) -> str | None:
    """Why ``summary`` misses ``check``; None when it meets it. A named score the run did not
    report misses, saying which it has: a typo must not pass a gate silently."""
    whose = f"{check.model}: " if check.model else ""
    score = compared_score(check, summary)
    if check.lower and score is None:
        have = ", ".join(sorted(summary.intervals)) or "none"
        return f"{whose}{check.score or 'the score'} has no interval to gate on (intervals: {have}; {TOO_FEW})"
    if check.score is not None and score is None:
        names = ", ".join(sorted(summary.scores)) or "none"
        return f"{whose}this run reports no score named {check.score} (its named scores: {names})"
    if score is None:
        return f"{whose}no score: this machine graded no item to one (the summary above says why)"
    if score < check.value:
        end = "the lower end of its 95% interval" if check.lower else ""
        return f"{whose}{check.score or 'the score'}{' (' + end + ')' if end else ''} is under {check.value:g}%"
    return None


def gate_lines(
    bars: list[Threshold],
    summary: Summary,
    models: Mapping[str, ModelSummary],
    errors: Mapping[str, list[str]],
    allow_errors: bool,
) -> Gate:
    """The gate's lines, one per comparison saying the score and whether it is met, and why it
    is not met or cannot be judged. ``errors``: the ids of items that ended in an error, by
    kind (``a harness error``, ``a dataset defect``), which fail it unless ``allow_errors``."""
    lines, why, cannot = [], [], []
    kinds = {kind: ids for kind, ids in errors.items() if ids}
    errors_fail = bool(kinds) and not allow_errors  # every bar is then NOT met, the last line says why
    ended = " or ".join(kinds) or "an error"
    for check in checks(bars, list(models)):
        own = models[check.model].summary if check.model else summary
        reason = unjudged(check, own)
        if reason is not None:
            lines.append(f"fail-under {check}: {check.score or 'score'} n/a, cannot judge here")
            cannot.append(reason)
            continue
        score = compared_score(check, own)
        missed = shortfall(check, own)
        shown = "n/a" if score is None else f"{score:.2f}%" + (" (interval's lower end)" if check.lower else "")
        verdict = "NOT met" if missed else f"NOT met: {ended} (below)" if errors_fail else "met"
        lines.append(f"fail-under {check}: {check.score or 'score'} {shown}, {verdict}")
        if missed:
            why.append(missed)
    if errors_fail:
        counted = "; ".join(f"{len(ids)} item(s) ended in {kind} ({examples(ids)})" for kind, ids in kinds.items())
        why.append(f"{counted}; {ALLOW_ERRORS.cli} lets the score alone decide")
    return Gate(lines, why, cannot)
