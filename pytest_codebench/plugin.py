"""pytest entry point: options, the hooks that decide whether a codebench run is active, and
the xdist glue. Everything that only matters during a run lives in :mod:`.session`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from . import fixtures, hooks
from .benchmark import benchmark_classes, get_benchmark_class
from .context import HOSTS_KEY, SETTINGS_KEY, WORKER_RUN_DIR_KEY, HostRun, RunContext
from .errors import DatasetError, HarnessError
from .items import dataset_args, dataset_nodeid
from .names import escape_controls
from .options import BENCHMARK, CORE_OPTIONS, FAIL_UNDER, RUNNER, SOLUTIONS, Choice, Option, Settings
from .reports.gate import validate_fail_under
from .runners import GpuProbe, runner_classes
from .session import STATE_KEY, CodebenchSession
from .startup.registration import register
from .startup.rooting import reroot


def _all_options() -> list[tuple[str | None, tuple[Option[Any], ...]]]:
    """Core options, then each installed benchmark's and runner's own, titled by their name;
    an option several of them share (the workspace quota) comes once, titled by all of them.
    ``--codebench`` and ``--codebench-runner`` take the names of those installed."""
    benchmark_classes_, runner_classes_ = benchmark_classes(), runner_classes()
    installed = {
        BENCHMARK.name: Choice(tuple(benchmark_classes_), "benchmark"),
        RUNNER.name: Choice(tuple(runner_classes_), "runner"),
    }
    core = tuple(
        dataclasses.replace(option, parse=installed[option.name]) if option.name in installed else option
        for option in CORE_OPTIONS
    )
    owned = [(name, tuple(cls.options)) for name, cls in benchmark_classes_.items()]
    owned += [(name, tuple(cls.options)) for name, cls in runner_classes_.items()]
    owners: dict[str, list[str]] = {}
    for name, options in owned:
        for option in options:
            owners.setdefault(option.name, []).append(name)
    groups: dict[str, dict[str, Option[Any]]] = {}
    for _, options in owned:
        for option in options:
            groups.setdefault(", ".join(owners[option.name]), {}).setdefault(option.name, option)
    return [(None, core), *((title, tuple(options.values())) for title, options in groups.items())]


def pytest_addoption(parser: pytest.Parser) -> None:
    for title, options in _all_options():
        register(parser, options, title)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """The rootdir and ini file follow where pytest runs, not the dataset (see :mod:`.rooting`)."""
    reroot(early_config, args)


@pytest.hookimpl(trylast=True)
def pytest_codebench_probe_gpus(config: pytest.Config) -> GpuProbe:
    """Ask the runner: the GPUs its commands would get (the driver here, or a container's)."""
    return config.stash[STATE_KEY].runner.probe_gpus()


def pytest_configure(config: pytest.Config) -> None:
    """Every setting read and checked, the benchmark's session registered. A usage error quotes
    what the user named (a file of a model's answers, a path): shown escape_controls, so that no
    escape sequence in a file's name acts on the terminal."""
    try:
        _configure(config)
    except pytest.UsageError as exc:
        raise pytest.UsageError(escape_controls(str(exc), keep="\n")) from None


def _configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "codebench(benchmark): an item graded by pytest-codebench")
    config.addinivalue_line(
        "markers", "codebench_repo(url, commit='HEAD'): the repository codebench_checkout clones for this test"
    )
    config.pluginmanager.register(fixtures, "codebench-fixtures")
    # Every setting is parsed and checked here, before anything is collected or graded.
    settings = Settings.read(config, [option for _, options in _all_options() for option in options])
    config.stash[SETTINGS_KEY] = settings
    name = settings[BENCHMARK]
    if not name:
        return
    benchmark_class = get_benchmark_class(name)  # one of those installed: Settings.read checked it
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(config), "codebench-xdist")
    context = RunContext.create(config, settings)
    try:
        benchmark = benchmark_class(context)
        dataset_path = benchmark.dataset_path()
    except (DatasetError, HarnessError) as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        benchmark.solution_sets  # noqa: B018 - found (and two sets of one name refused) before collecting
    except ValueError as exc:
        raise pytest.UsageError(f"{SOLUTIONS.cli}: {exc}") from None
    models = [each.name for each in benchmark.solution_sets if each.name is not None]
    validate_fail_under(settings[FAIL_UNDER], models, benchmark.score_names(), settings.where(FAIL_UNDER))
    if not dataset_path.exists():
        raise pytest.UsageError(f"--codebench-dataset: {dataset_path} does not exist")
    # pytest would collect nothing from a folder, silently, unless the benchmark reads it
    if dataset_path.is_dir() and not benchmark.reads_folder(dataset_path):
        raise pytest.UsageError(
            f"--codebench-dataset: {dataset_path} is a directory; give the {name} dataset file in it"
        )
    # A missing file of answers is the same mistake as a missing dataset: a usage error.
    for each in benchmark.solution_sets:
        if each.path and each.path not in benchmark.solution_keywords and not Path(each.path).exists():
            raise pytest.UsageError(f"{SOLUTIONS.cli}: {each.path}: no such file")
    # `pytest --codebench=NAME` with no paths grades the dataset rather than the tests of
    # the directory it was started in; explicit paths or node ids are kept as given.
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(dataset_path)]
    else:  # a node id as printed names the dataset by benchmark and name, not by path
        config.args = dataset_args(config.args, dataset_nodeid(benchmark.name, dataset_path), dataset_path)
    session = CodebenchSession(config, benchmark, dataset_path)
    config.stash[STATE_KEY] = session
    config.pluginmanager.register(session, "codebench-session")


class XdistHooks:
    """Registered only when pytest-xdist is installed, so its hooks are known to pytest."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput.update(self.config.stash[STATE_KEY].context.handoff())

    def pytest_sessionfinish(self) -> None:
        """On a worker with a run folder of its own (on another host): what the benchmark probed
        there, for the controller's report."""
        hosted: HostRun | None = getattr(self.config, "workeroutput", {}).get(WORKER_RUN_DIR_KEY)
        state = self.config.stash.get(STATE_KEY, None)
        if hosted is not None and state is not None:
            # Builtins only cross over execnet.
            hosted["environment"] = json.loads(json.dumps(state.benchmark.report_info(), default=str))

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        hosted: HostRun | None = getattr(node, "workeroutput", {}).get(WORKER_RUN_DIR_KEY)
        if hosted:
            self.config.stash.setdefault(HOSTS_KEY, {})[hosted["host"]] = hosted

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """After the run's own ``logs:`` line: where workers on other hosts keep theirs (the
        log paths of the items they graded are paths on that host)."""
        if self.config.stash[STATE_KEY].results:
            for host, hosted in self.config.stash.get(HOSTS_KEY, {}).items():
                terminalreporter.write_line(f"logs on host {host}: {Path(hosted['run_dir']) / 'logs'}")

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """The default distribution, with a task's items on one worker where one of them grades
        them all (:attr:`~.benchmark.Benchmark.grades_tasks_whole`); any other ``--dist`` as asked."""
        state = config.stash.get(STATE_KEY, None)
        if state is None or not state.benchmark.grades_tasks_whole or config.getvalue("dist") != "load":
            return None
        from .scheduling import TaskScheduling  # noqa: PLC0415 - needs xdist, which this class is registered with

        return TaskScheduling(config, log)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self.config.stash[STATE_KEY].crash_as_error(report)
