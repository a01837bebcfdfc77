"""Many contenders timed against one base in the same trials, each stopping on its own.

PIE grades a row's candidates against one slow program. Timed one candidate at a time, the
slow program runs again for each; raced, it runs once a trial for all of them, and each
candidate's ratio is still paired trial by trial with the base's runs of the same trial.
:func:`race` interleaves every contender still running, one trial at a time (the order rotating
from trial to trial, as :func:`~.speedup.interleave` does). A contender leaves the race once its
ratio over the base is decided (:func:`~.speedup.decision` at ``stopping``'s looks, exactly as
:func:`~.speedup.timed_trials` decides one pair), or when its measure raises :class:`Withdrawn`
(a failed run); the race ends when none is left, or at the cap. Leaving early only removes
looks, so each contender's bounds keep their level. Companions (the bare interpreter) run in
every kept trial (the ignored ones would only be dropped) and never decide anything. Nothing
here knows a benchmark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from .speedup import Stopping, Trials, decided_after

C = TypeVar("C", bound=Hashable)
U = TypeVar("U")


class Withdrawn(Exception):
    """Raised by a race's measure: this contender leaves the race (its run failed). ``detail``
    is what the caller needs to say why."""

    def __init__(self, detail: object) -> None:
        super().__init__(str(detail))
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class Field(Generic[C, U]):
    """Who races: the ``base`` every ratio is over, the ``contenders`` that each decide their
    ratio and may leave, and ``companions`` that run in every kept trial beside them (the bare
    interpreter, whose times give the start-up). ``units`` are run within each trial (test cases)."""

    base: C
    contenders: Sequence[C]
    companions: Sequence[C]
    units: Sequence[U]


@dataclasses.dataclass(frozen=True)
class Result(Generic[C]):
    """What a race ran: each contender's :class:`~.speedup.Trials` (its totals beside the
    base's and the companions' of the same trials, ignored trials dropped), the detail of
    each that withdrew, and everyone's single runs."""

    trials: dict[C, Trials[C]]
    withdrawn: dict[C, object]
    #: Every single run (one unit) of the kept trials, the ignored ones dropped: the base's and
    #: the companions' in every kept trial, a contender's in the trials it ran (none for one
    #: that withdrew). PIE reports a program's mean and deviation over these.
    runs: dict[C, list[float]]


def race(field: Field[C, U], measure: Callable[[C, U, int], float], stopping: Stopping) -> Result[C]:
    """Trials of every contender still in, until each has decided or withdrawn, or the cap.
    ``measure(contender, unit, trial)`` times one run (trial counts from 0, the ignored ones
    included); a contender's :class:`Withdrawn` takes it out of the race at once. A base or a
    companion must not withdraw: their runs are the harness's (the caller raises its own error).
    A companion does not run in an ignored trial (its time there, 0, is dropped).
    ``stopping.settled`` is not asked: no racing benchmark has a second question to settle."""
    looks = stopping.looks()
    shared = [field.base, *field.companions]
    times: dict[C, list[float]] = {contender: [] for contender in [*shared, *field.contenders]}
    runs: dict[C, list[float]] = {contender: [] for contender in times}
    running = list(dict.fromkeys(field.contenders))
    stops: dict[C, str] = {}
    withdrawn: dict[C, object] = {}
    trial = 0
    while running and trial < stopping.cap:
        everyone = [*shared, *running]
        shift = trial % len(everyone)
        order = [*everyone[shift:], *everyone[:shift]]
        singles: dict[C, list[float]] = {contender: [] for contender in everyone}
        for unit in field.units:
            for contender in order:
                if contender in withdrawn or (contender in field.companions and trial < stopping.ignore):
                    continue
                try:
                    singles[contender].append(measure(contender, unit, trial))
                except Withdrawn as exc:
                    withdrawn[contender] = exc.detail
        for contender, each in singles.items():
            if contender not in withdrawn:
                times[contender].append(sum(each, 0.0))
                runs[contender] += each if trial >= stopping.ignore else []
        trial += 1
        for contender in list(running):
            if contender in withdrawn:
                running.remove(contender)
                continue
            found = decided_after(times[field.base], times[contender], stopping, looks)
            if found is not None:
                stops[contender] = found
                running.remove(contender)
    final = "cap" if stopping.adaptive else "fixed"
    trials = {}
    for contender in field.contenders:
        if contender in withdrawn or contender in trials:
            continue
        run = len(times[contender])
        kept = {each: times[each][stopping.ignore : run] for each in [*shared, contender]}
        trials[contender] = Trials(kept, stops.get(contender, final), run, stopping.cap, looks)
    return Result(trials, withdrawn, {contender: runs[contender] for contender in runs if contender not in withdrawn})
