"""When two PIE programs are the same code, comments and blank space aside
(pytest_codebench.benchmarks.pie.no_edit): a pure rule on made-up programs."""

from __future__ import annotations

import pytest

from pytest_codebench.benchmarks.pie.no_edit import python_form

SLOW = "import sys\nn = int(input())\nfor i in range(n):\n    print(i)\n"


@pytest.mark.parametrize(
    "candidate",
    [
        SLOW,
        "# faster now\n" + SLOW,
        SLOW.replace("print(i)", "print(i)  # the same"),
        SLOW + "\n\n# the end\n",
        SLOW.replace("    ", "\t"),  # the width of indentation is layout
        SLOW.replace("\n", "\n\n"),
    ],
    ids=["identical", "comment first", "comment at the end of a line", "trailing comment", "tabs", "blank lines"],
)
def test_comments_and_blank_space_make_no_edit(candidate: str) -> None:
    assert python_form(SLOW) == python_form(candidate)


@pytest.mark.parametrize(
    "candidate",
    [
        SLOW.replace("range(n)", "range(n - 1)"),
        '"""A docstring is a string: code."""\n' + SLOW,
        SLOW.replace("print(i)", "print(i); pass"),
        "# -*- coding: latin-1 -*-\n" + SLOW,  # PEP 263: changes how the file is read
        SLOW.replace("for i", "for j").replace("print(i)", "print(j)"),
        SLOW + "print('unclosed\n",  # does not tokenize: only its exact text is the same
        "# a null byte\0 in a comment\n" + SLOW,  # tokenized, never compiled
    ],
    ids=["changed", "docstring", "statement", "coding declaration", "renamed", "broken", "null byte"],
)
def test_any_change_to_code_is_an_edit(candidate: str) -> None:
    assert python_form(SLOW) != python_form(candidate)


def test_a_text_that_does_not_compile_is_only_itself() -> None:
    # tokenize reads a tab as 8 columns; the interpreter refuses one beside 8 spaces (TabError):
    # the same tokens, yet one runs and the other does not.
    spaces = SLOW.replace("    print(i)", "        j = i\n        print(j)")
    mixed = SLOW.replace("    print(i)", "        j = i\n\tprint(j)")
    with pytest.raises(TabError):
        compile(mixed, "prog.py", "exec")
    assert python_form(spaces)[0] == "tokens"
    assert python_form(mixed) != python_form(spaces)


def test_a_comment_the_declared_encoding_cannot_hold_is_an_edit() -> None:
    # The interpreter reads the file's bytes as its PEP 263 line says; tokenize reads the text.
    ascii_slow = "# coding: ascii\n" + SLOW
    assert python_form(ascii_slow + "# plain\n") == python_form(ascii_slow)
    assert python_form(ascii_slow + "# caf\u00e9\n") != python_form(ascii_slow)
    assert python_form(SLOW + "# caf\u00e9\n") == python_form(SLOW)  # UTF-8, the default, holds it
