"""The state of an active codebench run, and the hooks that only apply while one is active."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .benchmark import Benchmark, RunContext, Summary
from .options import Settings
from .reporting import crash_result, item_result, junit_properties, outcome_lines, write_report
from .runners import Runner, get_runner_class

STATE_KEY = pytest.StashKey["CodebenchSession"]()


class CodebenchSession:
    """One per pytest process while ``--codebench`` is given; registered as a plugin."""

    def __init__(self, config: pytest.Config, benchmark: Benchmark, dataset_path: Path) -> None:
        self.config = config
        self.benchmark = benchmark
        self.context: RunContext = benchmark.context
        self.settings: Settings = benchmark.settings
        self.dataset_path = dataset_path
        self.results: list[dict[str, Any]] = []
        self.summary: Summary | None = None
        self.is_worker = hasattr(config, "workerinput")

    @functools.cached_property
    def runner(self) -> Runner:
        return get_runner_class(self.settings["runner"])(self.settings)

    # -- collection -------------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        from .items import DatasetFile

        if file_path == self.dataset_path:
            return DatasetFile.from_parent(parent, path=file_path, benchmark=self.benchmark)
        return None

    def pytest_report_header(self) -> list[str]:
        return [
            f"codebench: {self.benchmark.name} on {self.dataset_path}",
            f"codebench: runner {self.settings['runner']}, run directory {self.context.run_dir}",
        ]

    # -- results ------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        from .fixtures import VERDICT_KEY
        from .items import CodebenchItem

        report: pytest.TestReport = yield
        concluded = call.when == "call" or (call.when == "setup" and not report.passed)
        if isinstance(item, CodebenchItem) and concluded:
            result = item_result(item, report, item.stash.get(VERDICT_KEY, None))
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
        self.summary = self.benchmark.summarize(self.results)
        report_path = self.settings["report"]
        if report_path:
            write_report(Path(report_path), self, self.summary)
        fail_under = self.settings["fail-under"]
        if fail_under is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            score = self.summary.score
            session.exitstatus = (
                pytest.ExitCode.OK if score is not None and score >= fail_under else pytest.ExitCode.TESTS_FAILED
            )

    def pytest_unconfigure(self) -> None:
        if "runner" in self.__dict__:
            self.runner.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            return
        write = terminalreporter.write_line
        terminalreporter.section(f"codebench: {self.benchmark.name}")
        for line in [*self.summary.lines, *outcome_lines(self.results)]:
            write(line)
        fail_under = self.settings["fail-under"]
        if fail_under is not None:
            score = self.summary.score
            verdict = "met" if score is not None and score >= fail_under else "NOT met"
            shown = "n/a" if score is None else f"{score:.2f}%"
            write(f"fail-under {fail_under:g}%: score {shown}, {verdict}")
        write(f"logs: {self.context.run_dir / 'logs'}")
        if self.settings["report"]:
            write(f"report: {self.settings['report']}")

    # -- xdist ---------------------------------------------------------------------------------

    def crash_as_error(self, report: pytest.TestReport) -> None:
        """A worker that died took its item with it: harness trouble, reported as an error."""
        report.when = "setup"  # type: ignore[assignment]  # an error, in the terminal and JUnit alike
        report.codebench = crash_result(report.nodeid)  # type: ignore[attr-defined]
