"""The state of an active codebench run, and the hooks that only apply while one is active."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .benchmark import Benchmark
from .case_images import ignored_line
from .context import HOSTS_KEY, PRUNED_KEY, RunContext
from .grading import EXPOSURE_KEY, VERDICT_KEY, Exposure
from .items import DATASET_ITEMS, CodebenchItem, DatasetFile, chosen_by, dataset_nodeid, place_skip
from .names import escape_controls, escape_surrogates
from .options import ALLOW_ERRORS, FAIL_UNDER, HTML, KEEP_LOGS, MARKDOWN, REPORT, RUNNER, Settings
from .reports import markdown
from .reports.comparison import ModelSummary, model_summaries, shown, table, text_table
from .reports.gate import CANNOT_JUDGE, Gate, gate_lines
from .reports.harness import harness_version
from .reports.html import write_html
from .reports.junit_suite import add_to_junit
from .reports.model_tests import ModelComparison, comparison_lines, comparison_markdown, model_comparisons
from .reports.outputs import Writer, failure_line, write_outputs
from .reports.reporting import (
    Invocation,
    ItemResult,
    RunInfo,
    Summary,
    counts,
    crash_result,
    item_result,
    junit_properties,
    outcome_lines,
    outcome_of,
    report_json,
    timestamp,
    write_report,
)
from .reports.scope import Scope, scope_of, selection_text
from .runners import Runner, get_runner_class
from .sweeps.element import plan_part, run_part
from .sweeps.reuse import ORIGIN_KEY, Reuse, reuse_lines, run_identity
from .sweeps.solution_sets import display_name
from .verdict import Outcome, Verdict

STATE_KEY = pytest.StashKey["CodebenchSession"]()
#: When an item's setup began (``time.time()``), for its ``started`` and ``wall_seconds``.
STARTED_KEY = pytest.StashKey[float]()


class CodebenchSession:
    """One per pytest process while ``--codebench`` is given; registered as a plugin."""

    def __init__(self, config: pytest.Config, benchmark: Benchmark, dataset_path: Path) -> None:
        self.config = config
        self.benchmark = benchmark
        self.context: RunContext = benchmark.context
        self.settings: Settings = benchmark.settings
        self.dataset_path = dataset_path
        #: The part of the run's tasks this process grades (a shard, a plan's part), or None.
        self.part = run_part(self.settings)
        self.results: list[ItemResult] = []
        self.started = time.time()  # the run's start, set again when the session starts
        self.summary: Summary | None = None
        #: Each model's summary, by name (none where the run grades one unnamed set).
        self.models: dict[str, ModelSummary] = {}
        self.comparisons: list[ModelComparison] = []
        #: The benchmark's items this run was to grade (after deselection), by node id: those
        #: without a result when it ends were not reached (Ctrl-C, -x, a crash).
        self.expected: list[str] = []
        #: What the figures are over (a selection, an interruption), set as the session finishes.
        self.scope = Scope()
        self.is_worker = hasattr(config, "workerinput")
        #: The outputs that could not be written at the end, each named with its error.
        self.write_failures: list[str] = []
        #: Verdicts from the store and from duplicates (its run identity asked on first use).
        self.reuse = Reuse(
            benchmark,
            lambda runner: run_identity(benchmark, runner or self.runner, self.runner_class.options),
            lambda: self.runner,
        )

    @functools.cached_property
    def runner_class(self) -> type[Runner]:
        return get_runner_class(self.settings[RUNNER])

    @functools.cached_property
    def runner(self) -> Runner:
        return self.runner_class(self.context)

    # -- collection -------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self) -> None:
        """A store that cannot serve is a usage error before anything is graded (once, on the
        controller; xdist's workers start after it)."""
        self.started = time.time()
        if self.is_worker or self.config.option.collectonly:
            return
        why = self.reuse.usage_error()
        if why is not None:
            raise pytest.UsageError(escape_controls(why))

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # Items are the dataset's, in its order (what --collect-only, -v and JUnit show); xdist's
        # workers, whose order only schedules, run duplicate samples after the firsts: graded
        # once, they rarely wait for their first there.
        items[:] = self.reuse.plan(items, move=self.is_worker)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._expect([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._expect(ids)  # the controller collects nothing itself: each worker's ids are the run's

    def _expect(self, nodeids: list[str]) -> None:
        prefix = dataset_nodeid(self.benchmark.name, self.dataset_path) + "::"
        self.expected = self.expected or [nodeid for nodeid in nodeids if nodeid.startswith(prefix)]

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path == self.dataset_path:
            return DatasetFile.from_parent(parent, path=file_path, benchmark=self.benchmark, part=self.part)
        return None

    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """A dataset that is a folder (a tree of problem folders) is collected as one dataset."""
        if path == self.dataset_path:
            return DatasetFile.from_parent(parent, path=path, benchmark=self.benchmark, part=self.part)
        return None

    @functools.cached_property
    def runner_info(self) -> dict[str, Any]:
        """What the runner says its commands execute in (a container image, and why)."""
        return self.runner_class.describe(self.context)

    def pytest_report_header(self) -> list[str]:
        summary = self.runner_info.get("summary")
        return [
            f"codebench: {self.benchmark.name} on {self.dataset_path}",
            f"codebench: runner {self.settings[RUNNER]}, run directory {self.context.run_dir}",
            *([f"codebench: {summary}"] if summary else []),
            *([f"codebench: {self.part.title} (its metrics cover its own tasks)"] if self.part else []),
            *self._pruned(),
            *([] if self.is_worker else self.benchmark.header_lines(self.runner_class, lambda: self.runner)),
        ]

    def _pruned(self) -> list[str]:
        """What this run removed of the old runs' folders, so that a missing log is explained."""
        if PRUNED_KEY not in self.config.stash:
            return []
        count, runs = self.config.stash[PRUNED_KEY]
        days = f"{self.settings[KEEP_LOGS]:g}"
        return [f"codebench: removed {count} run folder(s) older than {days} days from {runs} (--codebench-keep-logs)"]

    # -- results ------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if isinstance(item, CodebenchItem) and call.when == "setup":
            item.stash[STARTED_KEY] = call.start  # grading happens in setup: the item's start
        if isinstance(item, CodebenchItem) and call.when == "call":
            place_skip(item, report)
        concluded = call.when == "call" or (call.when == "setup" and not report.passed)
        if isinstance(item, CodebenchItem) and concluded:
            # Without a verdict the item never got graded (a bad record, harness trouble, a
            # pytest-timeout backstop): its report says why.
            verdict = item.stash.get(VERDICT_KEY, None) or Verdict(Outcome.ERROR, report.longreprtext.strip())
            exposure = item.stash.get(EXPOSURE_KEY, None) or Exposure()
            excused = verdict.leaves_score(exposure.model_acted)
            result = item_result(item.nodeid, item.case, item.dataset, verdict, excused)
            if item.case.solution is not None:
                result["context"] = self.benchmark.context_of(item.case)
            origin = item.stash.get(ORIGIN_KEY, None)
            if origin is not None:
                result["cached"], result["same_as"] = origin.cached, origin.same_as
            started = item.stash.get(STARTED_KEY, call.start)
            result["started"], result["wall_seconds"] = timestamp(started), round(call.stop - started, 3)
            # Travels to the xdist controller with the report (builtins only, and no lone
            # surrogate: a task id or a model's name that was not UTF-8 is kept escaped, in
            # every run alike, serial or not).
            result = escape_surrogates(result)
            report.codebench = result  # type: ignore[attr-defined]
            item.user_properties.extend(junit_properties(self.benchmark.name, result))
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        """A report as an xdist worker sends it: a lone surrogate anywhere in it (a reason that
        quotes a name that was not UTF-8) as its escape, since execnet sends UTF-8 only and one
        such string would end the run in an internal error."""
        data = yield
        return escape_surrogates(data)

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """The word ``-v`` (and ``-rf``) shows for a graded item: a failure names its category
        (``FAILED build_error``), and a verdict the store served says so (``PASSED (stored)``).
        Skips keep pytest's word: ``-rs`` shows the first skip's word for every line."""
        result: ItemResult | None = getattr(report, "codebench", None)
        if result is None or report.when != "call" or report.skipped:
            return None
        stored = " (stored)" if result["cached"] else ""
        if report.failed:
            return "failed", "F", f"FAILED {result['outcome']}{stored}"
        return ("passed", ".", f"PASSED{stored}") if stored else None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = getattr(report, "codebench", None)
        if result is not None and not self.is_worker:
            self.results.append(result)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker:
            return
        self.runner_class.sweep(self.context)
        # In one order whatever order xdist finished them in: metrics summed over the items come
        # out the same to the last digit in every run, and in a merge of its shards.
        self.results.sort(key=lambda result: result["nodeid"])
        self.scope = self._scope()
        self.summary = self.benchmark.score_record(self.results)
        self.models = model_summaries(self.benchmark.score_record, self.results)
        self.comparisons = model_comparisons(self.results, self.benchmark.compared_problems)
        self.write_failures = write_outputs(self._writers(self.summary))
        if self.write_failures and self.config.pluginmanager.get_plugin("terminalreporter") is None:
            sys.stderr.write("".join(f"codebench: {line}\n" for line in self.write_failures))
        gate = self.fail_under()
        # Only a run that graded decides by score: interruptions and usage errors stand.
        if gate is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            if gate.missed:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            else:
                session.exitstatus = CANNOT_JUDGE if gate.unjudged else pytest.ExitCode.OK

    def _writers(self, summary: Summary) -> list[Writer]:
        """Every output of the run, the JSON report first, each on its own: one that fails
        (a disk full, a path that cannot be written) leaves the others written."""
        report_path, html_dir, markdown_path = self.settings[REPORT], self.settings[HTML], self.settings[MARKDOWN]
        writers = []
        if report_path:
            writers.append(
                Writer(f"the JSON report ({REPORT.cli})", lambda: write_report(Path(report_path), self._report))
            )
        junit = Writer("JUnit's suite properties", lambda: add_to_junit(self.config, summary, self.models, self.scope))
        writers.append(junit)
        if html_dir:  # the page is the JSON report's, drawn: from the same dict
            writers.append(Writer(f"the HTML report ({HTML.cli})", lambda: write_html(self._report, Path(html_dir))))
        if markdown_path and self.results:
            text = functools.cache(lambda: self._markdown(summary))
            writers.append(
                Writer(f"the markdown report ({MARKDOWN.cli})", lambda: markdown.write(Path(markdown_path), text()))
            )
            summary_file = f"GitHub's job summary (${markdown.STEP_SUMMARY})"
            writers.append(Writer(summary_file, lambda: markdown.append_to_step_summary(text())))
        writers.append(Writer(f"{self.benchmark.name}'s own outputs", lambda: self.benchmark.finish(self.results)))
        return writers

    @functools.cached_property
    def _report(self) -> dict[str, Any]:
        """The JSON report, which the page draws too."""
        assert self.summary is not None
        models = {name: model.to_json() for name, model in self.models.items()}
        return {
            **report_json(self.run_info(), self.results, self.summary, models),
            "comparisons": self.comparisons,
            **self.scope.to_json(),
            **plan_part(self.part),
        }

    def _markdown(self, summary: Summary) -> str:
        """The markdown report, for its file and GitHub's job summary."""
        first = next((result for result in self.results if result["dataset_sha256"]), self.results[0])
        dataset = markdown.dataset_label(str(self.dataset_path), first["dataset_sha256"], first["dataset_release"])
        whole = ModelSummary(summary, counts(self.results))
        named = shown(self.models, whole, self.run_info()["model"])
        text = markdown.report(self.benchmark, dataset, whole, named, self.scope.lines())
        return text + comparison_markdown(self.comparisons)

    def _scope(self) -> Scope:
        dataset_items = self.context.stored(DATASET_ITEMS)
        how, _ = self.benchmark.left_out()
        by = chosen_by(self.config, self.part, self.dataset_path) + ([how] if how else [])
        return scope_of(self.expected, {result["nodeid"] for result in self.results}, dataset_items, by)

    def run_info(self) -> RunInfo:
        benchmark = self.benchmark
        runner = {"runner": self.runner_info} if self.runner_info else {}
        # Workers on other hosts probed their own machine: what each found, and its run folder there.
        hosts = {"hosts": self.config.stash[HOSTS_KEY]} if HOSTS_KEY in self.config.stash else {}
        return {
            "benchmark": self.benchmark.name,
            "dataset_path": str(self.dataset_path),
            "options": self.settings.as_dict(),
            "run_dir": str(self.context.run_dir),
            "environment": {**self.benchmark.report_info(), **runner, **hosts},
            "harness_version": harness_version(),
            "invocation": self._invocation(),
            "model": None if self.models else display_name(benchmark.solution_sets, benchmark.solution_suffixes),
            "started": timestamp(self.started),
            "wall_seconds": round(time.time() - self.started, 3),
        }

    def _invocation(self) -> Invocation:
        given = [str(arg) for arg in self.config.invocation_params.args]
        positional = {str(arg) for arg in getattr(self.config.option, "file_or_dir", None) or []}
        return {
            "dir": str(self.config.invocation_params.dir),
            "args": given,
            "options": [arg for arg in given if arg not in positional],
        }

    def fail_under(self) -> Gate | None:
        """``--codebench-fail-under``'s account (:func:`.gate.gate_lines`: in a sweep each model
        on its own score; unless ``--codebench-allow-errors``, a harness error misses it); None
        when not asked."""
        if not self.settings[FAIL_UNDER] or self.summary is None:
            return None
        failed = [result for result in self.results if outcome_of(result) is Outcome.ERROR]
        errors = {
            "a harness error": sorted(result["id"] for result in failed if not result.get("dataset_defect")),
            "a dataset defect": sorted(result["id"] for result in failed if result.get("dataset_defect")),
        }
        gate = gate_lines(self.settings[FAIL_UNDER], self.summary, self.models, errors, self.settings[ALLOW_ERRORS])
        gate.missed.extend(self.scope.gate_missed())
        if self.scope.selection:
            gate.lines.append(f"fail-under judged over a selection: {selection_text(self.scope.selection)}")
        return gate

    def pytest_unconfigure(self) -> None:
        self.reuse.close()
        if "runner" in self.__dict__:
            self.runner.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The run's account, then each output that could not be written (this one included).
        Its lines quote names and reasons made of the model's text: each is shown escape_controls,
        so that no escape sequence in them acts on the terminal."""
        try:
            self._terminal_summary(terminalreporter)
        except Exception as exc:  # noqa: BLE001 - said below, as the other outputs' failures are
            self.write_failures.append(failure_line("the terminal summary", exc))
        for line in self.write_failures:
            terminalreporter.write_line(escape_controls(f"codebench: {line}"), red=True)

    def _terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None or not self.results:
            return  # no item of the benchmark ran (a user's own tests, a collection error)

        def write(line: str) -> None:
            terminalreporter.write_line(escape_controls(line))

        terminalreporter.section(f"codebench: {self.benchmark.name}")
        for line in [*self.scope.lines(), *self.summary.lines, *outcome_lines(self.results)]:
            write(line)
        if self.models:
            write("per model:")
            for line in text_table(table(self.benchmark.columns, ModelSummary(self.summary, {}), self.models)):
                write("  " + line)
            for line in comparison_lines(self.comparisons):
                write(line)
        gate = self.fail_under()
        if gate is not None:
            for line in gate.lines:
                write(line)
            if gate.missed:
                write("fail-under NOT met because " + "; and ".join(gate.missed))
            elif gate.unjudged:
                write(f"fail-under cannot judge here (exit status {CANNOT_JUDGE}): " + "; and ".join(gate.unjudged))
        for line in reuse_lines(self.results, self.reuse):
            write(line)
        ignored = ignored_line(self.context)
        if ignored:
            write(ignored)
        write(f"logs: {self.context.run_dir / 'logs'}")
        for line in self.benchmark.outputs:
            write(line)
        if self.settings[REPORT]:
            write(f"report: {self.settings[REPORT]}")
        if self.settings[MARKDOWN]:
            write(f"markdown: {self.settings[MARKDOWN]}")
        html_dir = self.settings[HTML]
        if html_dir:
            write(f"html: {Path(html_dir) / 'index.html'}")

    # -- xdist ---------------------------------------------------------------------------------

    def crash_as_error(self, report: pytest.TestReport) -> None:
        """A worker that died took its item with it: harness trouble, reported as an error."""
        report.when = "setup"  # an error, in the terminal and JUnit alike
        report.codebench = crash_result(report.nodeid)  # type: ignore[attr-defined]
