"""TensorBench's settings, declared once as module constants (``settings[RERUNS]``) and
checked when pytest starts: a bad value stops the run before anything is graded."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from pytest_codebench.options import Option, bool_option, choice, text_option

from .cache import CHOICES


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def _version(text: str) -> str:
    text = text.strip()
    if text.lower() in ("any", "none"):
        return ""
    constraint = text if text[:1] in "=<>!~" else f"=={text}"
    try:  # checked as pip reads it, so that a typo stops the run before any environment is built
        SpecifierSet(constraint)
    except InvalidSpecifier:
        raise ValueError(f"not a version or pip constraint (2.13.0, >=2.12,<3, or any): {text!r}") from None
    return constraint


RERUNS = Option(
    "reruns",
    "Run failed tests again up to N times to report the flaky ones (the verdict stands).",
    1,
    _count,
    "N",
    ini_type="int",
)
FAIL_VACUOUS = bool_option(
    "fail-vacuous", "Fail items whose patch adds tests that assert nothing (else they are only listed)."
)
ALLOW_HARNESS_EDITS = bool_option(
    "allow-harness-edits",
    "Grade items whose patch changes how tests are collected or reported (pytest configuration, conftest hooks, "
    "plugins); by default they fail. Such edits are named (harness_edits) either way.",
)
TORCH = Option(
    "torch",
    "Torch version installed where a repository requires torch (a pip constraint); 'any' leaves it free.",
    "==2.13.0",
    _version,
    "VERSION",
)
# Read only where the runner's commands use this machine's programs: a container brings its own.
TENSORBENCH_PYTHON = Option(
    "tensorbench-python", "Python that local environments are made with.", "python3.11", str, "PATH"
)
RUN_TESTS = text_option(
    "run-tests",
    "The dataset's run_tests.sh, run as the tasks' test_command (default: the harness's own: rebuild, then pytest).",
    metavar="PATH",
)
TENSORBENCH_DOCKERFILE = text_option(
    "tensorbench-dockerfile",
    "The dataset's Dockerfile: environment images are built from it (FROM ${BASE}) under the Docker runner.",
    metavar="PATH",
)
COMPILER_CACHE = Option(
    "compiler-cache",
    "Compiler cache items compile through: auto (ccache where the commands run, else sccache), "
    "ccache, sccache or none.",
    "auto",
    choice(*CHOICES),
    "KIND",
)

#: In the order ``pytest --help`` lists them.
OPTIONS = (
    RERUNS,
    FAIL_VACUOUS,
    ALLOW_HARNESS_EDITS,
    TORCH,
    TENSORBENCH_PYTHON,
    RUN_TESTS,
    TENSORBENCH_DOCKERFILE,
    COMPILER_CACHE,
)
