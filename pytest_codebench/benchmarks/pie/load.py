"""PIE's inputs as cases: one per (generation row, candidate), each with its row's
:class:`PieRow` (the slow program, the reference, the test cases) as its record.

Generation rows meet reference rows on the slow program's text (PIE's join key); test cases
are ``input.N.txt`` / ``output.N.txt`` pairs in the problem's folder, gaps in N allowed (as in
PIE 2024). A row that cannot be graded becomes one error case saying why.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

from pytest_codebench.cases import Case
from pytest_codebench.errors import DatasetError

from .. import tree_files
from ..records import MAX_MODEL_OUTPUT, MODEL_OUTPUT, Line, read_capped, read_jsonl
from .config import EvalConfig, located
from .sandbox import COUNTED_SLOWDOWN

PROMPT_START, PROMPT_END = "# slower version:", "# optimized version of the same code:"
# A row's programs besides its candidates (the slow program, the target, the bare interpreter);
# the seconds of a compile, and of the rest.
ROW_PROGRAMS, COMPILE, SLACK = 3, 120, 60
# The most the backstop allows an item (about four months): beyond it a timer overflows.
MAX_BUDGET = 1e7


def normalise_code(code: str) -> str:
    """PIE's join key: stripped, runs of blank lines collapsed."""
    return re.sub(r"\n\s*\n+", "\n\n", code.strip())


@dataclasses.dataclass(frozen=True)
class PieRow:
    """One generation row, as every case of the row carries it (JSON in :class:`Case`)."""

    #: The row as the generations file gives it: PIE's report copies its columns.
    row: dict[str, Any]
    row_index: int
    problem_id: str
    language: str  # python or cpp
    slow: str
    reference: str | None
    #: The problem's folder of test cases, and the indices found in it.
    tests: str
    test_indices: list[int]
    #: What is odd about the test cases (gaps in their numbering), for the reason.
    test_note: str | None
    #: Every candidate of the row, in its order: the row is checked and timed as a unit (``row``).
    candidates: list[Any]

    def to_json(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PieRow:
        return cls(**data)


def test_cases(folder: Path) -> tuple[list[int], str | None]:
    """The test case indices present (gaps allowed, as in PIE 2024), and a note on gaps."""
    if not tree_files.is_dir(folder):
        raise DatasetError(folder, "no test-case folder for this problem")
    indices = sorted(
        int(match.group(1))
        for path in folder.iterdir()
        if (match := re.fullmatch(r"input\.(\d+)\.txt", path.name))
        and os.path.lexists(folder / f"output.{match.group(1)}.txt")
    )
    for index in indices:  # the harness never reads a test case through a link
        for name in (f"input.{index}.txt", f"output.{index}.txt"):
            tree_files.check(folder / name)
    if not indices:
        raise DatasetError(folder, "no input.N.txt / output.N.txt pair")
    gaps = sorted(set(range(indices[-1] + 1)) - set(indices))
    return indices, (f"test numbering has gaps: {gaps[:5]}" if gaps else None)


def unique(name: str, row_index: int, taken: set[str]) -> str:
    """``name``, or where an earlier row has it (two rows with the same slow program meet the
    same reference row), ``name@row{index}``: one item, one workspace and one report line
    per row, and the first row's id as it always was."""
    if name in taken:
        name = f"{name}@row{row_index}"
        while name in taken:
            name += "+"
    taken.add(name)
    return name


@dataclasses.dataclass(frozen=True)
class Loader:
    """Reads the generations ``config`` names (its paths relative to ``config_path``)."""

    config: EvalConfig
    config_path: Path
    #: Every run under an instruction counter: each takes far longer.
    counted: bool

    def cases(self, generations: Path) -> list[Case]:
        references = self.references()
        tests_root = located(self.config_path, self.config.inputs_outputs_basepath)
        assert tests_root is not None  # a required key
        label, cases = str(generations), []
        taken: set[str] = set()
        generated = read_capped(generations, MAX_MODEL_OUTPUT)  # a model's: bounded (records.py)
        for row_index, line in enumerate(read_jsonl(label, generated, MODEL_OUTPUT)):
            if 0 <= self.config.num_problems_to_evaluate <= row_index:
                break
            name = f"{generations.name}:{line.number}"
            try:
                row, slow, reference = self._join(label, line, references)
                meta = reference or row
                problem_id = meta.get("problem_id")
                if not isinstance(problem_id, str):
                    raise DatasetError(label, "no problem_id (no reference row, and none in the row)", line=line.number)
                name = unique(f"{problem_id}/{meta.get('submission_id_v0', f'row{row_index}')}", row_index, taken)
                candidates = self._candidates(label, line.number, row)
                language = meta.get("language", self.config.language)
                indices, note = test_cases(tests_root / problem_id)
            except DatasetError as exc:
                cases.append(Case(id=f"{name}[0]", task_id=name, sample=0, error=str(exc), line=line.number - 1))
                continue
            record = PieRow(
                row=row,
                row_index=row_index,
                problem_id=problem_id,
                language="cpp" if language in ("cpp", "C++", "c++") else "python",
                slow=slow,
                reference=(reference or {}).get(self.config.reference_code_col),
                tests=str(tests_root / problem_id),
                test_indices=indices,
                test_note=note,
                candidates=candidates,
            ).to_json()
            budget = self.budget(len(indices), len(candidates))
            cases += [
                Case(f"{name}[{index}]", name, index, record, {"code": code}, problem_id, budget, line=line.number - 1)
                for index, code in enumerate(candidates)
            ]
        return cases

    def references(self) -> dict[str, dict[str, Any]]:
        """The reference rows by their slow program's join key (none without a reference file)."""
        path = located(self.config_path, self.config.reference_file_path)
        if path is None:
            return {}
        if not path.exists():
            raise DatasetError(path, "reference_file_path: no such file")
        references = {}
        slow_column = self.config.slow_code_col
        for line in read_jsonl(str(path), path.read_bytes()):
            if line.error is not None:
                raise line.error
            row = line.value or {}
            if not isinstance(row.get(slow_column), str):
                raise DatasetError(path, "missing", line=line.number, field=slow_column)
            references[normalise_code(row[slow_column])] = row
        return references

    def budget(self, tests: int, candidates: int) -> float:
        """pytest-timeout backstop of each item of a row (any of them may grade the whole row,
        ``row``): every run of every program in every trial at its limit (the first trial is
        the check), and every compile."""
        per_run = self.config.max_time_per_run * (COUNTED_SLOWDOWN if self.counted else 1)
        programs = ROW_PROGRAMS + candidates
        return min(tests * programs * self.config.num_trials * per_run + programs * COMPILE + SLACK, MAX_BUDGET)

    def _join(
        self, label: str, line: Line, references: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, Any], str, dict[str, Any] | None]:
        """The generation row of ``line``, its slow program, and the reference row it meets."""
        if line.error is not None:
            raise line.error
        row = line.value or {}
        slow = self._slow_code(label, line.number, row)
        reference = references.get(normalise_code(slow))
        if references and reference is None:
            raise DatasetError(label, "its slow program is not in the reference file", line=line.number)
        return row, slow, reference

    def _slow_code(self, label: str, number: int, row: dict[str, Any]) -> str:
        column = self.config.slow_code_col
        text = row.get(column)
        if not isinstance(text, str):
            raise DatasetError(label, "missing", line=number, field=column)
        if self.config.is_prompt_based:
            start, end = text.find(PROMPT_START), text.find(PROMPT_END)
            if start < 0 or end < start:
                message = f"no program between {PROMPT_START!r} and {PROMPT_END!r}"
                raise DatasetError(label, message, line=number, field=column)
            text = text[start + len(PROMPT_START) : end]
        return text

    def _candidates(self, label: str, number: int, row: dict[str, Any]) -> list[Any]:
        column = self.config.model_generated_potentially_faster_code_col
        candidates = row.get(column)
        if isinstance(candidates, str):
            candidates = [candidates]
        # One candidate that is no text fails alone, as invalid_solution (``prepare``); its row is graded.
        if not isinstance(candidates, list) or not candidates:
            raise DatasetError(label, "expected a program or a list of programs", line=number, field=column)
        return candidates


def every_row(cases: list[Case]) -> dict[str, Case]:
    """Each generation row any solution set answers (its first case), in the order first seen:
    in a sweep, the rows every model is scored on."""
    rows: dict[str, Case] = {}
    for case in cases:
        if case.task_id:
            rows.setdefault(case.task_id, case)
    return rows


def unanswered(rows: dict[str, Case], cases: list[Case], source: str) -> list[Case]:
    """A ``missing_solution`` case for each row of the sweep that this set's generations do not
    answer, so that a model that leaves out the hard rows is not scored on the easy ones only
    (as :func:`pytest_codebench.benchmark.join_samples` does for the other benchmarks)."""
    have = {case.task_id for case in cases}
    return [
        dataclasses.replace(
            row,
            id=f"{task_id}[0]",
            sample=0,
            solution=None,
            error=None,
            answer_error=False,
            line=0,
            missing=f"no generation for {task_id} in {source}",
        )  # fmt: skip
        for task_id, row in rows.items()
        if task_id not in have
    ]
