from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from pytest_codebench.workspace.files import UnsafePath, guarded_paths, normalise, write_file

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
        ("a" * 256, "longer than 255 bytes"),
        ("d/" + "é" * 128, "longer than 255 bytes"),  # bytes, not characters
        ("a\nb.c", "control character"),
        ("a\x1b[31m.c", "control character"),
        ("a\x7f", "control character"),
        ("\ud800.c", "not valid Unicode"),
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


CONTEXT = [PurePosixPath("include/add.h")]


@pytest.mark.parametrize(
    ("paths", "reason"),
    [
        (["include/add.h"], "would overwrite the context file 'include/add.h'"),
        (["./include//add.h"], "would overwrite the context file"),
        (["include"], "would replace the folder of the context file"),
    ],
)
def test_guarded_paths_protect_context_files(paths, reason):
    with pytest.raises(UnsafePath, match=reason):
        guarded_paths(paths, TESTS, CONTEXT)


def test_new_files_beside_context_files_are_fine():
    assert guarded_paths(["include/helper.h", "a" * 255], TESTS, CONTEXT) == [
        PurePosixPath("include/helper.h"),
        PurePosixPath("a" * 255),
    ]


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


def test_write_file_refuses_what_the_filesystem_refuses(tmp_path):
    deep = PurePosixPath(*["d" * 200] * 25, "x.c")
    with pytest.raises(UnsafePath, match="makes a path longer than 4096 bytes"):
        write_file(tmp_path, deep, "x")
    with pytest.raises(UnsafePath, match="content that is not valid Unicode"):
        write_file(tmp_path, PurePosixPath("a.c"), "\ud800")
    assert not (tmp_path / "a.c").exists()


def test_write_file_never_writes_through_a_link_planted_in_its_place(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("keep")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "sub").symlink_to(tmp_path)  # a folder link: the file would land outside
    with pytest.raises(UnsafePath):
        write_file(tmp_path / "ws", PurePosixPath("sub/outside"), "x")
    assert outside.read_text() == "keep"
