"""A failure shows its cause first: a build error the compiler's first error (not pip's or a
script's wrapping, nor the last 40 lines), a wrong output the line that differs."""

from __future__ import annotations

from pathlib import Path

import packs
import pytest
from test_pie import SLOW, write_pie

from pytest_codebench.first_error import first_error_line

# pip building a C extension: its own error lines come first, the compiler's inside them.
PIP = """\
  error: subprocess-exited-with-error

  × python setup.py develop did not run successfully.
  │ exit code: 1
  ╰─> [35 lines of output]
      running develop
      building 'scorch._C' extension
      gcc -pthread -fPIC -Iscorch/csrc -c scorch/csrc/ops.cpp -o build/ops.o
      scorch/csrc/ops.cpp: In function 'int scale(int)':
      scorch/csrc/ops.cpp:12:5: error: 'retrun' was not declared in this scope
         12 |     retrun x * 2;
      scorch/csrc/ops.cpp:14:1: error: expected ';' before '}' token
      error: command '/usr/bin/gcc' failed with exit code 1
      [end of output]
ERROR: Failed building editable for scorch
"""


@pytest.mark.parametrize(
    ("output", "first"),
    [
        (PIP, "scorch/csrc/ops.cpp:12:5: error: 'retrun' was not declared in this scope"),
        (
            'x.cu(7): error: identifier "blockIdx" is undefined\n1 error detected',
            'x.cu(7): error: identifier "blockIdx" is undefined',
        ),
        (
            "In file included from x.cu:1:\nx.cu:3:10: fatal error: cudnn.h: No such file\ncompilation terminated.",
            "x.cu:3:10: fatal error: cudnn.h: No such file",
        ),
        (
            "/usr/bin/ld: a.o: in function `main':\na.c:(.text+0x9): undefined reference to `add'\n"
            "collect2: error: ld returned 1 exit status",
            "a.c:(.text+0x9): undefined reference to `add'",
        ),
        (
            'Traceback (most recent call last):\n  File "setup.py", line 3\n'
            "ModuleNotFoundError: No module named 'torch'",
            "ModuleNotFoundError: No module named 'torch'",
        ),
        ("make: *** [all] Error 2", "make: *** [all] Error 2"),
        ("building...\ndone", None),
    ],
)
def test_the_first_error_line_is_the_compilers_first(output: str, first: str | None) -> None:
    assert first_error_line(output) == first


def test_a_build_error_shows_the_compilers_first_error_first(pytester: pytest.Pytester, codebench) -> None:
    """The build wraps the compiler as pip does: a line of its own first, 45 after."""
    build = packs.problem("T/1")["build_command"]
    wrapped = f"echo '  error: subprocess-exited-with-error'; {build}; s=$?; seq 45; exit $s"
    problems = [packs.problem("T/1", min_cuda_toolkit=None, build_command=wrapped)]
    typo = '#include "add.h"\nint add(int a, int b) { retrun a + b; }\n'
    run = codebench(
        *packs.pack_args(pytester.path, problems, [packs.solution("T/1", typo)]), "--codebench-run-without-gpu"
    )
    run.result.assert_outcomes(failed=1)
    assert run.outcome("T/1[0]") == "build_error"
    message = run.items["T/1[0]"]["message"]
    headline = message.splitlines()[0]  # JUnit's message attribute: the reason
    assert "error" in headline and "retrun" in headline and "subprocess-exited" not in headline
    assert headline.endswith("(build failed)")


def test_a_wrong_output_shows_the_mismatch_not_the_output(pytester: pytest.Pytester, codebench) -> None:
    noisy = "n = int(input())\nfor i in range(60):\n    print(i)\n"
    config = write_pie(pytester.path, [{"input": SLOW, "generated_answers": [noisy]}])
    run = codebench("--codebench-config", str(config), benchmark="pie")
    run.result.assert_outcomes(failed=1)
    item = run.items["p1/s1[0]"]
    assert item["properties"]["category"] == "wrong_output"
    assert "first mismatch at line 1: expected " in item["message"]
    assert "--- output (tail) ---" not in item["message"]
    assert "\n59\n" not in item["message"] + "\n"
    assert Path(item["message"].rsplit("candidate log: ", 1)[1].split()[0]).exists()  # the output is in its log
