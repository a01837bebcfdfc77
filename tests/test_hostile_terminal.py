"""No model's text may act on the terminal or the page that shows it: an ESC sequence in a task
id, a solution set's name or a compiler's error (which quotes the model's source) could clear
the screen, recolour a line, retitle the window or print ``all 9 passed`` over a failure; a CR
or a backspace could overwrite a line, a bidi override reverse one. Each such character is shown
as its escape (``\\x1b``) wherever the harness prints (``names.escape_controls``): pytest's own lines,
the terminal summary, the markdown report, ``codebench merge``.

The attack plays them all through a real run, serial and under xdist; beside it, honest names
(letters of any script, an emoji, tabs in a compiler's message) shown as they are."""

from __future__ import annotations

import json

import packs
import pytest

from conftest import XDIST_MODES
from pytest_codebench.names import escape_controls

# What a terminal acts on: clear the screen and home the cursor, green "passed" over the line,
# retitle the window (OSC ... BEL), a CR, a backspace, a bidi override, a C1 control (CSI).
ACTING = "\x1b[2J\x1b[H\x1b[32mall passed\x1b]0;owned\x07\r\x08\u202edeliaf\x9b31m"
# The characters that must never reach the terminal or the markdown.
FORBIDDEN = ["\x1b", "\x07", "\r", "\x08", "\u202e", "\x9b"]
HONEST_SET = "org__model-7b@v2"
# A task id in another script, shown as it is.
HONEST_ID = "T/模型-1"


def test_printable_shows_what_acts_and_keeps_the_rest() -> None:
    for honest in ["gpt-5", HONEST_SET, HONEST_ID, "👩‍💻", "modèle à l'œil", "a\tb c", "ø∑π"]:
        assert escape_controls(honest, keep="\t") == honest
    shown = escape_controls(ACTING)
    assert not any(char in shown for char in FORBIDDEN)
    assert shown.startswith("\\x1b[2J\\x1b[H\\x1b[32mall passed") and "\\u202edeliaf" in shown
    assert escape_controls("one\ntwo") == "one\\ntwo" and escape_controls("one\ntwo", keep="\n") == "one\ntwo"
    assert escape_controls("bad\udcffutf8") == "bad\\udcffutf8"  # a lone surrogate, as before


# The model's own text, where a compiler and a failing test quote it.
LOUD_SOURCE = f'#include "add.h"\n#error {ACTING}\nint add(int a, int b) {{ return a + b; }}\n'
LOUD_TEST_OUTPUT = (
    '#include <stdio.h>\n#include "add.h"\n'
    'int add(int a, int b) { fputs("\\x1b[2J\\x1b[32m9 passed\\r\\x1b]0;owned\\x07", stdout); return a - b; }\n'
)


@pytest.mark.parametrize("xdist", list(XDIST_MODES.values()), ids=list(XDIST_MODES))
def test_no_escape_sequence_of_a_model_reaches_the_terminal_or_the_markdown(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A hostile set (a task id acts on the terminal; one build error and one test's output
    quote escape sequences) beside an honest set: each item gets its right verdict, every name
    and quote is shown (escaped), and no byte of them acts anywhere."""
    ids = [HONEST_ID, f"T/{ACTING}"]
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem(task_id) for task_id in ids])
    sets = pytester.path / "sets"
    sets.mkdir()
    loud = [packs.solution(HONEST_ID, LOUD_SOURCE), packs.solution(ids[1], LOUD_TEST_OUTPUT)]
    packs.write_solutions(sets / "loud-solutions.tar.gz", loud)
    packs.write_solutions(sets / f"{HONEST_SET}-solutions.tar.gz", [packs.solution(task_id) for task_id in ids])
    args = ["--codebench-dataset", str(dataset), "--codebench-solutions", str(sets), "--codebench-run-without-gpu"]
    outputs = ["--codebench-report", "r.json", "--codebench-markdown", "r.md", "--color=no", "-rA", "-v"]
    result = pytester.runpytest_subprocess("--codebench=computeeval", *xdist, *args, *outputs)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, output
    report = json.loads((pytester.path / "r.json").read_text())
    assert {(item["model"], item["task_id"]): item["outcome"] for item in report["items"]} == {
        (HONEST_SET, HONEST_ID): "passed",
        (HONEST_SET, escape_controls(ids[1])): "passed",
        ("loud", HONEST_ID): "build_error",
        ("loud", escape_controls(ids[1])): "test_failed",
    }
    markdown = (pytester.path / "r.md").read_text()
    for text in (output, markdown):
        assert not [char for char in FORBIDDEN if char in text], text
    # Shown, not hidden: the task id escaped (a name: each character visible), the compiler's
    # quote of the source and the test's own output with their sequences taken out (runners.text).
    assert f"T/{escape_controls(ACTING)}[loud:0]" in output
    assert "#error all passed" in output and "9 passed" in output
    assert HONEST_ID in output and HONEST_SET in markdown


def test_a_usage_error_quotes_a_hostile_file_name_escaped(pytester: pytest.Pytester) -> None:
    """A file of answers whose name acts on the terminal is refused as a set's name (a usage
    error, as before); the error names it escaped. The control: the same error for a plain
    name quotes it as it is."""
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem("T/1")])
    for name, shown in [(f"loud{ACTING}", f"loud{escape_controls(ACTING)}"), ("bad name", "bad name")]:
        path = packs.write_solutions(pytester.path / f"{name}-solutions.tar.gz", [packs.solution("T/1")])
        result = pytester.runpytest_subprocess(
            "--codebench=computeeval", "--codebench-dataset", str(dataset), "--codebench-solutions", str(path)
        )
        output = result.stdout.str() + result.stderr.str()
        assert result.ret == pytest.ExitCode.USAGE_ERROR and f"'{shown}' cannot name a solution set" in output, output
        assert not [char for char in FORBIDDEN if char in output], output


def test_merge_prints_the_names_of_hostile_reports_escaped(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``codebench merge`` prints the merged table from part reports, files anyone may hand it:
    a model's name that acts on the terminal is shown escaped there; the honest one as it is."""
    from pytest_codebench.reports.merge import main

    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem("T/1")])
    sets = pytester.path / "sets"
    sets.mkdir()
    for name in ("loud", HONEST_SET):
        packs.write_solutions(sets / f"{name}-solutions.tar.gz", [packs.solution("T/1")])
    args = ["--codebench-dataset", str(dataset), "--codebench-solutions", str(sets), "--codebench-run-without-gpu"]
    result = pytester.runpytest_subprocess("--codebench=computeeval", *args, "--codebench-report", "part.json")
    assert result.ret == 0, result.stdout.str()
    part = pytester.path / "part.json"
    data = json.loads(part.read_text())
    for item in data["items"]:
        if item["model"] == "loud":
            item["model"] = f"loud{ACTING}"
    part.write_text(json.dumps(data))
    assert main(["merge", str(part), "-o", str(pytester.path / "all.json")]) == 0
    printed = capsys.readouterr().out
    assert f"loud{escape_controls(ACTING)}" in printed and HONEST_SET in printed
    assert not [char for char in FORBIDDEN if char in printed], printed
