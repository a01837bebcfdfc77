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
- ``{"tripwire": what}`` where pytest's machinery is not what its files on disk say: an item
  that holds a ``runtest`` of its own, one of pytest's runner functions (``Function.runtest``,
  ``call_and_report``...) or an implementation of a hook that runs or reports a test whose code
  is not code compiled from the file it names (with pytest's assertion rewriting or without);
- ``{"finished": exit status}`` at the end of the session.

The tripwires are claims made inside the suite's process, where the patch's code runs too: it
can hide from them, never make an honest run trip one. The proof from outside is the canary
run (``twin``); they name what a careless patch did.

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
import sys
from typing import Any

import pytest

_SETTINGS: dict[str, Any] = {}  # replaced by the harness's settings for the command
_ENV = "CODEBENCH_WITNESS"
_path = os.environ.pop(_ENV, "")
_out: Any = None
_raw: dict[tuple[str, str], str] = {}
_session: Any = None
_forgive: set[str] | None = None
# pytest's functions that run a test and make its report, (module, attribute path): each must be
# code of pytest's own file (where the installed pytest has it; other versions lack some).
_RUNNER = (
    ("_pytest.python", "Function.runtest"),
    ("_pytest.python", "pytest_pyfunc_call"),
    ("_pytest.runner", "runtestprotocol"),
    ("_pytest.runner", "call_and_report"),
    ("_pytest.runner", "call_runtest_hook"),
    ("_pytest.runner", "pytest_runtest_call"),
    ("_pytest.runner", "pytest_runtest_makereport"),
    ("_pytest.runner", "CallInfo.from_call"),
    ("_pytest.reports", "TestReport.from_item_and_call"),
    ("pluggy._callers", "_multicall"),
)
# The hooks that run a test or decide what its report says: each implementation is checked.
_OUTCOME_HOOKS = (
    "pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
    "pytest_pyfunc_call", "pytest_runtest_makereport", "pytest_report_teststatus",
)  # fmt: skip
_TRIPPED_LIMIT = 20
_tripped: set[str] = set()
_genuine: dict[int, tuple[Any, bool]] = {}  # per code object (kept alive): compiled from its file?
_compiled: dict[tuple[str, bool], set[tuple[Any, ...]]] = {}  # per file (and rewriting): its code's keys


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
    global _forgive
    if _forgive is None:  # every test of the tree may be listed: one set, made once
        _forgive = set(_SETTINGS.get("forgive") or ())
    return nodeid.partition("[")[0] in _forgive


def _key(code: Any) -> tuple[Any, ...]:
    consts = tuple(_key(const) if inspect.iscode(const) else repr(const) for const in code.co_consts)
    return (code.co_name, code.co_firstlineno, code.co_code, code.co_names, consts)


def _keys(code: Any, into: set[tuple[Any, ...]]) -> None:
    into.add(_key(code))
    for const in code.co_consts:
        if inspect.iscode(const):
            _keys(const, into)


def _file_keys(file: str, rewritten: bool) -> set[tuple[Any, ...]]:
    """The keys of every code object compiled from ``file`` as it is on disk, plainly or with
    pytest's assertion rewriting (``rewritten``: plugins and conftests are loaded so)."""
    if (file, rewritten) not in _compiled:
        found: set[tuple[Any, ...]] = set()
        try:
            with open(file, "rb") as handle:
                source = handle.read()
            if not rewritten:
                _keys(compile(source, file, "exec", dont_inherit=True), found)
            else:
                import ast  # noqa: PLC0415 (only where plain code did not match)

                from _pytest.assertion.rewrite import rewrite_asserts  # noqa: PLC0415

                tree = ast.parse(source, file)
                rewrite_asserts(tree, source, file, None)
                _keys(compile(tree, file, "exec", dont_inherit=True), found)
        except (OSError, SyntaxError, ValueError, TypeError, ImportError):
            pass
        _compiled[(file, rewritten)] = found
    return _compiled[(file, rewritten)]


def _is_genuine(function: Any) -> bool:
    """Whether ``function``'s code is code compiled from the file it names (never unwrapped:
    a wrapper that names pytest's function as ``__wrapped__`` is still the wrapper)."""
    function = getattr(function, "__func__", function)  # a bound method
    code = getattr(function, "__code__", None)
    if not inspect.iscode(code):
        return False
    if id(code) not in _genuine:
        key, file = _key(code), code.co_filename
        _genuine[id(code)] = (code, key in _file_keys(file, False) or key in _file_keys(file, True))
    return _genuine[id(code)][1]


def _trip(what: str) -> None:
    if what not in _tripped and len(_tripped) < _TRIPPED_LIMIT:
        _tripped.add(what)
        _write({"tripwire": what})


def _check_machinery(item: Any) -> None:
    """Trip on what makes a test pass without running it: see the module's docstring."""
    if "runtest" in vars(item):
        _trip(f"{item.nodeid}: the item holds a runtest of its own")
    for module_name, path in _RUNNER:
        found = sys.modules.get(module_name)
        for part in path.split(".") if found is not None else ():
            found = inspect.getattr_static(found, part, None)
            found = getattr(found, "__func__", found)  # a classmethod
        if found is None:
            continue  # not in this pytest's version
        code: Any = getattr(found, "__code__", None)
        package = sys.modules.get(module_name.partition(".")[0])
        folder = os.path.dirname(getattr(package, "__file__", None) or "/") + os.sep
        own = inspect.iscode(code) and code.co_filename.startswith(folder)  # a file of pytest's, or pluggy's
        if not (own and code.co_name == path.rpartition(".")[2] and _is_genuine(found)):
            _trip(f"{module_name}.{path} is not pytest's own code")
    hook = item.config.pluginmanager.hook
    for name in _OUTCOME_HOOKS:
        caller: Any = getattr(hook, name, None)
        for impl in caller.get_hookimpls() if hasattr(caller, "get_hookimpls") else ():
            if not _is_genuine(impl.function):
                _trip(f"{name} is implemented by code that is in no file ({impl.plugin_name})")


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
    if call.when == "call" and _out is not None:
        _check_machinery(item)
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
