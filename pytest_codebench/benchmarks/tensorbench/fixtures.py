"""TensorBench's own fixture, for users' tests: a checkout of Scorch, TensorBench's repository.

Registered as a pytest plugin of its own (the ``codebench-tensorbench`` entry point in the
``pytest11`` group), so that any test of a project with pytest-codebench installed can ask
for it, graded by TensorBench or not; the core fixtures know no benchmark's repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_codebench.fixtures import Checkout, checkout

SCORCH_URL = "https://github.com/bobbyyyan/scorch.git"


@pytest.fixture
def scorch_checkout(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkout]:
    """``codebench_checkout`` of the Scorch repository (TensorBench's), at the task's base
    commit, the ``codebench_repo`` marker's commit, or the head of its default branch;
    ``--codebench-repo`` overrides the URL (a local mirror; offline)."""
    yield from checkout(request, tmp_path, SCORCH_URL)
