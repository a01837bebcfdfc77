"""The canary run: the test command once more, with every test of the tree made to fail where
it stands.

The random canary module (``canary``) catches code that turns every failure into a pass. Code
that spares all but the tests it was written for (matched by their names, or by their files)
lets it through: those tests are the ones the patch knows and the canaries are not. Those may be
the tests the patch adds, or tests that were already in the suite and that a wrong patch
breaks. So the harness runs the suite twice with the same command, the same plugin and the same
settings: in both runs every test of the tree's test files (those of the base commit, from
git's list, and those the patch adds) ends with one more statement, drawn anew per run, that
holds in the verdict run and fails in the canary run. The tests keep their ids, files, imports
and fixtures; code that makes chosen tests pass without running their bodies (``runtest``
replaced on their class or on the item, a hook that reports or calls them otherwise, whatever
the spelling) cannot tell from their names, their files or the command which run it is in, and
one that makes them pass in the verdict run makes them pass in the canary run too, where they
must fail. Which run goes first is drawn per item, so that counting runs tells nothing either.

What stays possible: code that reads the tests' source and works out whether their last
statement holds, runs them itself, or keeps a record across runs and bets on the order. An
in-process proof cannot rule that out; it makes the patch do it on purpose.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import random
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from pytest_codebench.workspace.checkout import git
from pytest_codebench.workspace.patches import Diff

from .canary import WORDS, Wrong
from .files import Unreadable, read_back, write_new
from .vacuous import SOURCE_LIMIT, TEST_FILES, functions


@dataclasses.dataclass(frozen=True)
class Twin:
    """A test file of the tree: its path in the tree (POSIX), its text as the patch left it,
    and its tests (qualified: ``Class::test``), each with the line after which its last
    statement ends and the indentation of its body."""

    path: str
    text: str
    tests: tuple[tuple[str, int, str], ...]

    def ids(self) -> list[str]:
        return [f"{self.path}::{name}" for name, _, _ in self.tests]

    def written(self, draw: random.Random, fail: bool) -> str:
        """The text with one more statement at the end of each test, failing or not."""
        lines = self.text.splitlines(keepends=True)
        for _, after, indent in sorted(self.tests, key=lambda test: -test[1]):
            tail = f"{indent}{tail_statement(draw, fail)}\n"
            if after > 0 and not lines[after - 1].endswith("\n"):
                lines[after - 1] += "\n"
            lines.insert(after, tail)
        return "".join(lines)


def tail_statement(draw: random.Random, fail: bool) -> str:
    """An assertion that holds or fails: the same shapes either way, so only working it out
    tells which (a failing one differs in its expected value alone)."""
    a, b, word, values = draw.randint(2, 99), draw.randint(2, 99), draw.choice(WORDS), draw.sample(range(100), 4)
    shapes = [
        (f"{a} + {b}", a + b),
        (f"{a} * {b}", a * b),
        (f"len({word!r}) + {a}", len(word) + a),
        (f"sorted({values!r})[0]", min(values)),
        (f"max({values!r})", max(values)),
    ]
    left, value = draw.choice(shapes)
    return f"assert {left} == {value + draw.randint(1, 9) if fail else value}"


def _tests(source: str) -> tuple[tuple[str, int, str], ...]:
    """The tests of ``source`` whose end a statement can follow."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()  # the suite reports a file it cannot import
    lines = source.splitlines()
    found = []
    for qualname, node in functions(module):
        test = qualname.rpartition("::")[2]
        collected = qualname.partition("::")[0].startswith("Test") or "::" not in qualname
        if not (test.startswith("test") and collected):
            continue
        first, last = node.body[0], node.body[-1]
        if first.lineno == node.lineno or isinstance(last, (ast.Return, ast.Raise)):
            continue  # a one-line test, or one whose end is never passed
        if any(isinstance(child, (ast.Yield, ast.YieldFrom)) for child in ast.walk(node)):
            continue
        # The body's own indentation (tabs stay tabs), as written before its first statement.
        indent = lines[first.lineno - 1][: first.col_offset]
        if indent.strip():
            continue  # the body starts on a line shared with something else
        found.append((qualname, last.end_lineno or last.lineno, indent))
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class Twins:
    """The tree's tests, and which run (the verdict's or the canary's) is first."""

    files: tuple[Twin, ...]
    canary_first: bool = dataclasses.field(default_factory=lambda: bool(secrets.randbits(1)))

    def ids(self) -> list[str]:
        return [test for twin in self.files for test in twin.ids()]

    def write(self, workspace: Path, testbed: str, fail: bool) -> None:
        """Each file anew, its tests ending in statements that fail (the canary run) or hold."""
        draw = random.Random(secrets.randbits(64))
        for twin in self.files:
            write_new(workspace, f"{testbed}/{twin.path}", twin.written(draw, fail).encode())

    def check(self, verdict: Mapping[str, str], canary: Mapping[str, str]) -> list[Wrong]:
        """Each test that passed in the verdict run and was not failed in the canary run
        (outcomes per test id; a parametrized test's ids each count)."""
        wrong = []
        ids = set(self.ids())  # many: one set, not a list searched per test
        for test, outcome in verdict.items():
            if outcome == "passed" and test.partition("[")[0] in ids and canary.get(test) != "failed":
                wrong.append(Wrong(f"{test} (canary run)", "failed", canary.get(test, "not run")))
        return wrong


def test_files(tree: Path, diff: Diff) -> tuple[str, ...]:
    """The test files of the work tree ``tree`` (POSIX, relative): the base commit's, from
    git's own list (read before any code of the patch runs: no folder it plants hides one), and
    those the patch adds or changes."""
    listed = git("ls-tree", "-r", "-z", "--name-only", "HEAD", cwd=tree)
    names = listed.stdout.split("\0") if listed.returncode == 0 else []
    names += [name for name, added in diff.added.items() if added]
    found = {name for name in names if any(fnmatch.fnmatch(PurePosixPath(name).name, p) for p in TEST_FILES)}
    return tuple(sorted(found))


def _twin(workspace: Path, testbed: str, name: str) -> Twin | None:
    """The file ``name`` of the tree as a twin (None: not a plain UTF-8 Python file, or one
    with no test a statement can end, or one whose twin would not parse: left as it is)."""
    try:
        data = read_back(workspace, f"{testbed}/{name}", SOURCE_LIMIT)
        source = data.decode() if data is not None else None
    except (Unreadable, UnicodeDecodeError):
        return None
    tests = _tests(source) if source is not None else ()
    if not tests or source is None:
        return None
    found = Twin(PurePosixPath(name).as_posix(), source, tests)
    try:
        ast.parse(found.written(random.Random(0), True))
    except (SyntaxError, ValueError):
        return None  # never a file the suite could not import because of the harness
    return found


def find(workspace: Path, testbed: str, files: Sequence[str]) -> Twins | None:
    """The tests of the tree ``workspace/testbed`` in its test ``files`` (None: none)."""
    found = [twin for name in files if (twin := _twin(workspace, testbed, name)) is not None]
    return Twins(tuple(found)) if found else None
