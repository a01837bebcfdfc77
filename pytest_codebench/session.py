"""The state of an active codebench run, and the hooks that only apply while one is active."""

from __future__ import annotations

import functools
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .benchmark import Benchmark
from .context import RunContext
from .grading import EXPOSURE_KEY, VERDICT_KEY, Exposure
from .items import CodebenchItem, DatasetFile, place_skip
from .options import ALLOW_ERRORS, FAIL_UNDER, REPORT, RUNNER, SHARD, Settings, Threshold
from .reporting import (
    ItemResult,
    RunInfo,
    Summary,
    crash_result,
    examples,
    item_result,
    junit_properties,
    outcome_lines,
    outcome_of,
    write_report,
)
from .runners import Runner, get_runner_class
from .verdict import Outcome, Verdict

STATE_KEY = pytest.StashKey["CodebenchSession"]()


class CodebenchSession:
    """One per pytest process while ``--codebench`` is given; registered as a plugin."""

    def __init__(self, config: pytest.Config, benchmark: Benchmark, dataset_path: Path) -> None:
        self.config = config
        self.benchmark = benchmark
        self.context: RunContext = benchmark.context
        self.settings: Settings = benchmark.settings
        self.dataset_path = dataset_path
        self.results: list[ItemResult] = []
        self.summary: Summary | None = None
        self.is_worker = hasattr(config, "workerinput")

    @functools.cached_property
    def runner_class(self) -> type[Runner]:
        return get_runner_class(self.settings[RUNNER])

    @functools.cached_property
    def runner(self) -> Runner:
        return self.runner_class(self.context)

    # -- collection -------------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path == self.dataset_path:
            return DatasetFile.from_parent(parent, path=file_path, benchmark=self.benchmark)
        return None

    @functools.cached_property
    def runner_info(self) -> dict[str, Any]:
        """What the runner says its commands execute in (a container image, and why)."""
        return self.runner_class.describe(self.context)

    def pytest_report_header(self) -> list[str]:
        summary = self.runner_info.get("summary")
        shard = self.settings[SHARD]
        return [
            f"codebench: {self.benchmark.name} on {self.dataset_path}",
            f"codebench: runner {self.settings[RUNNER]}, run directory {self.context.run_dir}",
            *([f"codebench: {summary}"] if summary else []),
            *([f"codebench: shard {shard[0]} of {shard[1]} (its metrics cover its own tasks)"] if shard else []),
        ]

    # -- results ------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
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
            # Travels to the xdist controller with the report (builtins only).
            report.codebench = result  # type: ignore[attr-defined]
            item.user_properties.extend(junit_properties(self.benchmark.name, result))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = getattr(report, "codebench", None)
        if result is not None and not self.is_worker:
            self.results.append(result)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker:
            return
        self.runner_class.sweep(self.context)
        self.benchmark.finish(self.results)
        self.summary = self.benchmark.summarize(self.results)
        report_path = self.settings[REPORT]
        if report_path:
            write_report(Path(report_path), self.run_info(), self.results, self.summary)
        met = self.fail_under_met
        # Only a run that graded decides by score: interruptions and usage errors stand.
        if met is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if met else pytest.ExitCode.TESTS_FAILED

    def run_info(self) -> RunInfo:
        runner = {"runner": self.runner_info} if self.runner_info else {}
        return {
            "benchmark": self.benchmark.name,
            "dataset_path": str(self.dataset_path),
            "options": self.settings.as_dict(),
            "run_dir": str(self.context.run_dir),
            "environment": {**self.benchmark.report_info(), **runner},
        }

    @property
    def fail_under_met(self) -> bool | None:
        """Whether the score reaches ``--codebench-fail-under`` (None when not asked) and, unless
        ``--codebench-allow-errors``, no item ended in a harness error."""
        bar = self.settings[FAIL_UNDER]
        if bar is None or self.summary is None:
            return None
        return not self.fail_under_shortfalls(bar)

    def fail_under_shortfalls(self, bar: Threshold) -> list[str]:
        """Why the run does not meet ``--codebench-fail-under``: nothing when it does."""
        assert self.summary is not None
        errors = sorted(result["id"] for result in self.results if outcome_of(result) is Outcome.ERROR)
        return fail_under_shortfalls(bar, self.summary, errors, self.settings[ALLOW_ERRORS])

    def pytest_unconfigure(self) -> None:
        if "runner" in self.__dict__:
            self.runner.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None or not self.results:
            return  # no item of the benchmark ran (a user's own tests, a collection error)
        write = terminalreporter.write_line
        terminalreporter.section(f"codebench: {self.benchmark.name}")
        for line in [*self.summary.lines, *outcome_lines(self.results)]:
            write(line)
        bar = self.settings[FAIL_UNDER]
        if bar is not None:
            score = compared_score(bar, self.summary)
            shown = "n/a" if score is None else f"{score:.2f}%"
            shortfalls = self.fail_under_shortfalls(bar)
            write(f"fail-under {bar}%: {bar.name or 'score'} {shown}, {'NOT met' if shortfalls else 'met'}")
            if shortfalls:
                write("fail-under NOT met because " + "; and ".join(shortfalls))
        write(f"logs: {self.context.run_dir / 'logs'}")
        if self.settings[REPORT]:
            write(f"report: {self.settings[REPORT]}")

    # -- xdist ---------------------------------------------------------------------------------

    def crash_as_error(self, report: pytest.TestReport) -> None:
        """A worker that died took its item with it: harness trouble, reported as an error."""
        report.when = "setup"  # an error, in the terminal and JUnit alike
        report.codebench = crash_result(report.nodeid)  # type: ignore[attr-defined]


def compared_score(bar: Threshold, summary: Summary) -> float | None:
    """The score ``bar`` compares: the benchmark's, or the named one; None when not reported."""
    return summary.score if bar.name is None else summary.scores.get(bar.name)


def fail_under_shortfalls(bar: Threshold, summary: Summary, errors: list[str], allow_errors: bool) -> list[str]:
    """Why a run does not meet ``bar``: nothing when it does. ``errors``: the ids of items that
    ended in a harness error, which fail it unless ``allow_errors``. A named score the run did
    not report fails it, saying which names it has: a typo must not pass a gate silently."""
    why = []
    score = compared_score(bar, summary)
    if bar.name is not None and score is None:
        names = ", ".join(sorted(summary.scores)) or "none"
        why.append(f"this run reports no score named {bar.name} (its named scores: {names})")
    elif score is None:
        why.append("no score")
    elif score < bar.value:
        why.append(f"{bar.name or 'the score'} is under {bar.value:g}%")
    if errors and not allow_errors:
        why.append(
            f"{len(errors)} item(s) ended in a harness error ({examples(errors)}); "
            f"{ALLOW_ERRORS.cli} lets the score alone decide"
        )
    return why
