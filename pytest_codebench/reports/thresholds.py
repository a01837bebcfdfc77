"""``--codebench-fail-under``'s bars as given: ``40``, ``NAME=40``, ``NAME=40:lower``, or several. Which scores a
NAME can compare, and whether a run meets the bars, is :mod:`.gate`'s to say.

Imported by :mod:`pytest_codebench.options` (the option's parser), so it imports nothing that imports the options.
"""

from __future__ import annotations

import dataclasses
import re

from ..sweeps.solution_sets import NAME as SET_NAME


def percent(text: str) -> float:
    """A score in percent, 0 to 100 (``40`` or ``40%``): NaN would never be met and 1e9 never
    reached, silently."""
    try:
        value = float(text.removesuffix("%"))
    except ValueError:
        raise ValueError(f"{text!r} is not a percentage (expected e.g. 40)") from None
    if not 0 <= value <= 100:
        raise ValueError("expected a percentage from 0 to 100")
    return value


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One of ``--codebench-fail-under``'s bars, in percent: the benchmark's score (``name``
    None), a model's (``gpt-5=40``, in a sweep) or a named score it reports (``fast_1.0=40``);
    which of the two a name is, :mod:`.gate` decides at configure."""

    name: str | None
    value: float
    #: ``:lower``: the bar is met by the lower end of the score's 95% interval, not the score.
    lower: bool = False

    def __str__(self) -> str:  # as given, for the terminal and the JSON report's options
        bar = f"{self.name}={self.value:g}" if self.name else f"{self.value:g}"
        return bar + LOWER if self.lower else bar


#: The suffix that gates on the lower end of a score's interval: ``pass@1=40:lower``.
LOWER = ":lower"


def threshold(text: str) -> Threshold:
    """``40`` (the benchmark's score) or ``NAME=40`` (a model's, or a named score), in percent.
    A NAME is spelt as a solution set's (a named score's spelling is a part of it)."""
    name, equals, value = text.strip().rpartition("=")
    if equals and not SET_NAME.fullmatch(name.strip()):
        raise ValueError(
            f"not a model or score name: {name.strip()!r} (expected NAME=PERCENT, e.g. gpt-5=40 or fast_1.0=40)"
        )
    value, colon, suffix = value.strip().partition(":")
    if colon and colon + suffix.strip().lower() != LOWER:
        raise ValueError(f"{text.strip()!r}: unknown suffix {colon + suffix!r} (expected none or {LOWER})")
    return Threshold(name.strip() or None, percent(value.strip()), lower=bool(colon))


def thresholds(text: str) -> list[Threshold]:
    """One bar or several, separated by commas or spaces (``40,gpt-5=50``; the JSON report's
    list reads back joined by spaces), each named once."""
    bars = [threshold(part) for part in re.sub(r"\s*=\s*", "=", text).replace(",", " ").split()]
    if not bars:
        raise ValueError("expected PERCENT or NAME=PERCENT")
    names = [bar.name for bar in bars]
    twice = next((name for name in names if names.count(name) > 1), "")
    if twice != "":
        raise ValueError(f"{twice or 'the score'} has two bars")
    return bars
