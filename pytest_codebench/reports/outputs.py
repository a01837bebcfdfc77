"""The run's outputs at its end, each written on its own: the JSON report first, then JUnit's
properties, the page, the markdown, GitHub's job summary and the benchmark's own files. One
that fails (a path that cannot be written, a disk full, a bug) is named with its error, and the
others are still written; the run keeps the exit status its grading earned."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple


class Writer(NamedTuple):
    """One output: what the user knows it by (``the JSON report (--codebench-report)``) and
    what writes it."""

    name: str
    write: Callable[[], object]


def write_outputs(writers: Sequence[Writer]) -> list[str]:
    """Runs every writer, in order; returns a line for each that failed, naming it and its error."""
    failures = []
    for writer in writers:
        try:
            writer.write()
        except Exception as exc:  # noqa: BLE001 - whatever ends one output must not end the others
            failures.append(failure_line(writer.name, exc))
    return failures


def failure_line(name: str, exc: BaseException) -> str:
    """``NAME could not be written: TYPE: MESSAGE``, its characters printable (a message may
    quote a name that holds a NUL or a control character)."""
    message = "".join(char if char.isprintable() else ascii(char)[1:-1] for char in str(exc))
    return f"{name} could not be written: {type(exc).__name__}: {message}"
