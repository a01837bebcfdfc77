"""pytest entry point: options, the hooks that decide whether a codebench run is active, and
the xdist glue. Everything that only matters during a run lives in :mod:`.session`."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from . import fixtures, hooks
from .benchmark import RunContext, benchmark_classes, get_benchmark_class
from .errors import DatasetError, HarnessError
from .once import LOCK_DIR
from .options import CORE_OPTIONS, Option, Settings, register
from .runners import runner_classes
from .session import STATE_KEY, CodebenchSession

RUN_DIR_KEY = "codebench_run_dir"


def _all_options() -> list[tuple[str | None, tuple[Option, ...]]]:
    """Core options, then each installed benchmark's and runner's own, titled by their name."""
    extra = [*benchmark_classes().items(), *runner_classes().items()]
    return [(None, CORE_OPTIONS), *((name, tuple(cls.options)) for name, cls in extra)]


def pytest_addoption(parser: pytest.Parser) -> None:
    for title, options in _all_options():
        register(parser, options, title)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


@pytest.hookimpl(trylast=True)
def pytest_codebench_probe_gpus(config: pytest.Config) -> dict[str, Any]:
    """Ask the runner: the GPUs its commands would get (the driver here, or a container's)."""
    return config.stash[STATE_KEY].runner.probe_gpus()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "codebench(benchmark): an item graded by pytest-codebench")
    config.addinivalue_line(
        "markers", "codebench_repo(url, commit='HEAD'): the repository codebench_checkout clones for this test"
    )
    config.pluginmanager.register(fixtures, "codebench-fixtures")
    settings = Settings(config, [option for _, options in _all_options() for option in options])
    config.stash[fixtures.SETTINGS_KEY] = settings
    name = settings[""]
    if not name:
        return
    try:
        benchmark_class = get_benchmark_class(name)
    except HarnessError as exc:
        raise pytest.UsageError(f"--codebench: {exc}") from None
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(config), "codebench-xdist")
    context = RunContext(
        config=config,
        settings=settings,
        run_dir=_run_dir(config, settings),
        lock_dir=LOCK_DIR,
        # Only workers collect under xdist, so only they need the count.
        workers=getattr(config, "workerinput", {}).get("workercount", 1),
    )
    try:
        benchmark = benchmark_class(context)
        dataset_path = benchmark.dataset_path()
    except (DatasetError, HarnessError) as exc:
        raise pytest.UsageError(str(exc)) from None
    if not dataset_path.exists():
        raise pytest.UsageError(f"--codebench-dataset: {dataset_path} does not exist")
    # `pytest --codebench=NAME` with no paths grades the dataset rather than the tests of
    # the directory it was started in; explicit paths or node ids are kept as given.
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(dataset_path)]
    session = CodebenchSession(config, benchmark, dataset_path)
    config.stash[STATE_KEY] = session
    config.pluginmanager.register(session, "codebench-session")


def _run_dir(config: pytest.Config, settings: Settings) -> Path:
    """The controller names the run; xdist workers get its directory through workerinput."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and RUN_DIR_KEY in workerinput:
        return Path(workerinput[RUN_DIR_KEY])
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    base = settings["run-dir"]
    path = Path(base) / run_id if base else config.rootpath / ".codebench" / "runs" / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


class XdistHooks:
    """Registered only when pytest-xdist is installed, so its hooks are known to pytest."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_DIR_KEY] = str(self.config.stash[STATE_KEY].context.run_dir)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self.config.stash[STATE_KEY].crash_as_error(report)
