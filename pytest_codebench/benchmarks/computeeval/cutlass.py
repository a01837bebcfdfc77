"""CUTLASS (C++ headers, the ``cutlass`` group) and the CuTe DSL (the Python package ``cutlass``
of ``nvidia-cutlass-dsl``, the ``cute-dsl`` group): whether this machine has what a problem
needs, asked like cuDNN's libraries are (probed once per run and image, through the runner).

How a build finds CUTLASS: CUTLASS is headers only, and NVIDIA's 2026.2 problems name no
install path; their image puts it where the compiler looks. So the probe asks nvcc itself to
preprocess ``#include <cutlass/cutlass.h>`` with the build command's own include flags
(``-I``/``-isystem``, shell variables such as ``$CUTLASS_PATH`` expanded where the build runs),
which covers ``CPATH`` and the compiler's default folders (``/usr/local/include``...) too. A
problem that ships the headers in its own files needs nothing from the machine.

How a test finds the CuTe DSL: ``python3`` on the runner's PATH (what a test command runs)
must find the package ``cutlass``; it is located, never imported (importing wants a GPU).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from pytest_codebench.context import RunContext, slug
from pytest_codebench.gpu import cuda
from pytest_codebench.grading import Grading
from pytest_codebench.runners import Runner

from .rules import unmet_requirement

HEADERS, PACKAGE = "cutlass", "cute-dsl"
# A C++ file that uses CUTLASS or CuTe; a Python file that imports the DSL.
CPP_USE = re.compile(r"^\s*#\s*include\s*[<\"](cutlass|cute)/", re.MULTILINE)
PY_USE = re.compile(r"^\s*(import\s+cutlass\b|from\s+cutlass\b)", re.MULTILINE)
INCLUDE_FLAG = re.compile(r"(?<!\S)(-I\s*\S+|-isystem\s+\S+)")
HEADERS_PROBE = (
    "printf '#include <cutlass/cutlass.h>\\nint main(void) { return 0; }\\n' > cutlass-probe.cu && "
    "nvcc -E -x cu {flags} cutlass-probe.cu -o /dev/null >/dev/null 2>&1 && echo found"
)
PACKAGE_PROBE = (
    "python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(\"cutlass\") is None)' "
    ">/dev/null 2>&1 && echo found"
)
KEY = "computeeval-cutlass"


def needs(record: Mapping[str, Any]) -> set[str]:
    """What the problem needs of the machine: CUTLASS's headers, the CuTe DSL, or neither (by
    its group, or its tests' includes and imports)."""
    tests = [f.get("content") or "" for f in record.get("test_files") or () if isinstance(f, dict)]
    needed = {group for group in (HEADERS, PACKAGE) if record.get("group") == group}
    if any(CPP_USE.search(text) for text in tests):
        needed.add(HEADERS)
    if any(PY_USE.search(text) for text in tests):
        needed.add(PACKAGE)
    if HEADERS in needed and _ships_headers(record):
        needed.discard(HEADERS)
    return needed


def _ships_headers(record: Mapping[str, Any]) -> bool:
    files = [*(record.get("context_files") or ()), *(record.get("test_files") or ())]
    return any(str(f.get("path", "")).endswith("cutlass/cutlass.h") for f in files if isinstance(f, dict))


def include_flags(build_command: str) -> str:
    """The build's include flags, as the probe passes them to nvcc."""
    return " ".join(INCLUDE_FLAG.findall(build_command))


def missing(needed: set[str], found: Mapping[str, bool], flags: str) -> str | None:
    """Why the machine cannot grade the problem (``found``: what the probes found), or None."""
    if HEADERS in needed and not found.get(HEADERS):
        where = f"with the build's include flags {flags}" if flags else "(the build gives no -I flag)"
        return (
            "CUTLASS's headers are not found here: nvcc cannot include <cutlass/cutlass.h> "
            f"{where}, CPATH or its default folders (the cutlass group needs them: install CUTLASS "
            "where the compiler looks, or grade in the problem's base_image)"
        )
    if PACKAGE in needed and not found.get(PACKAGE):
        return (
            "the CuTe DSL is not installed here: python3 cannot find the package cutlass "
            "(the cute-dsl group needs it: pip install nvidia-cutlass-dsl, or grade in the problem's base_image)"
        )
    return None


def unmet(grading: Grading, machine: cuda.Machine, linkable: set[str]) -> str | None:
    """unmet_requirement, then what the problem needs of CUTLASS and the CuTe DSL."""
    record, runner = grading.case.record, grading.runner
    reason = unmet_requirement(record, machine, linkable)
    needed = needs(record)
    if reason is not None or not needed:
        return reason
    flags = include_flags(record.get("build_command") or "")
    image = f"@{slug(runner.case_image)}" if runner.case_image else ""
    found = {}
    for need in sorted(needed):
        command = HEADERS_PROBE.replace("{flags}", flags) if need == HEADERS else PACKAGE_PROBE
        asked = hashlib.sha256(flags.encode()).hexdigest()[:16] if need == HEADERS else ""  # per include flags
        ask = functools.partial(_probe, grading.context, runner, command)
        found[need] = bool(grading.context.once(f"{KEY}-{need}{image}-{asked}", ask))
    return missing(needed, found, flags)


def _probe(context: RunContext, runner: Runner, command: str) -> bool:
    workdir = context.run_dir / "probe"
    workdir.mkdir(parents=True, exist_ok=True)
    result = runner.run(command, cwd=workdir, timeout=120)
    return result.ok and "found" in result.output
