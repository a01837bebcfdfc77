"""Whether a ComputeEval solution is the problem's reference, comments and blank space aside
(pytest_codebench.benchmarks.computeeval.perf.no_edit): a pure rule on made-up sources."""

from __future__ import annotations

import pytest

from pytest_codebench.benchmarks.computeeval.perf.no_edit import code_lines, same_tree

KERNEL = r"""#include <cstdio>
#define N 10
__global__ void fill(int *a) { a[threadIdx.x] = N; }
int main() {
    const char *s = "a//b/*c*/";
    auto r = R"x(// not a comment)x";
    int big = 1'000;
    char slash = '/';
    printf("%s %s %d %c\n", s, r, big, slash);
}
"""


@pytest.mark.parametrize(
    "solution",
    [
        KERNEL,
        "// the reference, improved\n" + KERNEL,
        KERNEL.replace("#define N 10", "#define N 10 /* ten */"),
        KERNEL.replace("int main() {", "int main() {  // entry\n\n"),
        KERNEL.replace("    ", "\t"),
        KERNEL.replace("\n", "\r\n"),
        "/* a block\n   over lines */\n" + KERNEL,
    ],
    ids=["identical", "line comment", "block comment", "comment and blank line", "tabs", "CRLF", "multi-line block"],
)
def test_comments_and_blank_space_are_no_edit(solution: str) -> None:
    assert same_tree({"k.cu": KERNEL}, {"k.cu": solution})


@pytest.mark.parametrize(
    "solution",
    [
        KERNEL.replace("#define N 10", "#define N 11"),
        KERNEL.replace("a//b/*c*/", "a//b/*d*/"),  # inside a string: text, not a comment
        KERNEL.replace("// not a comment", "// not a comment!"),  # inside a raw string
        KERNEL.replace("1'000", "1'001"),  # a digit separator is no character literal
        KERNEL.replace("'/'", "'*'"),
        KERNEL.replace('"%s %s', '"%s  %s'),  # blank space inside a literal is text
        KERNEL.replace("#define N 10\n", "#define N 10 "),  # a line break ends a directive
        KERNEL + '"unterminated\n',
    ],
    ids=["code", "string", "raw string", "digit separator", "character", "spaces in a string", "directive", "broken"],
)
def test_any_change_to_code_is_an_edit(solution: str) -> None:
    assert not same_tree({"k.cu": KERNEL}, {"k.cu": solution})


def test_other_files_and_the_paths_must_match_exactly() -> None:
    assert not same_tree({"k.cu": KERNEL, "build.sh": "nvcc k.cu"}, {"k.cu": KERNEL, "build.sh": "nvcc  k.cu"})
    assert not same_tree({"k.cu": KERNEL}, {"kernel.cu": KERNEL})
    assert not same_tree({"k.cu": KERNEL}, {"k.cu": KERNEL, "extra.h": ""})


def test_a_block_comment_is_one_space() -> None:
    assert code_lines("int/**/x;") == ("int x;",)
    assert code_lines("a = 1; /* unterminated") is None
