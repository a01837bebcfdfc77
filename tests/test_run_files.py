"""The run's files land where the user runs pytest, never beside the data."""

from __future__ import annotations

import re
import time
from pathlib import Path

import packs
import pytest

from pytest_codebench.context import prune

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


# -- how long a run's logs are kept ---------------------------------------------------------------


def run_name(seconds: float) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(seconds)) + "-abcdef"


def test_old_run_folders_go_by_age_never_the_newest_and_the_run_says_so(pytester, codebench):
    runs = pytester.path / ".codebench" / "runs"
    old = [run_name(time.time() - days * 86400) for days in (40, 30, 20)]
    # Eleven runs of the last hours: more than the ten the run folder used to keep.
    recent = [run_name(time.time() - hours * 3600) for hours in range(2, 13)]
    for name in [*old, *recent, "notes"]:
        (runs / name / "logs").mkdir(parents=True)
    args = [*packs.pack_args(pytester.path, [packs.problem("T/1")], [packs.solution("T/1")]), FORCE]
    run = codebench(*args)
    run.result.assert_outcomes(passed=1)
    assert f"codebench: removed 3 run folder(s) older than 14 days from {runs} (--codebench-keep-logs)" in run.output
    first = re.search(r"logs: (\S+)/logs", run.output)
    assert first and sorted(p.name for p in runs.iterdir()) == sorted([*recent, "notes", Path(first[1]).name])
    # A shorter keep (its ini twin: an hour) removes those runs, never the newest (the run before).
    pytester.makeini("[pytest]\ncodebench_keep_logs = 0.04\n")
    run = codebench(*args)
    assert "removed 11 run folder(s) older than 0.04 days" in run.output
    assert Path(first[1]).is_dir() and not any((runs / name).exists() for name in recent)


def test_the_newest_run_folder_is_kept_however_old(tmp_path):
    names = [run_name(time.time() - days * 86400) for days in (300, 200)]
    for name in names:
        (tmp_path / name).mkdir()
    assert prune(tmp_path, keep_seconds=86400, now=time.time()) == 1
    assert [path.name for path in tmp_path.iterdir()] == [names[1]]
