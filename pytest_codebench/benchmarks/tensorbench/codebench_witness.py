"""pytest-codebench's witness of a graded suite: a standalone pytest plugin (it imports only
pytest and the standard library). The harness writes a copy per command under a random module
name, with that command's settings (:data:`_SETTINGS`), in a folder outside the work tree, puts
the folder on PYTHONPATH and loads it with ``-p NAME``: a file of the tree cannot take its
place (``python -m pytest`` puts the tree first on sys.path), and the outcome of each test
comes from the harness's own code, not from the JUnit XML of a suite whose conftest or plugins
the patch may have changed.

It appends one JSON line per event to the file that ``CODEBENCH_WITNESS`` names (read once,
then removed from the environment, so a pytest the tests start does not write there):

- ``{"witness": nonce, "module": name}`` first: which copy wrote the record;
- ``{"id", "when", "outcome"}`` for each test phase and collection error. Its report is taken
  twice: as pytest's own runner made it (the innermost wrapper of ``pytest_runtest_makereport``)
  and as logged (a wrapper of ``pytest_runtest_logreport``); a failure that a wrapper turned into
  anything but an expected failure stays a failure;
- ``{"deselected": [ids]}``;
- ``{"hooks": ["file:hook", ...]}``: the hook functions defined in files under the rootdir,
  after collection and at the end;
- ``{"finished": exit status}`` at the end of the session.

Canary tests: the harness wrote a test module of its own into the tree (``canaries``: its path
under the rootdir, the functions that must fail and those that must pass). It is added to what
the command collects, whatever its arguments; a canary that the command's ``-k``/``-m`` or a
hook left out is put back, at a place among the tests drawn from ``seed``; a canary's expected
failure neither counts in the exit status nor stops a ``-x`` run. Nor does a failure of the
tests ``forgive`` names (the patch's own, which the canary run makes fail; in both runs alike).
"""

from __future__ import annotations

import inspect
import json
import os
import random
from typing import Any

import pytest

_SETTINGS: dict[str, Any] = {}  # replaced by the harness's settings for the command
_ENV = "CODEBENCH_WITNESS"
_path = os.environ.pop(_ENV, "")
_out: Any = None
_raw: dict[tuple[str, str], str] = {}
_session: Any = None


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


def _canary_file(config: Any) -> str | None:
    canaries = _SETTINGS.get("canaries")
    return str(config.rootpath / canaries["path"]) if canaries else None


def _must_fail(nodeid: str) -> bool:
    canaries = _SETTINGS.get("canaries") or {"path": "", "fail": []}
    return nodeid in {f"{canaries['path']}::{name}" for name in canaries["fail"]}


def _forgiven(nodeid: str) -> bool:
    return nodeid.partition("[")[0] in set(_SETTINGS.get("forgive") or ())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: Any) -> None:
    global _out
    if hasattr(config, "workerinput") or not _path or _out is not None:
        return  # an xdist worker: the controller logs its reports
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    _out = os.fdopen(os.open(_path, flags, 0o644), "w", encoding="utf-8")
    _write({"witness": _SETTINGS.get("nonce"), "module": __name__})


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: Any) -> None:
    global _session
    _session = session


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: Any) -> None:
    file = _canary_file(session.config)
    if file and file not in session.config.args:
        session.config.args.append(file)  # pytest collects a path given twice once


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(config: Any, items: list[Any]) -> Any:
    """Every canary back among the tests after the other hooks (``-k``, ``-m``, the tree's),
    each at a place drawn from the command's seed: the same in every xdist worker, which must
    all collect the same list."""
    file = _canary_file(config)
    canaries = [item for item in items if file and str(item.path) == file]
    yield
    rest = [item for item in items if item not in canaries]
    draw = random.Random(_SETTINGS.get("seed", 0))
    for canary in canaries:
        rest.insert(draw.randint(0, len(rest)), canary)
    items[:] = rest


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report is not None:
        _raw[(report.nodeid, report.when)] = report.outcome


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_logreport(report: Any) -> Any:
    outcome = report.outcome
    raw = _raw.pop((report.nodeid, report.when), None)
    expected = hasattr(report, "wasxfail")
    if raw == "failed" and outcome != "failed" and not expected:
        outcome = "failed"  # pytest made a failure; something between made it look otherwise
    elif expected:
        outcome = "xfailed" if outcome == "skipped" else "xpassed"
    _write({"id": report.nodeid, "when": report.when, "outcome": outcome})
    canary = _session is not None and _must_fail(report.nodeid)
    forgiven = canary or (_session is not None and _forgiven(report.nodeid))
    counted = _session.testsfailed if canary else 0
    maxfail = _session.config.option.maxfail if forgiven else 0
    if forgiven:
        # A canary's expected failure is not the suite's: it neither stops a -x run (pytest
        # checks maxfail as it counts) nor sets the exit status.
        _session.config.option.maxfail = 0
        xdist = _session.config.pluginmanager.getplugin("dsession")
        if report.failed and isinstance(getattr(xdist, "countfailures", None), int):
            xdist.countfailures -= 1  # xdist's controller counts it once this hook returns
    try:
        yield
    finally:
        if forgiven:
            _session.config.option.maxfail = maxfail
        if canary:
            _session.testsfailed = min(_session.testsfailed, counted)


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
