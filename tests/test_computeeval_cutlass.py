"""The cutlass and cute-dsl groups: a machine without CUTLASS's headers, or without the CuTe
DSL's Python package, cannot grade their problems (skipped with the reason, never failed)."""

from __future__ import annotations

import packs

from pytest_codebench.benchmarks.computeeval import cutlass

FORCE = "--codebench-run-without-gpu"
GEMM_TEST = '#include <cutlass/cutlass.h>\n#include "add.h"\nint main(void) { return add(2, 3) != 5; }\n'
DSL_TEST = "import cutlass\nimport cutlass.cute as cute\n"


def test_what_a_problem_needs_comes_from_its_group_and_its_tests():
    assert cutlass.needs(packs.problem("T/1")) == set()
    assert cutlass.needs(packs.problem("T/1", group="cutlass")) == {"cutlass"}
    assert cutlass.needs(packs.problem("T/1", group="cute-dsl", type="cuda_python")) == {"cute-dsl"}
    # A test of another group that includes CUTLASS or CuTe, or imports the DSL, needs it too.
    gemm = packs.problem("T/1", test_files=[{"path": "test/t.cu", "content": GEMM_TEST}])
    assert cutlass.needs(gemm) == {"cutlass"}
    cute = packs.problem("T/1", test_files=[{"path": "test/t.cu", "content": "#include <cute/tensor.hpp>\n"}])
    assert cutlass.needs(cute) == {"cutlass"}
    dsl = packs.problem("T/1", test_files=[{"path": "test_t.py", "content": DSL_TEST}])
    assert cutlass.needs(dsl) == {"cute-dsl"}
    # Only real includes and imports: a comment or a word in a string is not one.
    words = packs.problem("T/1", test_files=[{"path": "t.py", "content": "# uses cutlass\nx = 'import cutlass'\n"}])
    assert cutlass.needs(words) == set()
    # A problem that ships the headers in its own files needs nothing of the machine.
    shipped = [{"path": "include/cutlass/cutlass.h", "content": ""}]
    assert cutlass.needs(packs.problem("T/1", group="cutlass", context_files=shipped)) == set()


def test_the_rule_names_what_is_missing_and_how_to_get_it():
    flags = cutlass.include_flags("nvcc -I include -I$CUTLASS_PATH/include -isystem /opt/c -o t.out t.cu")
    assert flags == "-I include -I$CUTLASS_PATH/include -isystem /opt/c"
    assert cutlass.missing({"cutlass"}, {"cutlass": True}, flags) is None
    assert cutlass.missing(set(), {}, "") is None
    reason = cutlass.missing({"cutlass"}, {"cutlass": False}, flags)
    assert reason is not None and "<cutlass/cutlass.h>" in reason and "-I$CUTLASS_PATH/include" in reason
    reason = cutlass.missing({"cute-dsl"}, {"cute-dsl": False}, "")
    assert reason is not None and "nvidia-cutlass-dsl" in reason
    assert cutlass.missing({"cute-dsl"}, {"cute-dsl": True}, "") is None


def test_a_machine_without_cutlass_or_the_cute_dsl_cannot_grade_their_problems(pytester, codebench):
    # This machine has nvcc but neither CUTLASS nor nvidia-cutlass-dsl; the plain problem is
    # the honest control in the same run.
    problems = [
        packs.problem("T/plain"),
        packs.problem("T/gemm", group="cutlass", build_command="nvcc -I include -o test.out solution.c test/t.c"),
        packs.problem("T/dsl", group="cute-dsl"),
    ]
    run = codebench(*packs.pack_args(pytester.path, problems), FORCE)
    assert run.outcome("T/plain[0]") == "passed"
    assert run.outcome("T/gemm[0]") == "skipped"
    assert "CUTLASS's headers are not found here" in run.items["T/gemm[0]"]["message"]
    assert run.outcome("T/dsl[0]") == "skipped"
    assert "pip install nvidia-cutlass-dsl" in run.items["T/dsl[0]"]["message"]
    run.result.assert_outcomes(passed=1, skipped=2)
