"""Workspaces removed in the background: gone once waited for, and every one of a run gone
when the run ends, with and without xdist."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import packs
import pytest

from pytest_codebench.janitor import Janitor

Codebench = Callable[..., Any]


def tree(root: Path, name: str) -> Path:
    path = root / name
    (path / "deep" / "er").mkdir(parents=True)
    (path / "deep" / "er" / "file").write_text("x")
    (path / "link").symlink_to(root / "keep")  # removed, never followed
    return path


def test_queued_folders_are_gone_once_waited_for_and_links_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "precious").write_text("x")
    janitor = Janitor()
    paths = [tree(tmp_path, f"w{n}") for n in range(20)]
    for path in paths:
        janitor.remove_later(path)
    janitor.wait(paths[0])
    assert not paths[0].exists()
    janitor.wait()
    assert not any(path.exists() for path in paths)
    assert (tmp_path / "keep" / "precious").exists()
    # Queued twice (an item graded again): waiting for it waits for both removals.
    again = tree(tmp_path, "again")
    janitor.remove_later(again)
    janitor.remove_later(again)
    janitor.wait(again)
    assert not again.exists()


def test_a_run_leaves_no_workspace_behind(pytester: pytest.Pytester, codebench: Codebench) -> None:
    problems = [packs.problem(f"T/{n}") for n in range(6)]
    run_dir = pytester.path / "runs"
    run = codebench(
        *packs.pack_args(pytester.path, problems), "--codebench-run-without-gpu", f"--codebench-run-dir={run_dir}"
    )
    run.result.assert_outcomes(passed=6)
    (folder,) = run_dir.iterdir()
    assert sorted(path.name for path in (folder / "logs").iterdir()) == [f"T_{n}_0" for n in range(6)]
    assert not (folder / "work").exists() or not list((folder / "work").iterdir())
