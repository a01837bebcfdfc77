from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from pytest_codebench.workspace import UnsafePath, guarded_paths, normalise, write_file

TESTS = [PurePosixPath("test/test_main.cu"), PurePosixPath("test_x.py")]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [("solution.cu", "solution.cu"), ("./src//a.cu", "src/a.cu"), ("include/./k.h", "include/k.h")],
)
def test_normalise(raw, clean):
    assert normalise(raw) == PurePosixPath(clean)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("/etc/passwd", "is absolute"),
        ("~/x", "is absolute"),
        ("../x", "climbs out"),
        ("a/../../x", "climbs out"),
        ("a/../b", "climbs out"),  # stays inside, but there is no honest use for '..'
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("", "not a file path"),
        (".", "names no file"),
        (None, "not a file path"),
    ],
)
def test_normalise_rejects(raw, reason):
    with pytest.raises(UnsafePath, match=reason):
        normalise(raw)


@pytest.mark.parametrize(
    ("paths", "reason"),
    [
        (["test/test_main.cu"], "would overwrite the held-out test"),
        (["test//test_main.cu"], "would overwrite the held-out test"),
        (["test_x.py"], "would overwrite the held-out test"),
        (["test/helper.cu"], "where held-out tests live"),
        (["test/deeper/x.cu"], "where held-out tests live"),
        (["test"], "would replace the folder"),
        (["a.cu", "./a.cu"], "are the same file"),
    ],
)
def test_guarded_paths_protect_tests(paths, reason):
    with pytest.raises(UnsafePath, match=reason):
        guarded_paths(paths, TESTS)


def test_guarded_paths_allow_the_rest():
    # A root-level test file fences nothing but itself.
    assert guarded_paths(["solution.py", "src/k.cu", "testing/x.cu"], TESTS) == [
        PurePosixPath("solution.py"),
        PurePosixPath("src/k.cu"),
        PurePosixPath("testing/x.cu"),
    ]


def test_write_file_refuses_links_and_clashes(tmp_path):
    write_file(tmp_path, PurePosixPath("a/b.txt"), "x")
    assert (tmp_path / "a" / "b.txt").read_text() == "x"
    with pytest.raises(UnsafePath, match="clashes"):
        write_file(tmp_path, PurePosixPath("a/b.txt/c"), "x")
    (tmp_path / "link").symlink_to("/etc/hostname")
    with pytest.raises(UnsafePath, match="a folder or a link"):
        write_file(tmp_path, PurePosixPath("link"), "x")
