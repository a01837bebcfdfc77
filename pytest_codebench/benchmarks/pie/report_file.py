"""PIE's own report file (the eval config's ``output_report_file_path``), with PIE's columns in
PIE's meaning, as ``src/codenet_eval/run_eval.py`` of madaan/pie-perf writes it, and our own
figures beside them under names PIE does not use.

What PIE's report holds, a JSONL row per generation row (``print_summary``, run_eval.py lines
363-382, through pandas' ``to_json``, which writes NaN as null):
- the generation row's columns, ``slower_program`` (its slow program, stripped; with a reference
  file, runs of five newlines taken out: lines 114 and 127-129), the joined reference row's
  columns (``pd.merge`` with suffixes ``("", "_ref")``: one the generation row also has is
  ``NAME_ref``, lines 134-141), and with a list of candidates each one's text as ``{col}_{i}``
  (lines 166-169);
- for each program, ``{tag}_time_mean`` and ``{tag}_time_std``: the mean and population deviation
  (ms) of its single runs over every test case and every kept trial, whole process times
  (sandbox.py lines 81-120), and ``{tag}_acc``: the mean share of expected lines matched. The
  tags are ``input`` (the slow program), ``reference`` and, with a list of candidates, ``{col}_{i}``
  and the best one as ``{col}`` (the fastest correct, else the fastest: lines 330-361); with one
  candidate (a string), only ``{col}`` (lines 75-76);
- a program whose run failed (a timeout): null, null, 0 (lines 90-91, 103-106).

Where ours differs, on purpose: a crash (a non-zero exit) is a failed run here whatever it
printed (PIE never reads an exit code), so it is never correct in the report either; a candidate
that made no edit (the slow program's code) is not run, and has the slow program's figures, which
PIE would have measured again; a wrong output in a measuring run after its check has accuracy 0.

Our own columns: ``{tag}_outcome`` (the item's verdict), ``{tag}_speedup`` with
``{tag}_ci_low``/``{tag}_ci_high`` (the median of the paired per-trial ratios, and its bounds),
``{tag}_trial_ms`` (the median trial: whole process times summed over the test cases), the
row's ``startup_ms`` (the interpreter's start-up, a run's), and the row signal's
``reference_speedup``, ``reference_ci_low``, ``reference_ci_high``, ``row_signal``,
``row_signal_holds``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_codebench.cases import Case
from pytest_codebench.once import write_atomically
from pytest_codebench.reports.reporting import ItemResult

from .load import PieRow, normalise_code
from .measure import UNMEASURED

# Our own figures of a candidate, by the column's suffix.
OWN = {"speedup": "speedup", "ci_low": "ci_low", "ci_high": "ci_high", "trial_ms": "candidate_trial_ms"}
# The row signal's figures, as every item of the row carries them.
SIGNAL = ("reference_speedup", "reference_ci_low", "reference_ci_high", "row_signal", "row_signal_holds")


def write_report(
    path: Path, cases: list[Case], results: list[ItemResult], column: str, references: Mapping[str, dict[str, Any]]
) -> None:
    """PIE's report at ``path``: a row per generation row (its first case in ``cases``), joined
    with its row of ``references`` (by the slow program's join key; none without a reference
    file); ``column`` is the config's candidates column."""
    by_row: dict[str, dict[int, ItemResult]] = defaultdict(dict)
    for result in results:
        by_row[result["task_id"]][result["sample"]] = result
    lines = []
    for case in cases:
        if case.sample != 0 or case.error is not None:
            continue
        pie = PieRow.from_json(case.record)
        done = by_row.get(case.task_id, {})
        row = joined(pie, references, column)
        shared = next((dict(result["figures"]) for result in done.values() if "input_acc" in result["figures"]), {})
        for tag in ("input", "reference"):
            row[f"{tag}_time_mean"] = shared.get(f"{tag}_time_mean")
            row[f"{tag}_time_std"] = shared.get(f"{tag}_time_std")
            row[f"{tag}_acc"] = shared.get(f"{tag}_acc")
        for name in SIGNAL:
            row[name] = shared.get(name)
        row["startup_ms"] = next(
            (r["figures"]["startup_ms"] for r in done.values() if "startup_ms" in r["figures"]), None
        )
        programs = [candidate_columns(done.get(index), shared) for index in range(len(pie.candidates))]
        if isinstance(pie.row.get(column), list):
            for index, columns in enumerate(programs):
                row.update({f"{column}_{index}_{name}": value for name, value in columns.items()})
            row.update({f"{column}_{name}": value for name, value in best(programs).items()})
        else:
            row.update({f"{column}_{name}": value for name, value in programs[0].items()})
        lines.append(json.dumps(row))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, "".join(line + "\n" for line in lines))


def joined(pie: PieRow, references: Mapping[str, dict[str, Any]], column: str) -> dict[str, Any]:
    """The generation row as PIE joins it: its columns, ``slower_program``, its reference row's
    columns (``NAME_ref`` where the generation row has NAME too), each candidate's text."""
    row = dict(pie.row)
    reference = references.get(normalise_code(pie.slow))
    slower = pie.slow.strip()
    row["slower_program"] = slower.replace("\n\n\n\n\n", "") if references else slower
    for name, value in (reference or {}).items():
        row[f"{name}_ref" if name in pie.row else name] = value
    if isinstance(pie.row.get(column), list):
        row.update({f"{column}_{index}": code for index, code in enumerate(pie.candidates)})
    return row


def candidate_columns(result: ItemResult | None, shared: Mapping[str, Any]) -> dict[str, Any]:
    """A candidate's columns without their tag: PIE's (``time_mean``, ``time_std``, ``acc``), then
    ours. Null where it was not graded here (deselected, not reached); the slow program's times
    where it made no edit, and so was not run."""
    if result is None:
        return {"time_mean": None, "time_std": None, "acc": None, "outcome": None}
    figures = result["figures"]
    source = "input" if figures.get("metric") == UNMEASURED else "candidate"
    columns = {
        "time_mean": (shared if source == "input" else figures).get(f"{source}_time_mean"),
        "time_std": (shared if source == "input" else figures).get(f"{source}_time_std"),
        "acc": figures.get("candidate_acc"),
        "outcome": result["outcome"],
    }
    columns.update({name: figures[key] for name, key in OWN.items() if key in figures})
    return columns


def best(programs: list[dict[str, Any]]) -> dict[str, Any]:
    """PIE's best candidate: the fastest whose accuracy is 1.0, else the fastest (run_eval.py's
    ``get_best_generation_per_submission``); one without a time after those with one (PIE sorts
    its NaN as it falls), the first of equals."""

    def rank(index: int) -> tuple[bool, bool, float, int]:
        columns = programs[index]
        time = columns["time_mean"]
        return columns["acc"] != 1.0, time is None, time if time is not None else 0.0, index

    return programs[min(range(len(programs)), key=rank)]
