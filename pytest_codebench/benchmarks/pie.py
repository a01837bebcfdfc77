"""PIE (performance-improving edits): a candidate must give the expected output on every test
case and run faster than the slow program it rewrites.

Takes PIE's own eval-config YAML (every key, same meaning and defaults). One item per
(generation row, candidate). The slow program, the human reference and the candidate are timed
interleaved within each trial, so that drift hits all three alike; the speedup comes with a 95%
bootstrap interval over the paired trials. ``--codebench-pie-metric instructions`` counts
user-space instructions instead (perf, or callgrind where perf is not allowed): deterministic.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import random
import re
import shutil
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from ..benchmark import Benchmark, Case, Dataset, RunContext, Summary
from ..errors import DatasetError, HarnessError
from ..options import Option
from ..records import read_jsonl, sha256_file
from ..reporting import graded
from ..runners import Runner, RunResult
from ..verdict import Outcome, Verdict

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
# PIE's bar for %Optimized.
OPTIMIZED = 1.10
FLOAT_TOLERANCE = 1e-3
BOOTSTRAP_RESAMPLES = 2000
# How each instruction counter wraps a program; both write the count to .count.
COUNTERS = {
    "perf": "perf stat -x, -e instructions:u -o .count -- ",
    "callgrind": "valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file=.count ",
}


def _overrides(text: str) -> dict[str, Any]:
    pairs = {}
    for part in text.split():
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"expected KEY=VALUE, got {part!r}")
        pairs[key] = yaml.safe_load(value)
    return pairs


@dataclasses.dataclass(frozen=True)
class Program:
    """One program of an item: where it lives in the workspace and how to run it."""

    tag: str  # input (the slow one), reference, candidate
    language: str
    code: str

    @property
    def source(self) -> str:
        return f"{self.tag}/prog.{'py' if self.language == 'python' else 'cpp'}"

    @property
    def binary(self) -> str:
        return f"{self.tag}/prog"


def normalise_code(code: str) -> str:
    """PIE's join key: stripped, runs of blank lines collapsed."""
    return re.sub(r"\n\s*\n+", "\n\n", code.strip())


def accuracy(expected: str, actual: str) -> tuple[float, str | None]:
    """PIE's line rule: the share of expected lines the output matches (equal, or both whole
    lines floats within 1e-3), and the first mismatch as a diff. Empty expected output is
    matched only by empty output (PIE divides by zero there)."""
    want, got = expected.strip().splitlines(), actual.strip().splitlines()
    if not want:
        return (1.0, None) if not got else (0.0, f"expected no output, got {got[0]!r}")
    matched, first = 0, None
    for index, line in enumerate(want):
        have = got[index] if index < len(got) else None
        if have is not None and _same_line(line, have):
            matched += 1
        elif first is None:
            first = f"line {index + 1}: expected {line.strip()!r}, got {have.strip() if have is not None else '<no line>'!r}"
    return matched / len(want), first


def _same_line(expected: str, actual: str) -> bool:
    if expected.strip() == actual.strip():
        return True
    try:
        return abs(float(expected) - float(actual)) <= FLOAT_TOLERANCE
    except ValueError:
        return False


def bootstrap_ratio(slow: list[float], fast: list[float], seed: int = 0) -> tuple[float, float, float]:
    """The median of the paired per-trial ratios slow / fast, and its 95% percentile bootstrap
    interval. Within a trial the programs run side by side, so what drifts between trials
    (load, clock, cache) cancels in each ratio."""
    ratios = [s / f for s, f in zip(slow, fast, strict=True)]
    point = statistics.median(ratios)
    if len(ratios) < 2:
        return point, point, point
    rng = random.Random(seed)
    resampled = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(BOOTSTRAP_RESAMPLES))
    return point, resampled[int(0.025 * len(resampled))], resampled[int(0.975 * len(resampled)) - 1]


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
        for program in self.programs(case):
            target = workspace / program.source
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(program.code)
        tests = workspace / "tests"
        tests.mkdir()
        for index in case.record["test_indices"]:
            for kind in ("input", "output"):
                shutil.copyfile(Path(case.record["tests"]) / f"{kind}.{index}.txt", tests / f"{kind}.{index}.txt")
        return None

    # -- grading ----------------------------------------------------------------------------------

    def grade(self, case: Case, workspace: Path, rejected: str | None, runner: Runner) -> Verdict:
        programs = self.programs(case)
        tests = case.record["test_indices"]
        max_time = float(self.config["max_time_per_run"])
        logs: dict[str, str] = {}
        for program in programs:
            if program.language == "cpp":
                result = runner.run(
                    f"{self.settings['cxx']} {self.config['cflags']} -o {program.binary} {program.source}",
                    cwd=workspace,
                    timeout=120,
                )
                if not result.ok:
                    logs[f"{program.tag}-compile"] = self.context.write_log(case, f"{program.tag}-compile", result)
                    if program.tag == "candidate":
                        return self._failed(Outcome.BUILD_ERROR, "compile error", result, logs)
                    raise DatasetError(case.record["tests"], f"the {program.tag} program does not compile:\n{result.tail(10)}")
        accuracies: dict[str, float] = {}
        for program in list(programs):
            verdict, accuracies[program.tag] = self._check(program, tests, workspace, runner, max_time, case, logs)
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
        if self.settings["pie-metric"] == "instructions":
            figures = self._count(programs, tests, workspace, runner, max_time)
        else:
            figures = self._time(programs, tests, workspace, runner, max_time)
        figures.update({f"{tag}_acc": value for tag, value in accuracies.items()})
        speedup = float(figures["speedup"])
        bar = self.settings["min-speedup"]
        reason = f"speedup {speedup:.3f}x [{figures['ci_low']:.3f}, {figures['ci_high']:.3f}] ({figures['metric']})"
        if case.record["test_note"]:
            reason += f"; {case.record['test_note']}"
        # Faster means beyond noise: the whole 95% interval above 1 (exact in instruction mode).
        if speedup >= bar and float(figures["ci_low"]) > 1.0:
            return Verdict(Outcome.PASSED, reason, figures=figures, logs=logs)
        need = f"a speedup of at least {bar:g}x with its interval above 1.0x"
        return Verdict(Outcome.NOT_FASTER, f"{reason}: needs {need}", figures=figures, logs=logs)

    def _command(self, program: Program | None, test: int | None, path: str | None = None, counter: str = "") -> str:
        """The shell command running ``program`` (None: the bare interpreter) on test ``test``
        (stdin), pinned to this worker's core, under the address-space limit and ``counter``."""
        if program is None:
            run = f"{self.python} -c pass"
        else:
            where = path or (program.source if program.language == "python" else program.binary)
            run = f"{self.python} {where}" if program.language == "python" else f"./{where}"
        stdin = f" < tests/input.{test}.txt" if test is not None else ""
        # valgrind reserves more address space than the program it runs: no limit under it.
        limit = "" if counter else f"ulimit -v {self.settings['pie-memory'] * 1024}; "
        return f"{limit}{self._pin()}{COUNTERS.get(counter, '')}{run}{stdin}"

    def _pin(self) -> str:
        """Each xdist worker on a core of its own; cpu_number from the config otherwise."""
        if shutil.which("taskset") is None:
            return ""
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        core = int(worker[2:]) % (os.cpu_count() or 1) if worker.startswith("gw") else int(self.config["cpu_number"])
        return f"taskset --cpu-list {core} "

    @staticmethod
    def _failed(outcome: Outcome, reason: str, result: RunResult, logs: dict[str, str]) -> Verdict:
        return Verdict.of_run(outcome, reason, result, logs=dict(logs), figures={"candidate_acc": 0.0})

    def _check(
        self, program: Program, tests: list[int], workspace: Path, runner: Runner, max_time: float, case: Case, logs: dict[str, str]
    ) -> tuple[Verdict | None, float]:
        """Run on every test once: a timeout, a crash or a wrong output, with the test's index."""
        scores = []
        for test in tests:
            result = runner.run(self._command(program, test), cwd=workspace, timeout=max_time, env={"PYTHONHASHSEED": "0"})
            where = f"test case {test}"
            if result.timed_out:
                logs[program.tag] = self.context.write_log(case, program.tag, result)
                return self._failed(Outcome.TEST_TIMEOUT, f"{where}: ran past {max_time:g} s", result, logs), 0.0
            if result.exit_code != 0:
                logs[program.tag] = self.context.write_log(case, program.tag, result)
                return self._failed(Outcome.RUNTIME_ERROR, f"{where}: exited {result.exit_code}", result, logs), 0.0
            expected = (workspace / "tests" / f"output.{test}.txt").read_text(errors="replace")
            score, mismatch = accuracy(expected, result.output)
            scores.append(score)
            if score < 1.0:
                logs[program.tag] = self.context.write_log(case, program.tag, result)
                verdict = self._failed(Outcome.WRONG_OUTPUT, f"{where}: accuracy {score:.2f}; first mismatch at {mismatch}", result, logs)
                return verdict, statistics.mean(scores)
        return None, 1.0

    def _time(self, programs: list[Program], tests: list[int], workspace: Path, runner: Runner, max_time: float) -> dict[str, float | str]:
        """Wall time, interleaved: each trial runs every program (and the bare interpreter) on
        every test, in an order that rotates from trial to trial."""
        language = programs[0].language
        contenders = [p.tag for p in programs] + (["startup"] if language == "python" else [])
        totals: dict[str, list[float]] = defaultdict(list)
        trials = int(self.config["num_trials"])
        for trial in range(trials):
            order = contenders[trial % len(contenders) :] + contenders[: trial % len(contenders)]
            sums = dict.fromkeys(contenders, 0.0)
            for test in tests:
                for tag in order:
                    command = self._command(next((p for p in programs if p.tag == tag), None), test)
                    result = runner.run(command, cwd=workspace, timeout=max_time, env={"PYTHONHASHSEED": "0"})
                    if not result.ok:
                        raise HarnessError(f"a timing run of {tag} failed after passing its check: {result.tail(3)}")
                    sums[tag] += result.seconds
            if trial >= int(self.config["ignore_first_k"]):
                for tag, seconds in sums.items():
                    totals[tag].append(seconds * 1000)
        if not totals:
            raise DatasetError(self.config_path, "ignore_first_k drops every trial", field="ignore_first_k")
        startup = totals.pop("startup", [0.0] * len(totals["input"]))
        # Interpreter start-up is the same for every program: measured apart, taken out.
        net = {tag: [max(t - s, 1e-3) for t, s in zip(times, startup, strict=True)] for tag, times in totals.items()}
        figures: dict[str, float | str] = {"metric": "wall", "trials": len(startup)}
        for tag, prefix in (("candidate", ""), ("reference", "reference_")):
            if tag in net:
                speedup, low, high = bootstrap_ratio(net["input"], net[tag])
                figures.update({f"{prefix}speedup": round(speedup, 4), f"{prefix}ci_low": round(low, 4),
                                f"{prefix}ci_high": round(high, 4)})
        if language == "python":
            figures["startup_ms"] = round(statistics.median(startup) / len(tests), 3)
        for tag, times in net.items():
            figures[f"{tag}_time_median"] = round(statistics.median(times), 3)
            figures[f"{tag}_time_mean"] = round(statistics.mean(times), 3)
            figures[f"{tag}_time_std"] = round(statistics.pstdev(times), 3)
        return figures

    def _count(self, programs: list[Program], tests: list[int], workspace: Path, runner: Runner, max_time: float) -> dict[str, float | str]:
        """User-space instructions, summed over the tests: one run each (they repeat exactly).
        Every program runs from the same path, so that the path itself cannot differ."""
        counter = self.instruction_counter(runner, workspace)
        language = programs[0].language
        same = "run/prog.py" if language == "python" else "run/prog"
        (workspace / "run").mkdir(exist_ok=True)
        counts: dict[str, float] = {}
        for program in programs:
            shutil.copy2(workspace / (program.source if language == "python" else program.binary), workspace / same)
            counts[program.tag] = sum(
                self._instructions(counter, self._command(program, test, same, counter), workspace, runner, max_time)
                for test in tests
            )
        figures: dict[str, float | str] = {"metric": f"instructions ({counter})", "trials": 1}
        if language == "python":
            startup = self._instructions(counter, self._command(None, None, counter=counter), workspace, runner, max_time)
            figures["startup_instructions"] = startup
            counts = {tag: max(count - startup * len(tests), 1.0) for tag, count in counts.items()}
        for tag, prefix in (("candidate", ""), ("reference", "reference_")):
            if tag in counts:
                ratio = counts["input"] / counts[tag]
                figures.update({f"{prefix}speedup": ratio, f"{prefix}ci_low": ratio, f"{prefix}ci_high": ratio})
        figures.update({f"{tag}_instructions": count for tag, count in counts.items()})
        return figures

    def _instructions(self, counter: str, command: str, workspace: Path, runner: Runner, max_time: float) -> float:
        """The count the counter wrote to .count for one run of ``command``."""
        result = runner.run(command, cwd=workspace, timeout=max_time * 100, env={"PYTHONHASHSEED": "0"})
        log = (workspace / ".count").read_text() if (workspace / ".count").exists() else ""
        match = re.search(r"Collected : (\d+)", log) or re.search(r"^(\d+),,instructions", log, re.MULTILINE)
        if not result.ok or match is None:
            raise HarnessError(f"counting instructions with {counter} failed: {result.tail(5)} {log[-300:]}")
        return float(match.group(1))

    def instruction_counter(self, runner: Runner, workspace: Path) -> str:
        """perf where the kernel lets it count user-space instructions, else callgrind."""
        if not hasattr(self, "_counter"):
            probe = runner.run("perf stat -x, -e instructions:u true", cwd=workspace, timeout=30)
            self._counter = "perf" if re.search(r"^\d+,,instructions", probe.output, re.MULTILINE) else "callgrind"
        return self._counter

    # -- metrics ----------------------------------------------------------------------------------

    def summarize(self, results: list[dict[str, Any]]) -> Summary:
        bar = self.settings["min-speedup"]
        lines, metrics = [], {}
        rows = _rows(results)
        for k in self.settings["k"]:
            best = _best_at_k(rows, k, bar)
            metrics[f"best@{k}"] = best
            if best["rows"]:
                lines.append(
                    f"best@{k}: %Correct {best['correct']:.2f}%, %Optimized(1.10) {best['optimized']:.2f}%, "
                    f"%Optimized({bar:g}) {best['optimized_at_bar']:.2f}%, mean speedup {best['mean_speedup']:.3f}x "
                    f"({best['rows']} rows)"
                )
            else:
                lines.append(f"best@{k}: no row has a graded candidate")
        by_problem: dict[str, dict[str, list]] = defaultdict(dict)
        for key, candidates in rows.items():
            by_problem[key.split("/")[0]][key] = candidates
        metrics["problems"] = {problem: _best_at_k(problem_rows, 1, bar) for problem, problem_rows in sorted(by_problem.items())}
        for problem, best in metrics["problems"].items():
            if best["rows"]:
                lines.append(f"  {problem}: %Correct {best['correct']:.0f}%, mean speedup {best['mean_speedup']:.3f}x")
        metric = next((r["figures"].get("metric") for r in results if "metric" in r.get("figures", {})), None)
        if metric:
            lines.append(f"metric: {metric}")
        first = metrics.get(f"best@{self.settings['k'][0]}", {})
        score = first.get("optimized_at_bar") if first.get("rows") else None
        return Summary(lines=lines, metrics=metrics, score=score)

    def finish(self, results: list[dict[str, Any]]) -> None:
        """PIE's report (output_report_file_path): one JSONL row per generation row, with all
        its columns plus {tag}_time_mean, {tag}_time_std, {tag}_acc, in ms throughout."""
        stored = self.context.stored("dataset")
        if not self.config["output_report_file_path"] or stored is None:
            return
        # An output goes where pytest runs, never beside a (bundled, installed) config.
        path = self.context.config.invocation_params.dir / self.config["output_report_file_path"]
        column = self.config["model_generated_potentially_faster_code_col"]
        by_row: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        for result in results:
            by_row[result["task_id"]][result["sample"]] = result
        lines = []
        for case in Dataset.from_json(stored).cases:
            if case.sample != 0 or case.error is not None:
                continue
            row = dict(case.record["row"])
            graded = by_row.get(case.task_id, {})
            # The slow program and the reference are timed beside every candidate that ran.
            first = next((r["figures"] for _, r in sorted(graded.items()) if "input_time_mean" in r["figures"]), {})
            for tag in ("input", "reference"):
                row.update(_columns(tag, first, tag))
            best = None
            for index, result in sorted(graded.items()):
                figures = result.get("figures", {})
                row.update(_columns(f"{column}_{index}", figures, "candidate"))
                if figures.get("candidate_acc") == 1.0 and "candidate_time_mean" in figures:
                    if best is None or figures["candidate_time_mean"] < best["candidate_time_mean"]:
                        best = figures
            row.update(_columns(column, best or {}, "candidate"))
            lines.append(json.dumps(row))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines))


def _columns(tag: str, figures: dict[str, Any], source: str) -> dict[str, Any]:
    return {
        f"{tag}_time_mean": figures.get(f"{source}_time_mean"),
        f"{tag}_time_std": figures.get(f"{source}_time_std"),
        f"{tag}_acc": figures.get(f"{source}_acc", 0.0 if figures else None),
    }


def _rows(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Graded candidates by generation row, in candidate order (harness errors and skips left out)."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in sorted(results, key=lambda r: r["sample"]):
        if graded(result):
            rows[result["task_id"]].append(result)
    return rows


def _best_at_k(rows: dict[str, list[dict[str, Any]]], k: int, bar: float) -> dict[str, Any]:
    """PIE 2024: a row's speedup is max(1, slow / best correct of its first k), 1.0 without one."""
    speedups, correct = [], 0
    for candidates in rows.values():
        good = [c["figures"]["speedup"] for c in candidates[:k] if c["outcome"] in ("passed", "not_faster")]
        correct += bool(good)
        speedups.append(max(1.0, *good) if good else 1.0)
    share = (lambda count: 100 * count / len(speedups)) if speedups else (lambda count: 0.0)
    return {
        "rows": len(speedups),
        "correct": share(correct),
        "optimized": share(sum(s >= OPTIMIZED for s in speedups)),
        "optimized_at_bar": share(sum(s >= bar for s in speedups)),
        "mean_speedup": statistics.mean(speedups) if speedups else 1.0,
    }
