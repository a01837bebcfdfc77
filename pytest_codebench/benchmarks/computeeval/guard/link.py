"""The link check of a built workspace (rules in elf), with what it needs from the
machine where the tests run: the names each needed library exports there.

The libraries are the machine's (a container's for the docker runner), so the runner lists
their exports, once per run and library, with binutils' ``nm`` (there wherever a compiler
links); the harness reads the programs themselves from the workspace.
"""

from __future__ import annotations

import hashlib
import shlex

from pytest_codebench.context import RunContext
from pytest_codebench.errors import HarnessError
from pytest_codebench.grading import Grading
from pytest_codebench.runners import Runner

from . import elf

ONCE_KEY = "computeeval-exports"
# The item figure that counts the programs the check read (bench/computeeval_conformance.py sums it).
FIGURE = "linked_programs"
PROBE_TIMEOUT = 120
EXPORTS = "exports.txt"
# Finds a library as the dynamic loader would (LD_LIBRARY_PATH, the loader's cache, the usual
# folders and the CUDA toolkit's), then writes its dynamic exports to a file: a big library's
# list would not fit the runner's output cap.
_PROBE = r"""
soname={soname}
lib=
old_ifs=$IFS; IFS=:
for d in $LD_LIBRARY_PATH; do
    if [ -n "$d" ] && [ -f "$d/$soname" ]; then lib="$d/$soname"; break; fi
done
IFS=$old_ifs
if [ -z "$lib" ]; then
    lib=$(ldconfig -p 2>/dev/null | awk -v n="$soname" '$1 == n && /64/ {{print $NF; exit}}')
fi
for d in /lib64 /usr/lib64 /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib/aarch64-linux-gnu \
         /usr/lib/aarch64-linux-gnu /usr/local/cuda/lib64 /usr/lib /lib; do
    if [ -z "$lib" ] && [ -f "$d/$soname" ]; then lib="$d/$soname"; fi
done
if [ -z "$lib" ]; then : > {exports}; exit 0; fi
command -v nm >/dev/null 2>&1 || {{ echo "no nm (binutils) to list $lib's exports"; exit 127; }}
nm -D --defined-only -P "$lib" > {exports}.partial && mv -f {exports}.partial {exports}
"""


def exports(context: RunContext, runner: Runner, soname: str) -> frozenset[str]:
    """The names the library ``soname`` exports where ``runner``'s commands run (empty when it
    is not found there: the program then does not start). HarnessError when it cannot tell."""

    # One folder per runner and library: two images (a problem's own) are probed apart.
    key = hashlib.sha256(f"{runner.fingerprint()}\0{soname}".encode()).hexdigest()[:16]

    def compute() -> list[str] | str:
        folder = context.run_dir / "probe" / "exports" / key
        folder.mkdir(parents=True, exist_ok=True)
        (folder / EXPORTS).unlink(missing_ok=True)
        script = _PROBE.format(soname=shlex.quote(soname), exports=EXPORTS)
        result = runner.run(script, cwd=folder, timeout=PROBE_TIMEOUT)
        listed = folder / EXPORTS
        if not result.ok or not listed.is_file():
            return f"cannot list the exports of {soname}: {result.tail(3) or 'timed out'}"
        lines = listed.read_text(errors="replace").splitlines()
        return sorted({line.split()[0].split("@", 1)[0] for line in lines if line.strip()})

    found: list[str] | str = context.once(f"{ONCE_KEY}-{key}", compute)
    if isinstance(found, str):
        raise HarnessError(found)
    return frozenset(found)


def check(grading: Grading) -> str | None:
    """Why the programs built in the item's workspace must not run as the problem's test (the
    first program that breaks a rule of elf, with every rule it breaks: the
    model's tampering), else None. Counts the programs read in the figure ``linked_programs``."""
    cache: dict[str, frozenset[str]] = {}

    def exported(soname: str) -> frozenset[str]:
        if soname not in cache:
            cache[soname] = exports(grading.context, grading.runner, soname)
        return cache[soname]

    workspace, read = grading.workspace, 0
    try:
        for path, program in elf.programs(workspace):
            read += 1
            found = elf.violations(program, exported)
            if found:
                return f"the test program {path.relative_to(workspace)}: {'; '.join(found)}"
        return None
    finally:
        grading.figures[FIGURE] = read
