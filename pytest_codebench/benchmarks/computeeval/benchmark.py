"""ComputeEval (NVIDIA): CUDA problems in datapacks, graded by building and running held-out tests.

A problem datapack is a ``.tar.gz`` holding ``metadata.json`` and ``problems.jsonl`` (or a bare
``problems.jsonl``); solutions come as a ``-solutions.tar.gz`` datapack, a ``.jsonl`` file, or
``baseline`` (each problem's reference answer). See ``datasets/computeeval/README.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

from pytest_codebench.benchmark import Benchmark, Sample
from pytest_codebench.case_images import named_image
from pytest_codebench.cases import Case, Dataset
from pytest_codebench.context import RunContext, slug
from pytest_codebench.errors import DatasetError
from pytest_codebench.gpu import cuda
from pytest_codebench.gpu.scheduler import GpuScheduler
from pytest_codebench.grading import Grading, Step
from pytest_codebench.once import SlotPool
from pytest_codebench.options import BUILD_JOBS, CACHE_DIR, DATASET, KEEP_WORKSPACES, Option
from pytest_codebench.reports.comparison import Row
from pytest_codebench.reports.reporting import ItemResult, Summary
from pytest_codebench.runners import Gpu, GpuProbe, Runner
from pytest_codebench.sweeps.reuse import run_identity
from pytest_codebench.verdict import Outcome, Status, Verdict
from pytest_codebench.workspace.cleanup import remove_tree
from pytest_codebench.workspace.files import UnsafePath, guarded_paths, normalise, write_file

from . import cutlass, patched, sanitizer, skip_missing, validation
from .gpu_options import GPU_SHARE, GPU_SLOTS, RUN_WITHOUT_GPU
from .graded import GRADED_SOLUTIONS, write_graded_solutions
from .guard import canary, link, main_guard, pycanary
from .headers import system_headers
from .loading import releases, specs
from .loading.datapacks import in_file_order, swept_cases
from .loading.records import Problem, timeout_of
from .perf import bench, profilers
from .perf import phase as perf
from .perf.phase import PERF, PERF_OPTIONS, PROFILER
from .perf.scores import FAST_P, perf_columns
from .reference import ReferenceCache, References, rests_on
from .rules import SKIP_KIND, honour_skip, judge_test, linked_libraries, machine_cannot_grade, shadowed_header
from .skip_missing import UNANSWERED
from .sourcecode import missing_references
from .summary import NO_GPU, summarize, table_cells

MACHINE_KEY = "computeeval-machine"
LIBRARY_KEY = "computeeval-library"
# pytest-timeout's backstop sits this far above an item's own budget.
BACKSTOP_SLACK = 30.0


class ComputeEval(Benchmark):
    name = "computeeval"
    solution_keywords = ("baseline",)
    reads_folder = staticmethod(specs.is_tree)  # a tree of problem-spec folders
    default_dataset = "computeeval/sample-problems.tar.gz"
    options: ClassVar[tuple[Option[Any], ...]] = (RUN_WITHOUT_GPU, GPU_SHARE, GPU_SLOTS, GRADED_SOLUTIONS)
    options += (*PERF_OPTIONS, validation.VALIDATE, UNANSWERED, sanitizer.SANITIZER)

    def __init__(self, context: RunContext) -> None:
        super().__init__(context)
        self._machines: dict[str, cuda.Machine] = {}
        self._system_headers: dict[str | None, frozenset[str]] = {}
        self._profilers: dict[str, profilers.Profiler | str] = {}

    # -- loading --------------------------------------------------------------------------------

    def dataset_path(self) -> Path:
        """A release name (``2026-1``) resolves to NVIDIA's datapack; see releases."""
        release = releases.resolve_setting(self.context)
        tree = None if release or self.settings[DATASET] else specs.tree_argument(self.context.config)
        return release.path if release else tree or super().dataset_path()

    def load(self) -> Dataset:
        path = self.dataset_path()
        problems, release, broken, digest = specs.read_dataset(path)
        make = functools.partial(self._case, problems)
        validating = self.settings[validation.VALIDATE]
        made = validation.cases(problems, make) if validating else swept_cases(problems, self.solution_sets, make)
        made = made if validating else skip_missing.leave_out(self.context, made)
        return Dataset(str(path), digest, release, in_file_order(broken, made, problems))

    def _case(self, problems: dict[str, Problem], sample: Sample, number: int) -> Case:
        problem = problems.get(sample.task_id)
        record = problem.record if problem else {}
        # A broken task breaks its samples; so does an image name that is none.
        image, bad_image = named_image(record, "base_image")
        error = (problem.error if problem else None) or bad_image or sample.error
        # Build and test get one timeout each, for the solution and, after a failure, for the
        # problem's reference (kept per machine, a failing one checked again once per run); then
        # the sanitizer gate and each timed run, where they are on.
        gates = perf.budget(self.settings, record) + sanitizer.budget(self.settings, record)
        budget = 0.0 if error else 4 * timeout_of(record) + gates
        # Under xdist an item may queue for a build slot or the GPU behind every other worker.
        waits = (self.context.workers - 1) * budget
        return Case(
            id=f"{sample.task_id}[{number}]",
            task_id=sample.task_id,
            sample=number,
            record=record,
            solution=sample.solution,
            group=record.get("group"),
            timeout=budget + waits + BACKSTOP_SLACK,
            error=error,
            line=sample.line - 1,
            image=image,
        )

    # -- workspace ------------------------------------------------------------------------------

    def context_of(self, case: Case) -> dict[str, str]:
        """The context files a file solution's files replace (a patch is a diff already)."""
        written = {f.get("path") for f in (case.solution or {}).get("files") or ()}
        return {f["path"]: f["content"] for f in case.record.get("context_files") or () if f["path"] in written}

    def prepare(self, case: Case, workspace: Path) -> str | None:
        """Context files, then the solution's files, then the held-out tests, written last;
        no solution file may replace a context or test file."""
        record, label = case.record, f"task {case.task_id}"
        try:
            context = [(normalise(f["path"]), f["content"]) for f in record.get("context_files") or ()]
            tests = [(normalise(f["path"]), f["content"]) for f in record["test_files"]]
        except UnsafePath as exc:
            raise DatasetError(label, f"a problem file path is unsafe: {exc}") from None
        patch = patched.is_patch(case.solution)  # the context as the diff leaves it (see patched)
        rejected = patched.prepare(record, case.solution or {}, workspace) if patch else None
        for path, content in () if patch else context:
            write_file(workspace, path, content)
        files = [] if patch else (case.solution or {}).get("files", [])
        try:
            paths = guarded_paths([f["path"] for f in files], [p for p, _ in tests], [p for p, _ in context])
            for path, entry in zip(paths, files, strict=True):
                write_file(workspace, path, entry["content"])
        except UnsafePath as exc:
            rejected = f"solution file {exc}"
        try:
            for path, content in tests:
                write_file(workspace, path, content)
        except UnsafePath as exc:
            raise DatasetError(label, f"cannot write a held-out test: {exc}") from None
        return rejected

    # -- grading --------------------------------------------------------------------------------

    def grade(self, grading: Grading) -> Verdict:
        case, runner = grading.case, grading.runner
        perf.mark(grading)
        missing = missing_references(patched.files_of(case.record, case.solution), case.record.get("source_references"))
        if missing:
            return grading.verdict(Outcome.MISSING_API, "; ".join(missing))
        shadow = self._shadowing(grading)
        if shadow is not None:
            return grading.verdict(Outcome.INVALID_SOLUTION, f"solution file {shadow}")
        unmet = cutlass.unmet(grading, self.machine(runner), self._linkable(runner, case.record))
        if unmet is not None:
            return grading.verdict(Outcome.SKIPPED, unmet, excused=True)
        if self.settings[validation.VALIDATE]:  # the author's check of the reference (see validation)
            with perf.snapshots(grading) as built:
                timed = functools.partial(perf.measure, grading, self._perf_host(runner), built) if built else None
                own = functools.partial(self._build_and_test, grading, built)
                other = functools.partial(self._run_reference, case, runner)
                return validation.check(grading, validation.Runs(own, other, timed))
        with perf.snapshots(grading) as built:
            verdict = self._build_and_test(grading, built)
            if verdict.outcome.status is Status.FAILED or SKIP_KIND in verdict.figures:
                return self._against_the_reference(grading, verdict)
            if built is None or verdict.outcome is not Outcome.PASSED:
                return verdict
            # Performance adds figures; the outcome stays the tests' (see perf).
            figures = perf.measure(grading, self._perf_host(grading.runner), built)
        return dataclasses.replace(verdict, figures={**verdict.figures, **figures}, logs=dict(grading.logs))

    def _shadowing(self, grading: Grading) -> str | None:
        """Why a solution file would replace a system or toolkit header (see shadowed_header)."""
        record = grading.case.record
        problem = [normalise(f["path"]) for f in [*(record.get("context_files") or ()), *record["test_files"]]]
        paths = [normalise(path) for path in patched.files_of(record, grading.case.solution)]
        image = grading.runner.case_image
        if image not in self._system_headers:
            self._system_headers[image] = system_headers(self.context, grading.runner)
        return shadowed_header(paths, self._system_headers[image], problem)

    def _build_and_test(self, grading: Grading, built: Path | None = None) -> Verdict:
        """Build, check the link (link), then test where a GPU allows; the built
        workspace is kept at ``built`` (for timing: before the test could leave anything in it)."""
        record = grading.case.record
        timeout = timeout_of(record)
        wait = grading.case.timeout or timeout
        build = record.get("build_command")
        if build:
            with self._build_slots.acquire(wait):
                failed = grading.step(Step("build", build, Outcome.BUILD_ERROR, Outcome.BUILD_TIMEOUT), timeout=timeout)
            if failed is not None:
                return failed
        linked = link.check(grading)
        if linked is not None:
            return grading.verdict(Outcome.TAMPERED, linked)
        if built is not None:
            bench.copy_tree(grading.workspace, built)
        probe: GpuProbe = self.machine(grading.runner)["gpu"]
        gpus = probe.get("gpus") or []
        if not gpus and not self.settings[RUN_WITHOUT_GPU]:
            done = f"build ok in {grading.figures['build_seconds']:.1f} s" if build else "nothing to build"
            return grading.verdict(
                Outcome.SKIPPED, f"{NO_GPU}; {done} ({probe.get('error') or 'none found'})", excused=True
            )
        with self._gpu(gpus, wait) as gpu:
            result, proof = main_guard.run_test(grading, record["test_command"], timeout=timeout, gpu=gpu)
        judged = judge_test(result, bool(gpus), timeout, proof)
        if judged.outcome is Outcome.PASSED:  # only a pass pays for its canary
            host = canary.Host(self.prepare, self._build_slots, lambda wait: self._gpu(gpus, wait))
            python = record.get("type") == "cuda_python"
            tampered = (pycanary if python else canary).check(grading, host, timeout)
            if tampered is not None:
                return grading.verdict(Outcome.TAMPERED, tampered)
            gated = sanitizer.gate(grading, bool(gpus), lambda: self._gpu(gpus, wait))
            if gated is not None:
                return gated
        return grading.conclude(judged)

    def _against_the_reference(self, grading: Grading, verdict: Verdict) -> Verdict:
        """A failure or a skip, weighed against the problem's own reference on this machine.
        A failure is the model's, unless the reference fails here too: then this machine
        cannot grade the problem (skipped, excused). A skip is the machine's only when the
        reference skips the same way; otherwise the solution made the test skip (failed).
        Either way the verdict names the reference's outcome it rests on (see reference)."""
        case = grading.case
        checked = self._references.check(case, grading.runner, verdict)
        if SKIP_KIND in verdict.figures:
            judged = honour_skip(case.task_id, verdict, checked[1] if checked else None)
        elif checked is None:
            return verdict  # nothing to tell the machine's fault from the model's
        else:
            judged = machine_cannot_grade(case.task_id, checked[1]) or verdict
        return grading.conclude(rests_on(judged, *checked) if checked else judged)

    def _run_reference(
        self, case: Case, runner: Runner, baseline: dict[str, Any], prefix: str = "reference-"
    ) -> Verdict:
        reference = dataclasses.replace(case, solution=baseline)
        workspace = self.context.run_dir / "work" / f"{slug(reference.id)}-{prefix.rstrip('-')}"
        shutil.rmtree(workspace, ignore_errors=True)
        workspace.mkdir(parents=True)
        try:
            rejected = self.prepare(reference, workspace)
            if rejected is not None:
                return Verdict(Outcome.INVALID_SOLUTION, f"the reference's {rejected}")
            return self._build_and_test(Grading(self.context, reference, workspace, runner, prefix=prefix))
        finally:
            if not self.settings[KEEP_WORKSPACES]:
                shutil.rmtree(workspace, ignore_errors=True)

    @functools.cached_property
    def _references(self) -> References:  # keyed by the verdict store's identity of the run
        cache = ReferenceCache(Path(self.settings[CACHE_DIR]), self.context.run_dir.name)
        return References(cache, functools.partial(run_identity, self), self._run_reference)

    def holds(self, case: Case, verdict: Verdict, runner: Runner) -> bool:
        return self._references.holds(case, verdict, runner)

    def _perf_host(self, runner: Runner) -> perf.Host:
        gpus = self.machine(runner)["gpu"].get("gpus") or []
        return perf.Host(
            self.machine(runner),
            lambda wait: self._gpu(gpus, wait, exclusive=True),
            self._build_slots,
            self.prepare,
            lambda: self._profiler(runner),
        )

    def _profiler(self, runner: Runner) -> profilers.Profiler | str:
        """The profiler --codebench-profiler names, prepared once per process (or why not)."""
        name = self.settings[PROFILER]
        if name == "none":
            return "--codebench-profiler none"
        if name not in self._profilers:
            self._profilers[name] = profilers.prepare(self.context, runner, name)
        return self._profilers[name]

    # -- the machine ----------------------------------------------------------------------------

    def machine(self, runner: Runner) -> cuda.Machine:
        """The toolkit and the GPUs that ``runner``'s commands get, probed once per run for
        every process of it."""
        # A problem's own image (base_image) is another machine: its toolkit, its libraries.
        key = f"{MACHINE_KEY}-{slug(runner.case_image)}" if runner.case_image else MACHINE_KEY
        if key not in self._machines:
            self._machines[key] = cast(
                cuda.Machine, self.context.once(key, lambda: cuda.probe_machine(self.context, runner))
            )
        return self._machines[key]

    answer = staticmethod(patched.case_answer)  # what the verdict store keys: the files, never the metadata

    def key_facts(self, runner: Runner) -> dict[str, Any]:
        return dict(self.machine(runner))  # the toolkit and the GPUs (names, compute capability)

    @property
    def timed(self) -> bool:
        return bool(self.settings[PERF])

    def score_names(self) -> list[str]:
        timed = self.settings[PERF] and not self.settings[validation.VALIDATE]  # the check has no fast_p
        return [f"fast_{p:.1f}" for p in FAST_P] if timed else []  # as perf_scores names them

    def left_out(self) -> tuple[str, int]:
        return skip_missing.scope(self.context)

    def report_info(self) -> dict[str, Any]:
        info = {**(self.context.stored(MACHINE_KEY) or {}), **releases.report_info(self.context)}
        info.update(skip_missing.report_info(self.context))  # what --codebench-skip-missing left out
        libraries = {
            path.stem.removeprefix(f"{LIBRARY_KEY}-"): self.context.stored(path.stem)
            for path in sorted((self.context.run_dir / "once").glob(f"{LIBRARY_KEY}-*.json"))
        }
        return {**info, "linkable_libraries": libraries} if libraries else info

    def _linkable(self, runner: Runner, record: dict[str, Any]) -> set[str]:
        """Which of the libraries the build links the toolkit can link, each asked once per run."""
        if "error" in self.machine(runner)["toolkit"]:
            return set()
        workdir = self.context.run_dir / "probe"
        image = f"@{slug(runner.case_image)}" if runner.case_image else ""  # a problem's own image

        def links(name: str) -> bool:
            return bool(
                self.context.once(
                    f"{LIBRARY_KEY}-{name}{image}", lambda: name in cuda.linkable_libraries(runner, workdir, [name])
                )
            )

        return {name for name in linked_libraries(record.get("build_command") or "") if links(name)}

    @functools.cached_property
    def _build_slots(self) -> SlotPool:
        jobs = self.settings[BUILD_JOBS]
        return SlotPool(self.context.lock_dir, "build", [str(i) for i in range(jobs)])

    @contextlib.contextmanager
    def _gpu(self, gpus: list[Gpu], wait: float, *, exclusive: bool = False) -> Iterator[str | None]:
        """The GPU a phase may use (machine-wide, see gpu.scheduler), or None when there is none.
        Tests share one, at most --codebench-gpu-slots at once (any number with
        --codebench-gpu-share); an ``exclusive`` phase (timing, profiling) holds it alone."""
        if not gpus:
            yield None
            return
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else [str(gpu["index"]) for gpu in gpus]
        slots = None if self.settings[GPU_SHARE] else self.settings[GPU_SLOTS]
        scheduler = GpuScheduler(self.context.lock_dir, ids[: len(gpus)], slots)
        with scheduler.exclusive(wait) if exclusive else scheduler.shared(wait) as gpu:
            yield gpu

    # -- metrics --------------------------------------------------------------------------------

    def summarize(self, results: list[ItemResult]) -> Summary:
        return summarize(results, self.settings)

    def columns(self, summary: Summary) -> Row:
        """pass@k overall and per group; with ``--codebench-perf``, fast_p and the geomean at the
        first k; under ``--codebench-validate``, how many problems validated."""
        if self.settings[validation.VALIDATE]:
            return validation.columns(summary.metrics)
        cells = {**super().columns(summary), **perf_columns(summary.metrics.get("perf"))}
        return table_cells(cells, summary.metrics)

    def finish(self, results: list[ItemResult]) -> None:
        """The references built for timing go with the run (each item removed its own);
        --codebench-graded-solutions is written (on the controller: every item's result)."""
        if not self.settings[KEEP_WORKSPACES]:
            remove_tree(self.context.run_dir / bench.FOLDER)
        self.outputs += skip_missing.summary_line(self.context)
        graded = self.settings[GRADED_SOLUTIONS]
        if graded:
            written = write_graded_solutions(self.output_path(graded), results, self.run_cases(), self.solution_sets)
            self.outputs += [f"graded solutions: {path}" for path in written]
