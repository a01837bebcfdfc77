"""Reading and applying a model's diff, and finding the tests it adds that assert nothing."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path, PurePosixPath

import pytest

from pytest_codebench.benchmarks.tensorbench.vacuous import vacuous_tests
from pytest_codebench.workspace.checkout import Mirror
from pytest_codebench.workspace.files import UnsafePath
from pytest_codebench.workspace.patches import apply, confined, parse, unquote

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
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


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
        (
            "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n",
            "inside .git",
        ),
        # patch -p1 drops the first component, whatever it is: this one writes .git/hooks/x.
        ("--- /dev/null\n+++ foo/.git/hooks/x\n", "inside .git"),
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
    assert vacuous_tests(tree, parse(diff)) == [
        "tests/test_x.py::test_nothing",
        "tests/test_x.py::TestThing::test_method_nothing",
    ]


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


def write_patch(tmp_path: Path, text: str) -> Path:
    patch = tmp_path / "model.patch"
    patch.write_text(text)
    return patch


# -- the parser: hunks are read by their counted length -------------------------------------


def test_a_removed_line_that_starts_with_two_dashes_is_content():
    # The diff line "--- /usr/local/bin wrapper" is the removed Lua comment "-- /usr/...".
    diff = parse("--- a/run.lua\n+++ b/run.lua\n@@ -1,2 +1,1 @@\n--- /usr/local/bin wrapper\n print(1)\n")
    assert diff.files == (PurePosixPath("run.lua"),)
    assert diff.malformed is None


def test_an_added_line_that_starts_with_two_pluses_stays_in_its_file():
    text = '--- /dev/null\n+++ b/tests/test_n.py\n@@ -0,0 +1,3 @@\n+N = """\n+++ x\n+"""\n'
    diff = parse(text)
    assert diff.files == (PurePosixPath("tests/test_n.py"),)
    assert diff.added == {"tests/test_n.py": {1, 2, 3}}


def test_git_quoted_utf8_names_are_decoded(tree):
    (tree / "t é").mkdir()
    (tree / "t é" / "tést.py").write_text("x = 1\n")
    (tree / 'tab\tand "quote".py').write_text("y = 1\n")
    git("add", "-A", cwd=tree)
    text = git("diff", "--cached", cwd=tree)  # git quotes: "b/t \303\251/t\303\251st.py"
    assert '"b/t \\303\\251/t\\303\\251st.py"' in text
    diff = parse(text)
    assert set(diff.files) == {PurePosixPath("t é/tést.py"), PurePosixPath('tab\tand "quote".py')}
    assert diff.added == {"t é/tést.py": {1}, 'tab\tand "quote".py': {1}}


def test_c_quoted_names_decode_every_escape():
    assert unquote('"a\\\\b\\"c\\td\\ne\\303\\251"') == 'a\\b"c\td\neé'
    assert unquote("plain name") == "plain name"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n-line 1\n+line one\n line 2\n", "shorter than expected"),
        (
            (
                "--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-line 1\n+line one\n"
                "*** a/out/x\n--- b/out/x\n***************\n*** 0 ****\n--- 1 ----\n+ x\n"
            ),
            "context-diff",
        ),
        ("Here is my fix: change line 1 to line one.\n", "not a unified diff"),
    ],
    ids=["hunk-too-long", "context-diff-smuggled", "prose"],
)
def test_text_the_parser_cannot_read_is_never_handed_to_the_tools(tree, tmp_path, text, why):
    # GNU patch applies context diffs that the path checks never saw.
    assert why in parse(text).malformed
    applied = apply(tree, write_patch(tmp_path, text))
    assert applied.method is None
    assert why in applied.reason
    assert "# exit" not in applied.log
    assert git("status", "--porcelain", "--ignored", cwd=tree) == ""


def test_lines_starting_with_dashes_and_pluses_are_applied_and_judged(tree, tmp_path):
    (tree / "tests").mkdir()
    (tree / "tests" / "test_notes.py").write_text(
        'NOTES = """\n-- /old/note\n"""\n\n\ndef test_old():\n    assert NOTES\n'
    )
    git("add", "-A", cwd=tree)
    git("commit", "-qm", "notes", cwd=tree)
    text = (
        "diff --git a/tests/test_notes.py b/tests/test_notes.py\n--- a/tests/test_notes.py\n+++ b/tests/test_notes.py\n"
        '@@ -1,3 +1,3 @@\n NOTES = """\n--- /old/note\n+++ new note\n """\n'
        "@@ -7,0 +8,4 @@\n+\n+\n+def test_added_nothing():\n+    pass\n"
    )
    applied = apply(tree, write_patch(tmp_path, text))
    assert applied.method == "git apply"
    assert "++ new note\n" in (tree / "tests" / "test_notes.py").read_text()
    diff = parse(text)
    assert diff.added == {"tests/test_notes.py": {2, 8, 9, 10, 11}}
    assert vacuous_tests(tree, diff) == ["tests/test_notes.py::test_added_nothing"]


# -- links the patch creates -----------------------------------------------------------------


def link_patch(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


@pytest.mark.parametrize(
    ("path", "target", "reason"),
    [
        ("out", "/etc/passwd", "out of the work tree"),
        ("sub/up", "../../outside", "out of the work tree"),
        ("hooks", ".git/hooks", "into .git"),
    ],
)
def test_a_patch_that_creates_a_link_out_of_the_tree_is_refused(path, target, reason):
    with pytest.raises(UnsafePath, match=reason):
        parse(link_patch(path, target))


def test_a_link_in_the_tree_is_created_and_one_through_an_outside_link_is_refused(tree, tmp_path):
    (tree / "sub").mkdir()
    text = link_patch("sub/up", "../a.py")
    confined(tree, parse(text))
    assert apply(tree, write_patch(tmp_path, text)).method == "git apply"
    assert (tree / "sub" / "up").read_text() == (tree / "a.py").read_text()
    git("reset", "-q", "--hard", cwd=tree)
    (tree / "away").symlink_to(tmp_path)
    with pytest.raises(UnsafePath, match="out of the work tree through a link"):
        confined(tree, parse(link_patch("inner", "away/x")))


def test_a_rename_that_moves_a_relative_link_out_of_reach_is_undone(tree, tmp_path):
    (tree / "deep" / "er").mkdir(parents=True)
    (tree / "deep" / "er" / "link").symlink_to("../../a.py")
    git("add", "-A", cwd=tree)
    git("commit", "-qm", "link", cwd=tree)
    text = "diff --git a/deep/er/link b/link\nsimilarity index 100%\nrename from deep/er/link\nrename to link\n"
    applied = apply(tree, write_patch(tmp_path, text))
    assert applied.method is None
    assert "left as a link out of the work tree" in applied.reason
    assert git("status", "--porcelain", "--ignored", cwd=tree) == ""


# -- a patch already in the base commit -------------------------------------------------------


def stale_patch(tree: Path) -> str:
    """A diff of a change, then the change committed: the diff is already in HEAD."""
    (tree / "a.py").write_text((tree / "a.py").read_text().replace("line 10\n", "line ten\n"))
    diff = git("diff", cwd=tree)
    git("commit", "-qam", "ten", cwd=tree)
    return diff


def test_a_patch_already_applied_with_blob_ids_fails_as_changing_nothing(tree, tmp_path):
    # git apply --3way merges it into nothing and exits 0.
    applied = apply(tree, write_patch(tmp_path, stale_patch(tree)))
    assert applied.method is None
    assert applied.reason.startswith("the patch changes nothing: already applied?")
    assert "git apply --3way" in applied.reason
    assert "patch --batch" not in applied.log  # fuzz never gets a go at it
    assert git("status", "--porcelain", "--ignored", cwd=tree) == ""
    assert "line ten" in (tree / "a.py").read_text()


def test_a_patch_already_applied_is_never_applied_in_reverse(tree, tmp_path):
    # Without blob ids (as models write diffs) only patch sees it, and --batch alone reverses it.
    text = "".join(line for line in stale_patch(tree).splitlines(keepends=True) if not line.startswith("index "))
    applied = apply(tree, write_patch(tmp_path, text))
    assert applied.method is None
    assert "previously applied" in applied.reason
    assert git("status", "--porcelain", "--ignored", cwd=tree) == ""
    assert "line ten" in (tree / "a.py").read_text()


def test_an_honest_patch_still_applies_with_fuzz(tree, tmp_path):
    text = "--- a/a.py\n+++ b/a.py\n@@ -9,3 +9,3 @@\n line 9\n-line 10\n+line ten\n line eleven\n"
    applied = apply(tree, write_patch(tmp_path, text))
    assert applied.method == "patch --fuzz"
    assert "line ten\nline 11\n" in (tree / "a.py").read_text()
