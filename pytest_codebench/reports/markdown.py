"""The markdown report (``--codebench-markdown PATH``): a table with one row per model, each
model's summary lines folded below it; also appended to GitHub's job summary
(``$GITHUB_STEP_SUMMARY``) when the variable is set. Written by a run and by ``merge``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..benchmark import Benchmark
from ..names import escape_controls
from ..once import write_atomically
from .comparison import MISSING, ModelSummary, Row, headers, table

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def dataset_label(path: str, sha256: str | None, release: str | None) -> str:
    """``sample-problems.tar.gz (release 2025-3, sha256 0123456789ab)``."""
    facts = [f"release {release}" if release else "", f"sha256 {sha256[:12]}" if sha256 else ""]
    shown = ", ".join(fact for fact in facts if fact)
    return f"{Path(path).name} ({shown})" if shown else Path(path).name


def report(
    benchmark: Benchmark, dataset: str, whole: ModelSummary, models: Mapping[str, ModelSummary], scope: Sequence[str]
) -> str:
    """The report of the results ``whole`` and ``models`` summarize (see comparison); ``scope``:
    what the figures are over (reports.scope), said above the table, where every model's row reads it."""
    rows = table(benchmark.columns, whole, models)
    shown = models or {"all": whole}
    details = {name: [*model.summary.lines, model.outcome_line()] for name, model in shown.items()}
    return render(f"codebench: {benchmark.name} on {dataset}", rows, details, scope)


def render(heading: str, rows: Sequence[Row], details: Mapping[str, Sequence[str]], notes: Sequence[str] = ()) -> str:
    columns = headers(rows)
    lines = [f"### {_cell(heading)}", ""]
    lines += [f"**{_html(note)}**" for note in notes] + ([""] if notes else [])
    lines += [_line(columns), _line(["---", *["---:"] * (len(columns) - 1)])]
    lines += [_line([each.get(column, MISSING) for column in columns]) for each in rows]
    for name, text in details.items():
        # A fence longer than any run of backticks in the text: a reason may quote code.
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", "\n".join(text)))])
        lines += ["", f"<details><summary>{_html(name)}</summary>", "", f"{fence}text", *text, fence, "", "</details>"]
    # Names and reasons are the model's text: nothing in them may act where the page is shown.
    return escape_controls("\n".join(lines), keep="\n") + "\n"


def publish(path: Path | None, text: str) -> None:
    """``text`` to ``path``, and appended to the job summary where GitHub names one."""
    if path is not None:
        write(path, text)
    append_to_step_summary(text)


def write(path: Path, text: str) -> None:
    """``text`` to ``path`` (a lone surrogate, from a name that was not valid UTF-8, as its escape)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)


def append_to_step_summary(text: str) -> None:
    """``text`` appended to the job summary, where GitHub names one."""
    summary = os.environ.get(STEP_SUMMARY)
    if summary:
        with open(summary, "a", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text + "\n")


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _cell(text: str) -> str:
    # A | would end the cell, a newline the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
