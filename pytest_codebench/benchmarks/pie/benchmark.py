"""PIE (performance-improving edits): a candidate must give the expected output on every test
case and run faster than the slow program it rewrites.

Takes PIE's own eval-config YAML (every key, same meaning and defaults; see ``config``). One
item per (generation row, candidate) (``load``), but a row is graded as a unit by its first
item (``row``): the slow program, the human reference and every distinct candidate run in a
sandbox that never holds an expected output (``sandbox``), each judged on every run
(``rules``), interleaved within the same trials, so that drift hits all alike. The first trial
is the check. A candidate's speedup is PIE's (whole process time, interpreter start-up
included): the median of its ratios paired trial by trial with the slow program's runs, with
exact sign-test bounds valid at every look of the adaptive trials (``speedup``; at most
``num_trials``). ``--codebench-pie-metric instructions`` counts user-space instructions instead
(perf, or callgrind where perf is not allowed): deterministic. PIE's metrics and its own
report: ``report``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from pytest_codebench.benchmark import Benchmark
from pytest_codebench.cases import Case, Dataset
from pytest_codebench.context import RunContext
from pytest_codebench.errors import DatasetError
from pytest_codebench.grading import Grading
from pytest_codebench.names import MAX_NAME, name_with
from pytest_codebench.options import ADAPTIVE_TRIALS, CACHE_DIR, DATASET, OUTPUT_LIMIT, SOLUTIONS, K
from pytest_codebench.reports.comparison import Row
from pytest_codebench.reports.reporting import ItemResult, Summary
from pytest_codebench.runners import Runner, RunResult
from pytest_codebench.stats.signs import Looks
from pytest_codebench.sweeps.solution_sets import SolutionSet, sweep
from pytest_codebench.verdict import Outcome, Verdict

from ..records import sha256_file
from ..speedup import ACCEPT_SUSPECT, MAX_SPEEDUP, Stopping
from .compared import compared_rows
from .config import (
    CONFIG,
    CXX,
    MIN_SPEEDUP,
    OPTIONS,
    PIE,
    PIE_MEMORY,
    PIE_METRIC,
    PYTHON,
    EvalConfig,
    located,
    read_config,
)
from .interpreter import PROBES, Interpreter, programs_python, startup_ms
from .load import Loader, PieRow, every_row, unanswered
from .measure import UNMEASURED, instruction_counter
from .report import OPTIMIZED, best_at_k_columns, summarize
from .report_file import write_report
from .row import CandidateFailure, Measuring, RowOutcome, candidate_failure, digest, grade_row
from .row_signal import row_signal
from .rules import not_a_program, speed_verdict, suspicion
from .sandbox import Launch, Program, Sandbox, pinned_core

# Never decide a candidate's speed on fewer trials than this (beyond the ignored ones), unless
# the config allows fewer in all.
MIN_TRIALS = 5


class Pie(Benchmark):
    name = "pie"
    default_dataset = "pie/eval_config.yaml"
    options = OPTIONS
    # A directory of generations files, one per model: NAME.jsonl.
    solution_suffixes = (".jsonl",)
    # A row is checked and timed as a unit (``row``).
    grades_tasks_whole = True

    def __init__(self, context: RunContext) -> None:
        super().__init__(context)
        self._counter: str | None = None  # perf or callgrind, found on the first item counted
        self._interpreter: Interpreter | None = None

    # -- configuration and loading ------------------------------------------------------------

    @functools.cached_property
    def config_path(self) -> Path:
        given = self.settings[CONFIG]
        return Path(given).resolve() if given else super().dataset_path()

    @functools.cached_property
    def config(self) -> EvalConfig:
        return read_config(self.config_path, self.settings[PIE])

    def dataset_path(self) -> Path:
        """The generations file: its rows are the items. With ``--codebench-solutions`` (one
        generations file per model) the items are theirs, and the dataset is the config."""
        given = self.settings[DATASET]
        if given:
            return Path(given).resolve()
        if self.settings[SOLUTIONS]:
            return self.config_path
        path = located(self.config_path, self.config.model_generated_outputs_path)
        assert path is not None  # a required key
        return path

    def load(self) -> Dataset:
        path = self.dataset_path()
        timed = self.config.num_trials - self.config.ignore_first_k
        if self.settings[PIE_METRIC] == "wall" and timed < Looks.fewest():
            why = f"{timed} timed trials (num_trials less ignore_first_k) cannot show a speedup at the 5% level"
            raise DatasetError(self.config_path, f"{why}: at least {Looks.fewest()} are needed", field="num_trials")
        loader = Loader(self.config, self.config_path, counted=self.settings[PIE_METRIC] == "instructions")

        def cases_of(solutions: SolutionSet) -> list[Case]:
            generations = Path(solutions.path) if solutions.path else path
            if not generations.exists():
                where = SOLUTIONS.cli if solutions.path else "model_generated_outputs_path"
                raise DatasetError(generations, f"{where}: no such file")
            return loader.cases(generations)

        read = {id(each): cases_of(each) for each in self.solution_sets}
        answered = every_row([case for cases in read.values() for case in cases])
        for each in self.solution_sets:
            read[id(each)] += unanswered(answered, read[id(each)], each.path or str(path))
        return Dataset(str(path), sha256_file(path), None, sweep(self.solution_sets, lambda each: read[id(each)]))

    # -- workspace --------------------------------------------------------------------------------

    @staticmethod
    def programs(case: Case) -> list[Program]:
        row = PieRow.from_json(case.record)
        programs = [Program("input", row.language, row.slow)]
        if row.reference:
            programs.append(Program("reference", row.language, row.reference))
        programs.append(Program("candidate", row.language, (case.solution or {})["code"]))
        return programs

    def context_of(self, case: Case) -> dict[str, str]:
        """The slow program the candidate rewrites."""
        return {"": PieRow.from_json(case.record).slow}

    def prepare(self, case: Case, workspace: Path) -> str | None:
        """The slow program and the candidate, for a reader (kept with --codebench-keep-workspaces):
        every run is in a folder of its own (``sandbox``). Never the reference, which another
        item's candidate could find here and run, and never a test case."""
        refused = not_a_program((case.solution or {}).get("code"))
        if refused is not None:
            return refused
        for program in self.programs(case):
            if program.tag == "reference":
                continue
            target = workspace / program.source
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(program.code)
        return None

    # -- the interpreter ----------------------------------------------------------------------------

    def interpreter(self, runner: Runner) -> Interpreter:
        """What runs the Python programs (``interpreter``), found once per process."""
        if self._interpreter is None:
            self._interpreter = programs_python(runner, self.settings[PYTHON], self.settings[CACHE_DIR])
        return self._interpreter

    def header_lines(self, runner_class: type[Runner], runner: Callable[[], Runner]) -> list[str]:
        """The Python programs' interpreter and its start-up, timed where the programs run
        (under a container runner, in each row's trials only: the header starts no container)."""
        if not runner_class.host_programs:
            python = self.settings[PYTHON] or runner_class.python
            return [f"codebench: PIE's Python programs run with {python} in the container; start-up timed in each row"]
        made = runner()
        interpreter = self.interpreter(made)
        ms = startup_ms(made, interpreter, self.context.run_dir / "probe" / "python")
        took = f"{ms:.1f} ms a start (median of {PROBES}, where the programs run)" if ms is not None else "not measured"
        return [
            f"codebench: PIE's Python programs run with {interpreter.python} ({interpreter.what}); start-up {took}, "
            "counted in every time as PIE counts it"
        ]

    # -- grading ----------------------------------------------------------------------------------

    def grade(self, grading: Grading) -> Verdict:
        row = PieRow.from_json(grading.case.record)
        interpreter = self.interpreter(grading.runner)
        launch = Launch(
            python=interpreter.python,
            folders=interpreter.folders,
            memory_mib=self.settings[PIE_MEMORY],
            core=pinned_core(grading.runner, self.config.cpu_number),
            max_time=self.config.max_time_per_run,
            output_limit=self.settings[OUTPUT_LIMIT],
        )
        with Sandbox(grading.runner, launch, Path(row.tests)) as sandbox:
            return self._grade(grading, row, sandbox)

    def _grade(self, grading: Grading, row: PieRow, sandbox: Sandbox) -> Verdict:
        # The row's programs, every candidate's among them, checked and timed once per row (``row``).
        shared = self._row(grading, row, sandbox)
        grading.figures.update(cast("dict[str, float | str]", shared["figures"]))
        signal = row_signal(shared["figures"])
        if signal is not None:
            grading.figures.update(row_signal=signal[1], row_signal_holds=signal[0])
        # A row without signal still grades its candidate against the slow program: said beside it.
        note = "" if signal is None or signal[0] else f"; row_signal: {signal[1]}"
        found = shared["candidates"][digest((grading.case.solution or {})["code"])]
        grading.figures["candidate_acc"] = found["accuracy"]
        failure = found["failure"]
        if failure is not None:
            # PIE's figures of a wrong output (its time, where it ran on every test case).
            grading.figures.update(cast("dict[str, float | str]", found["figures"]))
            logged = RunResult(**failure["log"])
            grading.log(failure["phase"], logged)
            # A wrong output's reason quotes its first mismatching line: the output itself (40 lines
            # of it in the failure text) would bury it, and its log keeps it whole.
            quiet = {"output_tail": ""} if failure["outcome"] == Outcome.WRONG_OUTPUT.value else {}
            return grading.verdict(Outcome(failure["outcome"]), failure["reason"], logged, **quiet)
        if found["no_edit"] is not None:
            # Nothing to measure, and a measurement could only add noise.
            grading.figures.update(metric=UNMEASURED, speedup=1.0, ci_low=1.0, ci_high=1.0)
            return grading.verdict(Outcome.NOT_FASTER, found["no_edit"] + note)
        # A None figure is one that is not meaningful (a net speedup below the noise floor):
        # the reports show it as null, which the core's figure type does not spell out.
        figures = found["figures"]
        grading.figures.update(cast("dict[str, float | str]", figures))
        outcome, reason = speed_verdict(figures, self.settings[MIN_SPEEDUP])
        why = suspicion(figures, self.settings[MAX_SPEEDUP])
        if why is not None:
            # Left out of the metrics (report.py), as ComputeEval does: the verdict stays, a
            # real algorithmic rewrite can be that fast.
            grading.figures["perf_suspect"] = why
            reason += f"; suspect: {why}"
        return grading.verdict(outcome, reason + note + (f"; {row.test_note}" if row.test_note else ""))

    def _row(self, grading: Grading, row: PieRow, sandbox: Sandbox) -> RowOutcome:
        """The row graded as a unit (``row``), once per row and run, for every candidate of the
        row and every worker: the slow program runs once a trial for all of them, where each
        item timing its own candidate ran it again (issue 24: a row of six candidates timed its
        slow program six times)."""
        # A candidate that is no text is refused in its own item (``prepare``), and is no program of the row.
        texts = [code for code in row.candidates if isinstance(code, str)]
        programs = self.programs(grading.case)[:-1] + [Program("candidate", row.language, code) for code in texts]
        facts = [
            [program.code for program in programs],
            row.language,
            tests_digest(row.tests, tuple(row.test_indices)),
            dataclasses.asdict(dataclasses.replace(sandbox.launch, core=None)),  # each xdist worker has its own core
            [self.settings[PIE_METRIC], self.settings[CXX], self.config.cflags, grading.runner.fingerprint()],
            [getattr(self.stopping, name) for name in ("bars", "width", "min_trials", "cap", "adaptive", "ignore")],
        ]
        key = hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:20]

        def compute() -> RowOutcome:
            counter = None
            if self.settings[PIE_METRIC] == "instructions":
                self._counter = self._counter or instruction_counter(sandbox)
                counter = self._counter
            how = Measuring(self.stopping, counter, lambda program: self._compile(sandbox, program))
            return grade_row(sandbox, programs, row.test_indices, how)

        shared: RowOutcome = grading.context.once(f"pie-row-{key}", compute)
        return shared

    def _compile(self, sandbox: Sandbox, program: Program) -> CandidateFailure | None:
        """Compile ``program`` in the sandbox where it is C++; its compile error, else None."""
        if program.language != "cpp":
            return None
        result = sandbox.compile(program, self.settings[CXX], self.config.cflags)
        if result.ok:
            return None
        return candidate_failure(Outcome.BUILD_ERROR, "compile error", "candidate-compile", result)

    @functools.cached_property
    def stopping(self) -> Stopping:
        """When a candidate's timing may stop: once its interval lies wholly on one side of
        every bar a verdict or a metric compares against (the interval's own bar 1.0, the
        user's, PIE's %Optimized), or is narrow; or once it can no longer be shown above 1.0
        within the trials left, and its median stays at or below 1.0 whatever they show (the
        metrics count it as 1.0x either way); at most ``num_trials`` trials."""
        cap, ignore = self.config.num_trials, self.config.ignore_first_k
        return Stopping(
            bars=(1.0, self.settings[MIN_SPEEDUP], OPTIMIZED),
            min_trials=min(MIN_TRIALS, cap - ignore),
            cap=cap,
            adaptive=self.settings[ADAPTIVE_TRIALS],
            ignore=ignore,
            floor=1.0,
        )

    # -- what decides a verdict (the verdict store's key) ----------------------------------------

    def answer(self, case: Case) -> Any:
        return (case.solution or {}).get("code")

    def task_key(self, case: Case) -> Any:
        """The row, and the bytes of the test cases it is checked on (files beside the dataset)."""
        row = PieRow.from_json(case.record)
        return {"record": case.record, "tests": tests_digest(row.tests, tuple(row.test_indices))}

    def key_facts(self, runner: Runner) -> dict[str, Any]:
        """The eval config's keys that grade (not where outputs go) and the compiler's version."""
        config = {key: value for key, value in dataclasses.asdict(self.config).items() if key not in OUTPUT_KEYS}
        probe = self.context.run_dir / "probe"
        version = self.context.once("pie-cxx", lambda: compiler_version(runner, self.settings[CXX], probe))
        return {"config": config, "cxx": version, "python": self.interpreter(runner).python}

    @property
    def timed(self) -> bool:
        return True  # speedups, and instruction counts of this CPU

    # -- metrics ----------------------------------------------------------------------------------

    # Models compared on PIE's own figures, %Correct and %Optimized at best@1 (compared.py).
    compared_problems = staticmethod(compared_rows)

    def summarize(self, results: list[ItemResult]) -> Summary:
        bound = None if self.settings[ACCEPT_SUSPECT] else self.settings[MAX_SPEEDUP]
        return summarize(results, self.settings[MIN_SPEEDUP], self.settings[K], bound)

    def columns(self, summary: Summary) -> Row:
        return best_at_k_columns(summary.metrics, self.settings[MIN_SPEEDUP], self.settings[K])

    def finish(self, results: list[ItemResult]) -> None:
        """PIE's report (output_report_file_path): one JSONL row per generation row, PIE's
        columns in PIE's meaning and ours beside them (``report_file``). Written where PIE writes
        it, relative to where pytest runs; with ``--codebench-solutions``, once per model, the
        model's name before the path's last suffix (``report.jsonl``: ``report.NAME.jsonl``)."""
        if not self.config.output_report_file_path or not results:
            return
        # xdist's workers leave the dataset they read in the run folder; a run without them
        # collected in this process and kept no copy, so it reads the dataset again.
        stored = self.context.stored("dataset")
        # An output goes where pytest runs, never beside a (bundled, installed) config.
        path = self.context.config.invocation_params.dir / self.config.output_report_file_path
        column = self.config.model_generated_potentially_faster_code_col
        cases = Dataset.from_json(stored).cases if stored is not None else self.load().cases
        references = Loader(self.config, self.config_path, counted=False).references()
        failed = []  # one model's file that cannot be written leaves the others': each on its own
        for model in sorted({case.model or "" for case in cases}):
            # The one set --codebench-solutions names without a name by hand is named by its file.
            given = self.solution_sets[0].path if self.settings[SOLUTIONS] else None
            name = model or (Path(given).name.removesuffix(".jsonl") if given else "")
            # The name a solutions file gave (a long one, say) must not end the report: safe_name.
            room = MAX_NAME - len(path.stem.encode()) - 1
            target = path.with_name(f"{path.stem}.{name_with(name, path.suffix, room)}") if name else path
            mine = [result for result in results if (result["model"] or "") == model]
            try:
                write_report(target, [case for case in cases if (case.model or "") == model], mine, column, references)
            except OSError as exc:
                failed.append(f"{target}: {exc.strerror or exc}")
                continue
            self.outputs.append(f"PIE's report{f' of {name}' if name else ''}: {target}")
        if failed:
            raise OSError("; ".join(failed))


# The eval config's keys that say where outputs go: no verdict depends on them.
OUTPUT_KEYS = frozenset({"model_generated_outputs_path", "output_report_file_path", "temp_dir", "cpp_results_path"})


@functools.lru_cache(maxsize=4096)
def tests_digest(folder: str, indices: tuple[int, ...]) -> str:
    """A digest of a problem's test cases (``input.N.txt`` and ``output.N.txt`` for each N)."""
    digest = hashlib.sha256()
    for index in indices:
        for name in (f"input.{index}.txt", f"output.{index}.txt"):
            path = Path(folder) / name
            digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"(missing)") + b"\0")
    return digest.hexdigest()


def compiler_version(runner: Runner, cxx: str, workdir: Path) -> str:
    """The first line of ``CXX --version`` where commands run, or what it said instead."""
    workdir.mkdir(parents=True, exist_ok=True)
    result = runner.run(f"{shlex.quote(cxx)} --version", cwd=workdir, timeout=60)
    lines = result.output.strip().splitlines()
    return lines[0] if result.ok and lines else f"no compiler ({result.exit_code})"
