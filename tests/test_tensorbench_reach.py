"""TensorBench's static look at code that reaches into pytest's or pluggy's internals: honest
tests that import pytest's own utilities (``_pytest.monkeypatch``, ``_pytest.capture``) are
not named; code that writes into pytest's or pluggy's objects, wraps their functions or names
their machinery is, in a test as in the package. The end-to-end pair runs real scorchlet
suites without ``--codebench-allow-harness-edits``: the honest patch passes, the hostile one
is failed for its edit."""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorbench_data import categories, pack, prediction, task, write_dataset

from pytest_codebench.benchmarks.tensorbench.edits import static_edits
from pytest_codebench.workspace.patches import parse

B = pack.commit_b()
GOOD = pack._with_sub(B)
TESTS = GOOD["tests/test_ops.py"]
INIT = GOOD["src/scorchlet/__init__.py"]
NAMED = "reaches into pytest's internals"

# Honest tests as real projects write them.
MONKEYPATCH = """
from _pytest.monkeypatch import MonkeyPatch


def test_sub_patched():
    patcher = MonkeyPatch()
    patcher.setattr(scorchlet, "sub", lambda a, b: 0)
    assert scorchlet.sub(3, 1) == 0
    patcher.undo()
    assert scorchlet.sub(3, 1) == 2
"""
CAPTURE = """
import _pytest.capture
from _pytest.capture import CaptureFixture
from _pytest.pytester import Pytester  # noqa: F401


def test_sub_prints(capsys: CaptureFixture[str]) -> None:
    print(scorchlet.sub(3, 1))
    assert capsys.readouterr().out == "2\\n"
    assert _pytest.capture.CaptureFixture is CaptureFixture
"""

# Hostile code, in the package and in a test.
ALIASED = INIT + "\nfrom _pytest.python import Function as _F\n_F.runtest = lambda self: None\n"
WRAPPED = (
    INIT
    + "\nimport _pytest.runner as _r\n_base = _r.CallInfo\n_made = _base.from_call\n"
    + "_base.from_call = classmethod(lambda cls, func, when, reraise=None: _made(lambda: None, when, reraise))\n"
)
SETATTR = INIT + "\nimport pytest\nsetattr(pytest.TestReport, 'outcome', 'passed')\n"
MONKEYPATCH_INTERNALS = TESTS + (
    "\nimport pytest\n\n\ndef test_z(monkeypatch):\n"
    "    monkeypatch.setattr('_pytest.python.Function.runtest', lambda self: None)\n"
    "    monkeypatch.setattr(pytest.Function, 'runtest', lambda self: None)\n"
)
HOOKIMPL = (
    INIT + "\nimport pluggy\n\n\n@pluggy.HookimplMarker('pytest')(wrapper=True)\ndef _make(item, call):\n    yield\n"
)
# Changes nothing a test sees, so the suite and the canaries pass: the rule alone fails it.
IDLE = INIT + "\nfrom _pytest.python import Function as _F\n_F.runtest = _F.runtest\n"
MANAGER = INIT + "\n\ndef load(config):\n    config.pluginmanager.register(object(), 'x')\n"


def patch(files: dict[str, str]) -> str:
    return pack.diff(B, files)


def named(tmp_path: Path, files: dict[str, str]) -> list[str]:
    after = {**B, **files}
    pack.write_tree(tmp_path, after)
    return [str(edit) for edit in static_edits(parse(patch(after)), tmp_path, base=B.get)]


@pytest.mark.parametrize(
    "files",
    [
        {**GOOD, "tests/test_ops.py": TESTS + MONKEYPATCH},
        {**GOOD, "tests/test_ops.py": TESTS + CAPTURE},
        {**GOOD, "src/scorchlet/testing.py": "from _pytest.outcomes import fail\n\n\ndef check(x):\n    fail(x)\n"},
        {**GOOD, "docs/testing.md": "We use `_pytest.monkeypatch.MonkeyPatch` and pluggy.\n"},
    ],
    ids=["MonkeyPatch in a test", "CaptureFixture in a test", "a helper importing fail", "prose"],
)
def test_honest_imports_of_pytests_utilities_are_not_named(tmp_path: Path, files: dict[str, str]) -> None:
    assert named(tmp_path, files) == []


@pytest.mark.parametrize(
    "path,text",
    [
        ("src/scorchlet/__init__.py", ALIASED),
        ("src/scorchlet/__init__.py", WRAPPED),
        ("src/scorchlet/__init__.py", SETATTR),
        ("tests/test_ops.py", MONKEYPATCH_INTERNALS),
        ("src/scorchlet/__init__.py", HOOKIMPL),
        ("src/scorchlet/__init__.py", MANAGER),
        ("src/scorchlet/boot.pyx", "import _pytest.python\n"),  # not Python we parse: any mention
    ],
    ids=[
        "alias assigned",
        "function wrapped",
        "setattr",
        "monkeypatch of internals",
        "hookimpl",
        "pluginmanager",
        "pyx",
    ],
)
def test_code_that_writes_into_pytests_or_pluggys_objects_is_named(tmp_path: Path, path: str, text: str) -> None:
    assert named(tmp_path, {**GOOD, path: text}) == [f"{path} ({NAMED})"]


@pytest.mark.usefixtures("tensorbench_cache_dir")
def test_an_honest_test_importing_monkeypatch_passes_and_an_assignment_into_pytest_fails(
    pytester, codebench, scorchlet
):
    repo, shas = scorchlet
    rows = [
        prediction("feature_sub", patch({**GOOD, "tests/test_ops.py": TESTS + MONKEYPATCH})),
        prediction("feature_sub", patch({**GOOD, "src/scorchlet/__init__.py": IDLE})),
    ]
    args = write_dataset(pytester.path, repo, [task(shas, repo)], rows)
    run = codebench(*args, benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "passed", "scorchlet__feature_sub[1]": "test_failed"}
    assert "harness_edits" not in run.items["scorchlet__feature_sub[0]"]["properties"]
    assert f"src/scorchlet/__init__.py ({NAMED})" in run.items["scorchlet__feature_sub[1]"]["message"]
