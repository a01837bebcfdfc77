"""ComputeEval patch solutions (``{"type": "patch", "patch": "<unified diff>"}``): applied to the
context files and graded like the files they leave; a diff that does not apply is the model's
invalid_solution, and one that reaches a held-out test or leaves the workspace is refused as a
file solution is. Every attack runs beside an honest patch in the same run."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import packs
import pytest

from pytest_codebench.benchmarks.computeeval import patched

FORCE = "--codebench-run-without-gpu"
STUB = '#include "add.h"\nint add(int a, int b) {\n    return 0;\n}\n'
FIXED = '#include "add.h"\nint add(int a, int b) {\n    return a + b;\n}\n'
BROKEN = '#include "add.h"\nint add(int a, int b) {\n    return a - b;\n}\n'
FAST_HEADER = packs.HEADER + "static inline int add_fast(int a, int b) { return a + b; }\n"
FAST = '#include "add.h"\nint add(int a, int b) {\n    return add_fast(a, b);\n}\n'


def diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def problem(task_id: str, **fields: object) -> dict:
    """A problem whose context holds a stub solution.c, which a patch must fix."""
    context = [{"path": "include/add.h", "content": packs.HEADER}, {"path": "solution.c", "content": STUB}]
    reference = {"type": "patch", "task_id": task_id, "patch": diff("solution.c", STUB, FIXED)}
    return packs.problem(task_id, context_files=context, baseline_solution=reference, **fields)


def patch(task_id: str, text: str) -> dict:
    return {"schema_version": 1, "type": "patch", "task_id": task_id, "patch": text}


HONEST = diff("solution.c", STUB, FIXED)
# Each attack is an applying diff that also reaches where a solution may not.
TEST_EDIT = HONEST + diff("test/test_main.c", packs.TEST, "int main(void) { return 0; }\n")
TEST_NEW = HONEST + "--- /dev/null\n+++ b/test/extra.c\n@@ -0,0 +1 @@\n+int x;\n"
TEST_DELETE = HONEST + diff("test/test_main.c", packs.TEST, "").replace("+++ b/test/test_main.c", "+++ /dev/null")
RENAME = (
    "diff --git a/solution.c b/test/test_main.c\nsimilarity index 100%\n"
    "rename from solution.c\nrename to test/test_main.c\n"
)
CLIMB = HONEST + "--- /dev/null\n+++ b/../escape.c\n@@ -0,0 +1 @@\n+int x;\n"
ABSOLUTE = HONEST + "--- /dev/null\n+++ /tmp/codebench-patch-escape.c\n@@ -0,0 +1 @@\n+int x;\n"
NO_NEWLINE = "\\ No newline at end of file\n"
LINK = (
    HONEST
    + "diff --git a/inc b/inc\nnew file mode 120000\n--- /dev/null\n+++ b/inc\n@@ -0,0 +1 @@\n+test\n"
    + NO_NEWLINE
)
LINK_OUT = (
    HONEST + "diff --git a/up b/up\nnew file mode 120000\n--- /dev/null\n+++ b/up\n@@ -0,0 +1 @@\n+/etc\n" + NO_NEWLINE
)
BINARY = HONEST + (
    "diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex 0000000..1111111\n"
    "GIT binary patch\nliteral 1\nIcmZo*00001\n\nliteral 0\nHcmV?d00001\n\n"
)


def write(pytester: pytest.Pytester, problems: list[dict], solutions: list[dict]) -> list[str]:
    """The problems as a datapack, the solutions as a bare .jsonl (which may mix both types)."""
    path = pytester.path / "solutions.jsonl"
    path.write_bytes(packs.jsonl(solutions))
    return ["--codebench-dataset", str(packs.write_problems(pytester.path / "p-problems.tar.gz", problems)),
            "--codebench-solutions", str(path)]  # fmt: skip


def test_patches_and_files_mix_in_one_jsonl_and_grade_as_the_files_they_leave(pytester, codebench):
    problems = [problem("T/good"), problem("T/wrong"), packs.problem("T/file")]
    solutions = [
        patch("T/good", HONEST),
        patch("T/wrong", diff("solution.c", STUB, BROKEN)),
        packs.solution("T/file"),  # a file solution beside the patches
    ]
    run = codebench(*write(pytester, problems, solutions), FORCE, "--codebench-graded-solutions=graded")
    assert run.outcome("T/good[0]") == "passed"
    assert run.outcome("T/file[0]") == "passed"
    assert run.outcome("T/wrong[0]") == "test_failed"
    assert "add(2, 3) = -1" in run.items["T/wrong[0]"]["message"]
    # NVIDIA's graded solutions keep the patch as given (their schema's PatchSolution).
    graded = [json.loads(line) for path in (pytester.path / "graded").glob("*.jsonl") for line in path.open()]
    by_task = {line["solution"]["task_id"]: line for line in graded}
    assert by_task["T/good"]["solution"]["type"] == "patch"
    assert by_task["T/good"]["passed"] is True
    assert by_task["T/wrong"]["passed"] is False


def test_a_patch_that_does_not_apply_is_the_models_invalid_solution(pytester, codebench):
    stale = diff("solution.c", STUB.replace("return 0;", "return 1;"), FIXED)
    problems = [problem("T/good"), problem("T/stale"), problem("T/prose")]
    solutions = [patch("T/good", HONEST), patch("T/stale", stale), patch("T/prose", "just add a + b\n")]
    run = codebench(*write(pytester, problems, solutions), FORCE, "--codebench-graded-solutions=graded")
    assert run.outcome("T/good[0]") == "passed"
    assert run.outcome("T/stale[0]") == "invalid_solution"
    # NVIDIA's graded solutions put a refused solution's reason in build_output.
    graded = [json.loads(line) for path in (pytester.path / "graded").glob("*.jsonl") for line in path.open()]
    stale_line = next(line for line in graded if line["solution"]["task_id"] == "T/stale")
    assert stale_line["build_output"].startswith("[VALIDATION ERROR] patch does not apply")
    message = run.items["T/stale[0]"]["message"]
    assert "patch does not apply" in message and "solution.c:1" in message  # which file, which hunk
    assert run.outcome("T/prose[0]") == "invalid_solution"
    assert "not a unified diff" in run.items["T/prose[0]"]["message"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (TEST_EDIT, "would overwrite the held-out test"),
        (TEST_NEW, "where held-out tests live"),
        (TEST_DELETE, "would overwrite the held-out test"),
        (RENAME, "would overwrite the held-out test"),
        (CLIMB, "climbs out with '..'"),
        (ABSOLUTE, "is absolute"),
        (LINK, "a link"),
        (LINK_OUT, "out of the work tree"),
        (BINARY, "binary"),
    ],
    ids=["test-edit", "test-new", "test-delete", "rename-onto-test", "climb", "absolute", "link", "link-out", "binary"],
)
def test_a_patch_reaching_a_test_or_out_of_the_workspace_is_refused(pytester, text, reason):
    # One xdist mode per attack; the honest control shares the run.
    problems = [problem("T/honest"), problem("T/evil")]
    args = write(pytester, problems, [patch("T/honest", HONEST), patch("T/evil", text)])
    result = pytester.runpytest_subprocess("--codebench=computeeval", FORCE, *args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*T/evil[[]0[]]*", f"[[]invalid_solution[]] patch refused*{reason}*"])
    assert not Path("/tmp/codebench-patch-escape.c").exists()
    assert not (pytester.path.parent / "escape.c").exists()


def test_source_references_are_checked_on_the_files_after_the_patch(pytester, codebench):
    header = [{"path": "include/add.h", "content": FAST_HEADER}]
    api = problem("T/api", source_references=["add_fast"])
    api["context_files"][0] = header[0]
    other = problem("T/plain", source_references=["add_fast"])
    other["context_files"][0] = header[0]
    solutions = [patch("T/api", diff("solution.c", STUB, FAST)), patch("T/plain", HONEST)]
    run = codebench(*write(pytester, [api, other], solutions), FORCE)
    assert run.outcome("T/api[0]") == "passed"
    assert run.outcome("T/plain[0]") == "missing_api"
    assert "missing add_fast" in run.items["T/plain[0]"]["message"]


def test_the_checks_and_the_store_see_the_patched_files():
    # The shadowing check, source_references, the store's key and the canaries read these.
    record = problem("T/1")
    assert patched.files_of(record, patch("T/1", HONEST)) == {"solution.c": FIXED}
    new_header = HONEST + "--- /dev/null\n+++ b/stdio.h\n@@ -0,0 +1 @@\n+int x;\n"
    assert set(patched.files_of(record, patch("T/1", new_header))) == {"solution.c", "stdio.h"}
    # Two diffs with one result share a key; one that does not apply keys on its text.
    spaced = HONEST.replace("--- a/solution.c", "--- a/solution.c\t2026-11-26")
    assert patched.answer(record, patch("T/1", HONEST)) == patched.answer(record, patch("T/1", spaced))
    assert patched.answer(record, patch("T/1", "nonsense")) == [["patch", "nonsense"]]
    # Same files written, one context file deleted: another workspace, another key, not the reference.
    deleting = HONEST + diff("include/add.h", packs.HEADER, "").replace("+++ b/include/add.h", "+++ /dev/null")
    assert patched.files_of(record, patch("T/1", deleting)) == patched.files_of(record, patch("T/1", HONEST))
    assert patched.answer(record, patch("T/1", deleting)) != patched.answer(record, patch("T/1", HONEST))
    assert patched.tree_of(record, patch("T/1", deleting)) == {"solution.c": FIXED}
    assert patched.tree_of(record, record["baseline_solution"]) == patched.tree_of(record, patch("T/1", HONEST))


def test_a_patch_planting_a_system_header_is_refused_like_a_file(pytester, codebench):
    planted = HONEST + "--- /dev/null\n+++ b/stdio.h\n@@ -0,0 +1 @@\n+int puts(const char *s);\n"
    problems = [problem("T/honest"), problem("T/shadow")]
    run = codebench(*write(pytester, problems, [patch("T/honest", HONEST), patch("T/shadow", planted)]), FORCE)
    assert run.outcome("T/honest[0]") == "passed"
    assert run.outcome("T/shadow[0]") == "invalid_solution"
    assert "stdio.h" in run.items["T/shadow[0]"]["message"]


def test_the_docker_runner_grades_patches_like_the_local_one(pytester, codebench, engine):
    # The test image is plain Debian with a C compiler: no CUDA toolkit asked for.
    problems = [
        {**problem(task_id), "min_cuda_toolkit": None} for task_id in ("T/good", "T/wrong", "T/stale", "T/evil")
    ]
    solutions = [
        patch("T/good", HONEST),
        patch("T/wrong", diff("solution.c", STUB, BROKEN)),
        patch("T/stale", diff("solution.c", STUB.replace("return 0;", "return 1;"), FIXED)),
        patch("T/evil", TEST_EDIT),
    ]
    args = write(pytester, problems, solutions)
    docker = codebench(*args, FORCE, "--codebench-runner", "docker", "--codebench-docker-base", packs.DOCKER_BASE)
    local = codebench(*args, FORCE)
    expected = {
        "T/good[0]": "passed",
        "T/wrong[0]": "test_failed",
        "T/stale[0]": "invalid_solution",
        "T/evil[0]": "invalid_solution",
    }
    assert {name: item["properties"]["category"] for name, item in docker.items.items()} == expected
    assert {name: item["properties"]["category"] for name, item in local.items.items()} == expected
    assert "codebench: runner docker" in docker.output
