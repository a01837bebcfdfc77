"""pytest-codebench's witness of a graded suite: a standalone pytest plugin (it imports only
pytest and the standard library), copied outside the work tree, put on PYTHONPATH and loaded
with ``-p codebench_witness``, so that the outcome of each test comes from the harness's own
code, not from the JUnit XML of a suite whose conftest or plugins the patch may have changed.

It appends one JSON line per event to the file that ``CODEBENCH_WITNESS`` names (read once,
then removed from the environment, so a pytest the tests start does not write there):

- ``{"id", "when", "outcome"}`` for each test phase and collection error. Its report is taken
  twice: as pytest's own runner made it (the innermost wrapper of ``pytest_runtest_makereport``)
  and as logged (first in ``pytest_runtest_logreport``); a failure that a wrapper turned into
  anything but an expected failure stays a failure;
- ``{"deselected": [ids]}``;
- ``{"hooks": ["file:hook", ...]}``: the hook functions defined in files under the rootdir,
  after collection and at the end;
- ``{"finished": exit status}`` at the end of the session.
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any

import pytest

_ENV = "CODEBENCH_WITNESS"
_path = os.environ.pop(_ENV, "")
_out: Any = None
_raw: dict[tuple[str, str], str] = {}


def _write(record: dict[str, Any]) -> None:
    if _out is not None:
        _out.write(json.dumps(record) + "\n")
        _out.flush()


def _tree_hooks(config: Any) -> list[str]:
    """Hook functions whose code lies under the rootdir, however they were registered
    (conftest, ``pytest_plugins``, entry point, ``-p``, a star import)."""
    root = str(config.rootpath) + os.sep
    found = set()
    for name, caller in vars(config.pluginmanager.hook).items():
        if not hasattr(caller, "get_hookimpls"):
            continue
        for impl in caller.get_hookimpls():
            try:
                function = inspect.unwrap(impl.function)
                file = function.__code__.co_filename
            except (AttributeError, ValueError):
                file = str(getattr(impl.plugin, "__file__", "") or "")
            if os.path.abspath(file).startswith(root):
                found.add(f"{os.path.relpath(os.path.abspath(file), root)}:{name}")
    return sorted(found)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: Any) -> None:
    global _out
    if hasattr(config, "workerinput") or not _path or _out is not None:
        return  # an xdist worker: the controller logs its reports
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    _out = os.fdopen(os.open(_path, flags, 0o644), "w", encoding="utf-8")


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report is not None:
        _raw[(report.nodeid, report.when)] = report.outcome


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: Any) -> None:
    outcome = report.outcome
    raw = _raw.pop((report.nodeid, report.when), None)
    expected = hasattr(report, "wasxfail")
    if raw == "failed" and outcome != "failed" and not expected:
        outcome = "failed"  # pytest made a failure; something between made it look otherwise
    elif expected:
        outcome = "xfailed" if outcome == "skipped" else "xpassed"
    _write({"id": report.nodeid, "when": report.when, "outcome": outcome})


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _write({"id": report.nodeid, "when": "collect", "outcome": "failed"})


@pytest.hookimpl(tryfirst=True)
def pytest_deselected(items: Any) -> None:
    _write({"deselected": [item.nodeid for item in items]})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: Any) -> None:
    _write({"hooks": _tree_hooks(session.config)})


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _write({"hooks": _tree_hooks(session.config)})
    _write({"finished": int(exitstatus)})
