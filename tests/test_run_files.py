"""The run's files land where the user runs pytest, never beside the data."""

from __future__ import annotations

import packs
import pytest

FORCE = "--codebench-run-without-gpu"


def written_here(folder) -> set[str]:
    return {path.name for path in folder.iterdir()} & {".codebench", ".pytest_cache"}


def test_a_dataset_in_another_project_does_not_move_rootdir_or_bring_its_ini(pytester, codebench):
    # The dataset lies in another project, whose ini file would deselect everything.
    elsewhere = pytester.mkdir("elsewhere")
    (elsewhere / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-k nothing_matches -p no:nope"\n')
    pytester.makeini("[pytest]\ncodebench_k = 1\n")
    run = codebench(*packs.pack_args(elsewhere, [packs.problem("T/1")], [packs.solution("T/1")]), FORCE)
    run.result.assert_outcomes(passed=1)
    run.result.stdout.fnmatch_lines([f"rootdir: {pytester.path}", "configfile: tox.ini"])
    assert f"run directory {pytester.path / '.codebench' / 'runs'}" in run.output
    assert written_here(elsewhere) == set()


def test_a_dataset_outside_the_invocation_dir_leaves_rootdir_there(pytester, codebench, tmp_path_factory):
    data = tmp_path_factory.mktemp("readonly-data")
    args = packs.pack_args(data, [packs.problem("T/1")], [packs.solution("T/1")])
    data.chmod(0o555)
    try:
        run = codebench(*args, FORCE)
    finally:
        data.chmod(0o755)
    run.result.assert_outcomes(passed=1)
    run.result.stdout.fnmatch_lines([f"rootdir: {pytester.path}"])
    assert written_here(data) == set()
    assert ".codebench" in written_here(pytester.path)


def test_rootdir_given_on_the_command_line_wins(pytester, codebench, tmp_path_factory):
    root = tmp_path_factory.mktemp("chosen-root")
    elsewhere = pytester.mkdir("elsewhere")
    run = codebench(*packs.pack_args(elsewhere, [packs.problem("T/1")]), FORCE, f"--rootdir={root}")
    assert run.result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    run.result.stdout.fnmatch_lines([f"rootdir: {root}"])
    assert ".codebench" in written_here(root) and written_here(elsewhere) == set()
