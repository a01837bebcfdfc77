"""Our CUPTI profiler library (``profiler/cupti_profile.cpp``), built where commands run.

Built with nvcc against the CUPTI of the toolkit nvcc belongs to, on first use, once per runner
fingerprint, toolkit and source (every process of a run asks once; every run after the first
finds it in the cache), kept read-only under the cache directory (preload).
What the library does and how its output is read: perf.profilers.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path

from pytest_codebench.context import RunContext
from pytest_codebench.runners import Runner

from ..preload import PreloadLibrary, Recipe, build_cached

SOURCE = Path(__file__).with_name("cupti_profile.cpp")
LIBRARY = "libcodebench_cupti.so"
ONCE_KEY = "computeeval-cupti"
PROBE_TIMEOUT = 120
BUILD_TIMEOUT = 300

# Where the toolkit nvcc belongs to keeps CUPTI: extras/CUPTI in NVIDIA's installers, the
# target folder or the root in some packagings. Prints nvcc's release, then CUPTI's headers and
# library, or why there is none (status 3).
_PROBE = r"""
version=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*') || {
    echo "no CUDA toolkit: nvcc is not on PATH"; exit 3; }
# nvcc's dry run names its installation (the nvcc on PATH may be a wrapper script elsewhere).
top=$(nvcc -dryrun -o probe.out -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1)
root=$(cd "${top:-$(dirname "$(readlink -f "$(command -v nvcc)")")/..}" && pwd -P)
echo "version=$version"
for dir in "$root/extras/CUPTI" "$root"/targets/*-linux "$root"; do
    [ -f "$dir/include/cupti.h" ] || continue
    for file in "$dir"/lib64/libcupti.so "$dir"/lib/libcupti.so "$dir"/lib64/libcupti.so.* "$dir"/lib/libcupti.so.*; do
        [ -f "$file" ] && { echo "include=$dir/include"; echo "library=$file"; exit 0; }
    done
done
echo "no CUPTI in this toolkit ($root has no extras/CUPTI/include/cupti.h and lib64/libcupti.so)"; exit 3
"""
_BUILD = (
    "nvcc -shared -std=c++17 -O2 -Xcompiler -fPIC -I{include} -o {partial} {source} {library} -ldl"
    " -Xlinker -rpath -Xlinker {libdir} && mv -f {partial} {target}"
)


def build_cupti(context: RunContext, runner: Runner) -> PreloadLibrary:
    """Our CUPTI library for ``runner``'s machine and toolkit, built once (every process of a run
    asks once; every run after the first finds it in the cache)."""

    def compute() -> PreloadLibrary:
        probe = context.run_dir / "probe"
        probe.mkdir(parents=True, exist_ok=True)
        found = runner.run(_PROBE, cwd=probe, timeout=PROBE_TIMEOUT)
        if not found.ok:
            return {"error": found.tail(1) if found.exit_code == 3 else f"probing CUPTI failed: {found.tail(5)}"}
        where = dict(line.split("=", 1) for line in found.output.splitlines() if "=" in line)
        paths = {name: shlex.quote(where[name]) for name in ("include", "library")}
        libdir = shlex.quote(os.path.dirname(where["library"]))
        recipe = Recipe(
            kind="cupti",
            source=SOURCE,
            library=LIBRARY,
            script=lambda partial: _BUILD.format(
                **paths, libdir=libdir, source=SOURCE.name, partial=partial, target=LIBRARY
            ),
            identity="\0".join([runner.fingerprint(), where["version"], where["include"], where["library"]]),
            timeout=BUILD_TIMEOUT,
        )
        built = build_cached(context, runner, recipe)
        if "error" in built:
            return {"error": f"the CUPTI profiler does not build here: {built['error']}"}
        return built

    fingerprint = hashlib.sha256(runner.fingerprint().encode()).hexdigest()[:16]
    built: PreloadLibrary = context.once(f"{ONCE_KEY}-{fingerprint}", compute)
    return built
