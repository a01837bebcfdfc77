"""PIE (performance-improving edits): a candidate must give the expected output on every test
case and run faster than the slow program it rewrites.

Takes PIE's own eval-config YAML (every key, same meaning and defaults). One item per
(generation row, candidate). The slow program, the human reference and the candidate are timed
interleaved within each trial, so that drift hits all three alike; the speedup is PIE's (whole
process time, interpreter start-up included) with a 95% bootstrap interval over the paired
trials. ``--codebench-pie-metric instructions`` counts user-space instructions instead (perf,
or callgrind where perf is not allowed): deterministic. Programs run in a sandbox that never
holds an expected output (pie_measure); the decision rules are pure functions (pie_rules).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from ..benchmark import Benchmark, Case, Dataset, RunContext, Summary
from ..errors import DatasetError, HarnessError
from ..options import Option
from ..records import read_jsonl, sha256_file
from ..runners import Runner
from ..verdict import Outcome, Verdict
from .pie_measure import (
    CandidateFailed,
    Launch,
    Program,
    Sandbox,
    count_instructions,
    instruction_counter,
    pinned_core,
    time_programs,
)
from .pie_report import summarize, write_report
from .pie_rules import Failure, ProgramRun, accuracy, bootstrap_ratio

__all__ = ["Pie", "accuracy", "bootstrap_ratio", "normalise_code"]

# PIE's EvaluationConfig: every key and its default.
CONFIG_DEFAULTS: dict[str, Any] = {
    "model_generated_outputs_path": None,
    "inputs_outputs_basepath": None,
    "reference_file_path": None,
    "output_report_file_path": None,
    "language": "python",
    "num_problems_to_evaluate": -1,
    "num_trials": 25,
    "ignore_first_k": 0,
    "max_time_per_run": 10,
    "temp_dir": None,
    "model_generated_potentially_faster_code_col": "generated_answers",
    "slow_code_col": "input",
    "reference_code_col": "target",
    "is_prompt_based": False,
    "cpu_number": 0,
    "return_if_acc_below": None,
    "cflags": "--std=c++17 -O1",
    "cpp_results_path": None,
}
REQUIRED = ("model_generated_outputs_path", "inputs_outputs_basepath")
PROMPT_START, PROMPT_END = "# slower version:", "# optimized version of the same code:"


def _overrides(text: str) -> dict[str, Any]:
    pairs = {}
    for part in text.split():
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"expected KEY=VALUE, got {part!r}")
        pairs[key] = yaml.safe_load(value)
    return pairs


def normalise_code(code: str) -> str:
    """PIE's join key: stripped, runs of blank lines collapsed."""
    return re.sub(r"\n\s*\n+", "\n\n", code.strip())


class Pie(Benchmark):
    name = "pie"
    default_dataset = "pie/eval_config.yaml"
    options = (
        Option("config", "PIE's eval-config YAML (default: the bundled sample).", metavar="PATH"),
        Option("pie", "Override keys of the eval config: 'num_trials=5 cflags=-O3'.", default={}, parse=_overrides, metavar="KEY=VALUE ..."),
        Option("min-speedup", "Speedup a candidate needs to pass (1.10 is PIE's %Optimized bar).", default=1.0, parse=float, metavar="X"),
        Option("pie-metric", "What is compared: wall time, or user-space instructions.", default="wall", metavar="wall|instructions"),
        Option(
            "python",
            "Python interpreter for Python programs (default: this one; python3 in a container).",
            metavar="PATH",
        ),
        Option("cxx", "C++ compiler.", default="g++", metavar="PATH"),
        Option("pie-memory", "Address-space limit of a program, in MiB.", default=2048, parse=int, metavar="MIB"),
    )

    def __init__(self, context: RunContext) -> None:
        super().__init__(context)
        if self.settings["pie-metric"] not in ("wall", "instructions"):
            raise HarnessError(f"--codebench-pie-metric: {self.settings['pie-metric']!r} is not wall or instructions")
        local = self.settings["runner"] == "local"
        self.python = self.settings["python"] or (sys.executable if local else "python3")

    # -- configuration -----------------------------------------------------------------------------

    @functools.cached_property
    def config_path(self) -> Path:
        given = self.settings["config"]
        if given:
            return Path(given).resolve()
        return super().dataset_path()

    @functools.cached_property
    def config(self) -> dict[str, Any]:
        path = self.config_path
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise DatasetError(path, f"not a readable YAML eval config ({exc})") from None
        if not isinstance(loaded, dict):
            raise DatasetError(path, "not a mapping of config keys")
        config = {**CONFIG_DEFAULTS}
        for source, values in ((str(path), loaded), ("--codebench-pie", self.settings["pie"])):
            unknown = sorted(set(values) - set(CONFIG_DEFAULTS))
            if unknown:
                raise DatasetError(source, f"unknown eval-config key {unknown[0]!r}", field=unknown[0])
            config.update(values)
        for key in REQUIRED:
            if not config[key]:
                raise DatasetError(path, "missing", field=key)
        if config["language"] not in ("python", "cpp"):
            raise DatasetError(path, f"{config['language']!r} is not python or cpp", field="language")
        return config

    def _path(self, key: str) -> Path | None:
        """An input path of the config: relative to the YAML file's folder."""
        value = self.config[key]
        return None if value is None else (self.config_path.parent / value).resolve()

    def dataset_path(self) -> Path:
        """The generations file: its rows are the items."""
        if self.settings["dataset"]:
            return Path(self.settings["dataset"]).resolve()
        path = self._path("model_generated_outputs_path")
        assert path is not None
        return path

    # -- loading ----------------------------------------------------------------------------------

    def load(self) -> Dataset:
        path = self.dataset_path()
        if not path.exists():
            raise DatasetError(path, "model_generated_outputs_path: no such file")
        references = self._references()
        tests_root = self._path("inputs_outputs_basepath")
        assert tests_root is not None
        cases: list[Case] = []
        limit = self.config["num_problems_to_evaluate"]
        column = self.config["model_generated_potentially_faster_code_col"]
        for row_index, line in enumerate(read_jsonl(str(path), path.read_bytes())):
            if 0 <= limit <= row_index:
                break
            name = f"{path.name}:{line.number}"
            try:
                if line.error is not None:
                    raise line.error
                row = line.value or {}
                slow = self._slow_code(row, str(path), line.number)
                reference = references.get(normalise_code(slow))
                if references and reference is None:
                    raise DatasetError(path, "its slow program is not in the reference file", line=line.number)
                meta = reference or row
                problem_id = meta.get("problem_id")
                if not isinstance(problem_id, str):
                    raise DatasetError(path, "no problem_id (no reference row, and none in the row)", line=line.number)
                name = f"{problem_id}/{meta.get('submission_id_v0', f'row{row_index}')}"
                candidates = row.get(column)
                if isinstance(candidates, str):
                    candidates = [candidates]
                if not isinstance(candidates, list) or not candidates or not all(isinstance(c, str) for c in candidates):
                    raise DatasetError(path, "expected a program or a list of programs", line=line.number, field=column)
                language = meta.get("language", self.config["language"])
                tests, note = self._tests(tests_root / problem_id)
            except DatasetError as exc:
                cases.append(Case(id=f"{name}[0]", task_id=name, sample=0, error=str(exc), line=line.number - 1))
                continue
            record = {
                "row": row,
                "row_index": row_index,
                "problem_id": problem_id,
                "language": "cpp" if language in ("cpp", "C++", "c++") else "python",
                "slow": slow,
                "reference": (reference or {}).get(self.config["reference_code_col"]),
                "tests": str(tests_root / problem_id),
                "test_indices": tests,
                "test_note": note,
            }
            for index, code in enumerate(candidates):
                cases.append(
                    Case(
                        id=f"{name}[{index}]",
                        task_id=name,
                        sample=index,
                        record=record,
                        solution={"code": code},
                        group=problem_id,
                        timeout=self._budget(len(tests)),
                        line=line.number - 1,
                    )
                )
        return Dataset(str(path), sha256_file(path), None, cases)

    def _references(self) -> dict[str, dict[str, Any]]:
        path = self._path("reference_file_path")
        if path is None:
            return {}
        if not path.exists():
            raise DatasetError(path, "reference_file_path: no such file")
        references = {}
        slow_column = self.config["slow_code_col"]
        for line in read_jsonl(str(path), path.read_bytes()):
            if line.error is not None:
                raise line.error
            row = line.value or {}
            if not isinstance(row.get(slow_column), str):
                raise DatasetError(path, "missing", line=line.number, field=slow_column)
            references[normalise_code(row[slow_column])] = row
        return references

    def _slow_code(self, row: dict[str, Any], label: str, number: int) -> str:
        column = self.config["slow_code_col"]
        text = row.get(column)
        if not isinstance(text, str):
            raise DatasetError(label, "missing", line=number, field=column)
        if self.config["is_prompt_based"]:
            start, end = text.find(PROMPT_START), text.find(PROMPT_END)
            if start < 0 or end < start:
                raise DatasetError(label, f"no program between {PROMPT_START!r} and {PROMPT_END!r}", line=number, field=column)
            text = text[start + len(PROMPT_START) : end]
        return text

    @staticmethod
    def _tests(folder: Path) -> tuple[list[int], str | None]:
        """The test case indices present (gaps allowed, as in PIE 2024), and a note on gaps."""
        if not folder.is_dir():
            raise DatasetError(folder, "no test-case folder for this problem")
        indices = sorted(
            int(match.group(1))
            for path in folder.iterdir()
            if (match := re.fullmatch(r"input\.(\d+)\.txt", path.name)) and (folder / f"output.{match.group(1)}.txt").exists()
        )
        if not indices:
            raise DatasetError(folder, "no input.N.txt / output.N.txt pair")
        gaps = sorted(set(range(indices[-1] + 1)) - set(indices))
        return indices, (f"test numbering has gaps: {gaps[:5]}" if gaps else None)

    def _budget(self, tests: int) -> float:
        """pytest-timeout backstop: every run of every trial at its limit, plus the checks."""
        per_run = float(self.config["max_time_per_run"])
        runs = tests * (3 + 4 * int(self.config["num_trials"]))
        if self.settings["pie-metric"] == "instructions":
            per_run *= 100  # under callgrind
        return runs * per_run + 3 * 120 + 60

    # -- workspace --------------------------------------------------------------------------------

    def programs(self, case: Case) -> list[Program]:
        record = case.record
        programs = [Program("input", record["language"], record["slow"])]
        if record["reference"]:
            programs.append(Program("reference", record["language"], record["reference"]))
        programs.append(Program("candidate", record["language"], (case.solution or {})["code"]))
        return programs

    def prepare(self, case: Case, workspace: Path) -> str | None:
        """The programs only (kept with --codebench-keep-workspaces): they run in a sandbox of
        their own, and no test case is ever copied anywhere a program can reach."""
        for program in self.programs(case):
            target = workspace / program.source
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(program.code)
        return None

    # -- grading ----------------------------------------------------------------------------------

    def grade(self, case: Case, workspace: Path, rejected: str | None, runner: Runner) -> Verdict:
        launch = Launch(
            python=self.python,
            memory_mib=self.settings["pie-memory"],
            core=pinned_core(int(self.config["cpu_number"])),
            max_time=float(self.config["max_time_per_run"]),
            output_limit=self.settings["output-limit"],
        )
        with Sandbox(runner, launch, Path(case.record["tests"])) as sandbox:
            return self._grade(case, sandbox)

    def _grade(self, case: Case, sandbox: Sandbox) -> Verdict:
        programs = self.programs(case)
        logs: dict[str, str] = {}
        for program in programs:
            sandbox.add(program)
            if program.language == "cpp":
                result = sandbox.compile(program, self.settings["cxx"], self.config["cflags"])
                if not result.ok:
                    logs[f"{program.tag}-compile"] = self.context.write_log(case, f"{program.tag}-compile", result)
                    if program.tag == "candidate":
                        return Verdict.of_run(Outcome.BUILD_ERROR, "compile error", result, logs=logs, figures={"candidate_acc": 0.0})
                    raise DatasetError(case.record["tests"], f"the {program.tag} program does not compile:\n{result.tail(10)}")
        accuracies: dict[str, float] = {}
        for program in list(programs):
            verdict, accuracies[program.tag] = self._check(case, sandbox, program, logs)
            if verdict is None:
                continue
            if program.tag == "input":
                raise DatasetError(case.record["tests"], f"the slow program itself fails: {verdict.reason}")
            if program.tag == "candidate":
                return verdict
            programs.remove(program)  # a reference that fails keeps its accuracy, and is not timed
        if (case.solution or {})["code"] == case.record["slow"]:
            # No edit at all: nothing to measure, and a measurement could only add noise.
            figures = {"metric": "none (identical)", "speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "candidate_acc": 1.0}
            return Verdict(Outcome.NOT_FASTER, "byte-identical to the slow program: no edit", figures=figures, logs=logs)
        try:
            figures = self._measure(sandbox, programs, case.record["test_indices"])
        except CandidateFailed as exc:
            reason = f"test case {exc.test}, in a measuring run after passing its check: {exc.failure.reason}"
            return self._failed(case, "candidate", dataclasses.replace(exc.failure, reason=reason), exc.run, logs)
        figures.update({f"{tag}_acc": value for tag, value in accuracies.items()})
        return self._conclude(case, figures, logs)

    def _conclude(self, case: Case, figures: dict[str, Any], logs: dict[str, str]) -> Verdict:
        speedup, bar = float(figures["speedup"]), self.settings["min-speedup"]
        reason = f"speedup {speedup:.3f}x [{figures['ci_low']:.3f}, {figures['ci_high']:.3f}] ({figures['metric']})"
        # Faster means beyond noise: the whole 95% interval above 1 (exact in instruction mode).
        passed = speedup >= bar and float(figures["ci_low"]) > 1.0
        if not passed:
            reason += f": needs a speedup of at least {bar:g}x with its interval above 1.0x"
        if "net_speedup" in figures:
            net = figures["net_speedup"]
            reason += (
                f"; net of start-up {net:.3f}x [{figures['net_ci_low']:.3f}, {figures['net_ci_high']:.3f}]"
                if net is not None
                else "; net of start-up: not meaningful (a net time at or below the noise floor)"
            )
        if case.record["test_note"]:
            reason += f"; {case.record['test_note']}"
        return Verdict(Outcome.PASSED if passed else Outcome.NOT_FASTER, reason, figures=figures, logs=logs)

    def _failed(self, case: Case, tag: str, failure: Failure, run: ProgramRun, logs: dict[str, str]) -> Verdict:
        """The verdict on program ``tag``'s failed run, its stderr and stdout kept in a log."""
        logged = run.for_log()
        logs[tag] = self.context.write_log(case, tag, logged)
        return Verdict.of_run(failure.outcome, failure.reason, logged, logs=dict(logs), figures={"candidate_acc": 0.0})

    def _check(self, case: Case, sandbox: Sandbox, program: Program, logs: dict[str, str]) -> tuple[Verdict | None, float]:
        """Run on every test once: a timeout, a crash or a wrong output, with the test's index,
        and the program's accuracy (PIE's: 0 for a timeout or a crash)."""
        scores: list[float] = []
        for test in case.record["test_indices"]:
            run, failure = sandbox.check(program, test)
            if failure is None:
                scores.append(1.0)
                continue
            verdict = self._failed(case, program.tag, dataclasses.replace(failure, reason=f"test case {test}: {failure.reason}"), run, logs)
            wrong = failure.outcome is Outcome.WRONG_OUTPUT
            return verdict, statistics.mean([*scores, failure.accuracy]) if wrong else 0.0
        return None, 1.0

    def _measure(self, sandbox: Sandbox, programs: list[Program], tests: list[int]) -> dict[str, Any]:
        if self.settings["pie-metric"] == "instructions":
            if not hasattr(self, "_counter"):
                self._counter = instruction_counter(sandbox.runner, sandbox.root)
            return count_instructions(sandbox, programs, tests, self._counter)
        trials, ignore = int(self.config["num_trials"]), int(self.config["ignore_first_k"])
        if ignore >= trials:
            raise DatasetError(self.config_path, "ignore_first_k drops every trial", field="ignore_first_k")
        return time_programs(sandbox, programs, tests, trials, ignore)

    # -- metrics ----------------------------------------------------------------------------------

    def summarize(self, results: list[dict[str, Any]]) -> Summary:
        return summarize(results, self.settings["min-speedup"], self.settings["k"])

    def finish(self, results: list[dict[str, Any]]) -> None:
        """PIE's report (output_report_file_path): one JSONL row per generation row, with all
        its columns plus {tag}_time_mean, {tag}_time_std, {tag}_acc, in ms throughout."""
        stored = self.context.stored("dataset")
        if not self.config["output_report_file_path"] or stored is None:
            return
        # An output goes where pytest runs, never beside a (bundled, installed) config.
        path = self.context.config.invocation_params.dir / self.config["output_report_file_path"]
        column = self.config["model_generated_potentially_faster_code_col"]
        write_report(path, Dataset.from_json(stored).cases, results, column)
