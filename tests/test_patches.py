"""Reading and applying a model's diff, and finding the tests it adds that assert nothing."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_codebench.checkout import Mirror
from pytest_codebench.patches import apply, confined, parse
from pytest_codebench.vacuous import vacuous_tests
from pytest_codebench.workspace import UnsafePath

ADD_TEST = """\
diff --git a/tests/test_x.py b/tests/test_x.py
new file mode 100644
--- /dev/null
+++ b/tests/test_x.py
@@ -0,0 +1,{count} @@
{body}"""


def added_test_file(code: str) -> str:
    lines = textwrap.dedent(code).strip("\n").splitlines()
    return ADD_TEST.format(count=len(lines), body="".join(f"+{line}\n" for line in lines))


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git("init", "-q", cwd=root)
    (root / "a.py").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    git("add", "-A", cwd=root)
    git("commit", "-qm", "a", cwd=root)
    return root


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("diff --git a/../x b/../x\n--- a/../x\n+++ b/../x\n", "climbs out"),
        ("--- /etc/passwd\n+++ /etc/passwd\n", "is absolute"),
        ("diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n", "inside .git"),
    ],
)
def test_a_diff_that_leaves_the_tree_is_refused(header, reason):
    with pytest.raises(UnsafePath, match=reason):
        parse(header + "@@ -0,0 +1 @@\n+x\n")


def test_a_diff_through_a_link_out_of_the_tree_is_refused(tree, tmp_path):
    (tree / "out").symlink_to(tmp_path)
    with pytest.raises(UnsafePath, match="leads out of the work tree"):
        confined(tree, parse("--- a/out/x\n+++ b/out/x\n@@ -0,0 +1 @@\n+x\n"))


def test_fallbacks_are_tried_in_order(tree, tmp_path):
    (tree / "a.py").write_text((tree / "a.py").read_text().replace("line 10\n", "line ten\n"))
    diff = git("diff", cwd=tree)
    git("checkout", "a.py", cwd=tree)
    patch = tmp_path / "p.diff"
    patch.write_text(diff)
    assert apply(tree, patch).method == "git apply"
    git("checkout", "a.py", cwd=tree)
    # The tree moved on under the patch's context, but the blob it names is known: 3-way.
    (tree / "a.py").write_text((tree / "a.py").read_text().replace("line 8\n", "line eight\n"))
    git("commit", "-qam", "eight", cwd=tree)
    assert apply(tree, patch).method == "git apply --3way"
    git("reset", "-q", "--hard", cwd=tree)
    # Without blob ids (as models write diffs), only patch's fuzz takes stale context.
    patch.write_text("".join(line for line in diff.splitlines(keepends=True) if not line.startswith("index ")))
    applied = apply(tree, patch)
    assert applied.method == "patch --fuzz"
    assert "line ten" in (tree / "a.py").read_text()
    patch.write_text(diff.replace("a.py", "missing.py"))
    failed = apply(tree, patch)
    assert failed.method is None
    assert failed.log.count("# exit") == 4
    assert git("status", "--porcelain", cwd=tree) == ""  # left as it was found


def test_tests_that_assert_nothing_are_found(tree):
    diff = added_test_file(
        """
        import pytest

        def check(value):
            assert value

        def check_twice(value):
            check(value)

        def test_assert():
            assert 1

        def test_raises():
            with pytest.raises(ValueError):
                int("x")

        def test_helper():
            check_twice(1)

        def test_numpy_style():
            np.testing.assert_allclose(1, 1)

        def test_nothing():
            int("1")

        class TestThing:
            def test_method_asserts(self):
                self.assertEqual(1, 1)

            def test_method_nothing(self):
                pass
        """
    )
    (tree / "tests").mkdir()
    subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=tree, check=True)
    assert vacuous_tests(tree, parse(diff)) == ["tests/test_x.py::test_nothing", "tests/test_x.py::TestThing::test_method_nothing"]


def test_only_tests_the_diff_adds_are_judged(tree):
    (tree / "tests").mkdir()
    (tree / "tests" / "test_old.py").write_text("def test_old():\n    pass\n\n\ndef test_new():\n    pass\n")
    diff = parse("--- a/tests/test_old.py\n+++ b/tests/test_old.py\n@@ -4,0 +5,2 @@\n+def test_new():\n+    pass\n")
    assert vacuous_tests(tree, diff) == ["tests/test_old.py::test_new"]


def test_a_mirror_fetches_a_missing_commit_once_then_says_so(tree, tmp_path):
    mirror = Mirror(str(tree), tmp_path / "cache")
    head = git("rev-parse", "HEAD", cwd=tree).strip()
    assert mirror.ensure("HEAD") == head
    (tree / "b.py").write_text("b\n")
    git("add", "-A", cwd=tree)
    git("commit", "-qm", "b", cwd=tree)
    new = git("rev-parse", "HEAD", cwd=tree).strip()
    assert mirror.worktree(new, tmp_path / "wt") == new
    assert (tmp_path / "wt" / "b.py").read_text() == "b\n"
    with pytest.raises(Exception, match=f"commit {'1' * 40} is not in .* \\(fetched it again"):
        mirror.ensure("1" * 40)
