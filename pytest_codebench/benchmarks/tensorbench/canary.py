"""Canary tests: a test module the harness writes into the work tree just before the test
command, beside the tree's own tests, with tests that must fail and tests that must pass.

Code of the patch runs inside the suite's process and can change how every test is run or
reported there (``Function.runtest = lambda self: None`` passes them all); no record written in
that process proves otherwise. A canary is proof from outside: the harness knows what it must
do, so a failing canary reported as passed, a passing one reported as failed, or one missing
is tampering. Its module and function names and its bodies are drawn anew for every item, from
the words tests are named with, and it lies in a folder of the tree's own tests, so that it has
no fixed name or path a patch could spare. It is written after the build, so no code of the
patch ran while it existed before the suite starts, and takes a neighbour's modification time.
"""

from __future__ import annotations

import dataclasses
import os
import random
import secrets
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from .files import write_new

WORDS = (
    "add", "axis", "batch", "broadcast", "cast", "chunk", "clamp", "clone", "concat", "copy", "device",
    "dtype", "empty", "expand", "fill", "flatten", "gather", "grad", "index", "kernel", "layout", "mask",
    "mean", "norm", "pad", "prod", "reduce", "reshape", "scalar", "scatter", "shape", "slice", "sort",
    "split", "squeeze", "stack", "stride", "sum", "topk", "transpose", "view", "where", "zeros",
)  # fmt: skip
SKIPPED = {"build", "dist", "node_modules", "site-packages", "__pycache__"}
WALK_LIMIT = 20000  # folders looked at for the tree's tests; past it, those found so far


@dataclasses.dataclass(frozen=True)
class Canaries:
    """The canary module (its path in the tree, POSIX) and the functions in it that must fail
    and that must pass."""

    path: str
    fail: tuple[str, ...]
    passes: tuple[str, ...]

    def ids(self) -> set[str]:
        return {f"{self.path}::{name}" for name in (*self.fail, *self.passes)}

    def settings(self, forgive: list[str]) -> dict[str, Any]:
        """What the harness's plugin needs: the module to collect, the failures to forgive
        (the exit status, -x), the seed of where the canaries go among the tests; and the
        tests (``forgive``, ids without parameters) whose failures stop no ``-x`` run: every
        test of the tree's test files, which fail in the canary run (``twin``) and must not end
        it (in the verdict run alike, which must look the same)."""
        canaries = {"path": self.path, "fail": list(self.fail)}
        return {"canaries": canaries, "forgive": forgive, "seed": secrets.randbits(32)}

    def check(self, outcomes: dict[str, str]) -> list[Wrong]:
        """Each canary the suite's record shows other than as written (empty: all ran right)."""
        found = []
        for names, want in ((self.fail, "failed"), (self.passes, "passed")):
            for name in names:
                got = outcomes.get(f"{self.path}::{name}", "not run")
                if got != want:
                    found.append(Wrong(f"{self.path}::{name}", want, got))
        return found


class Wrong(NamedTuple):
    """A canary test, what it must be reported as, and what it was (``not run``: missing)."""

    test: str
    want: str
    got: str

    def __str__(self) -> str:
        return f"{self.test} must be {self.want}, was {self.got}"


def _folders(tree: Path) -> tuple[dict[PurePosixPath, list[int]], set[str]]:
    """The tree's folders that hold test modules (relative) and each module's modification
    time, and every module name there; never through a link."""
    folders: dict[PurePosixPath, list[int]] = {}
    names: set[str] = set()
    seen = 0
    for top, dirs, files in os.walk(tree, followlinks=False):
        seen += 1
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED and not d.endswith(".egg-info")]
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
        tests = [f for f in files if f.endswith(".py") and (f.startswith("test_") or f.endswith("_test.py"))]
        names.update(files)
        if tests:
            times = [os.lstat(os.path.join(top, test)).st_mtime_ns for test in tests]
            folders[PurePosixPath(Path(top).relative_to(tree).as_posix())] = times
        if seen >= WALK_LIMIT:
            break
    return folders, names


def _body(draw: random.Random, fail: bool) -> str:
    a, b, word = draw.randint(2, 99), draw.randint(2, 99), draw.choice(WORDS)
    values = draw.sample(range(100), 5)
    if fail:
        choices = [
            f"    assert {a} + {b} == {a + b + draw.randint(1, 9)}\n",
            f"    raise {draw.choice(['ValueError', 'RuntimeError', 'TypeError'])}({word!r})\n",
            f"    values = {values!r}\n    assert sorted(values, reverse=True) == sorted(values)\n",
            f"    table = {{{word!r}: {a}}}\n    assert table[{word.upper()!r}] == {a}\n",
            f"    assert len({word!r}) == {len(word) + draw.randint(1, 3)}\n",
        ]
    else:
        choices = [
            f"    assert {a} * {b} == {a * b}\n",
            f"    values = {values!r}\n    assert sorted(values)[0] == {min(values)}\n",
            f"    assert {word!r}.upper() == {word.upper()!r}\n",
            f"    total = {a}\n    total += {b}\n    assert total == {a + b}\n",
        ]
    return draw.choice(choices)


def plant(workspace: Path, testbed: str) -> Canaries:
    """Write a canary module into the work tree ``workspace/testbed``, in a folder of its
    tests drawn at random among its main ones (at least half as many test modules as the most;
    a folder of a few test-like data files may be one the suite ignores), the tree's root if
    it has none, under a name no module of the tree has."""
    draw = random.Random(secrets.randbits(64))
    folders, taken = _folders(workspace / testbed)
    most = max((len(times) for times in folders.values()), default=0)
    main = sorted(folder for folder, times in folders.items() if 2 * len(times) >= most)
    folder = draw.choice(main) if main else PurePosixPath(".")
    names: list[str] = []
    while len(names) < 2 * 2 + 1:  # a module name and four functions, all different
        name = f"test_{draw.choice(WORDS)}_{draw.choice(WORDS)}"
        if name not in names and f"{name}.py" not in taken:
            names.append(name)
    module, functions = names[0], names[1:]
    fail = draw.randint(1, len(functions) - 1)  # at least one of each
    kinds = [True] * fail + [False] * (len(functions) - fail)
    draw.shuffle(kinds)
    text = "".join(f"\n\ndef {name}():\n{_body(draw, kind)}" for name, kind in zip(functions, kinds, strict=True))
    path = (folder / f"{module}.py").as_posix()
    write_new(workspace, f"{testbed}/{path}", text.lstrip("\n").encode())
    if main:
        # Not the one test module newer than the build: it takes a neighbour's time.
        when = draw.choice(folders[folder])
        os.utime(workspace / testbed / path, ns=(when, when), follow_symlinks=False)
    return Canaries(
        path,
        tuple(name for name, kind in zip(functions, kinds, strict=True) if kind),
        tuple(name for name, kind in zip(functions, kinds, strict=True) if not kind),
    )
