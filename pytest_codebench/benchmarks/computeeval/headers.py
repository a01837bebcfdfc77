"""The header names of the machine the commands build on: the C and C++ compilers' system
search folders and the CUDA toolkit's include folder, as paths relative to them
(``stdio.h``, ``sys/types.h``, ``vector``, ``cuda_runtime.h``, ``cub/cub.cuh``...).

A solution file of such a name, reached through the build's ``-I`` folders, would replace the
real header for the held-out test (see :func:`rules.shadowed_header`). Listed once
per run where the commands run (a container lists its own), about 0.3 s.
"""

from __future__ import annotations

from pathlib import Path

from pytest_codebench.context import RunContext, slug
from pytest_codebench.runners import Runner

ONCE_KEY = "computeeval-system-headers"
LISTING = "system-headers.txt"
# Prints nothing itself: the list goes to a file, which the output cap cannot cut.
_LIST = r"""
dirs=$( (cc -E -v -x c /dev/null; c++ -E -v -x c++ /dev/null) 2>&1 </dev/null \
    | sed -n '/search starts here/,/End of search/p' | grep '^ ' )
if nvcc=$(command -v nvcc); then
    dirs="$dirs $(dirname "$(dirname "$(readlink -f "$nvcc")")")/include"
fi
for d in $dirs; do
    [ -d "$d" ] && (cd "$d" && find -L . \( -type f -o -type l \) -print 2>/dev/null)
done | sed 's|^\./||' | sort -u > {listing}
"""


def system_headers(context: RunContext, runner: Runner) -> frozenset[str]:
    """The header names commands find in system and toolkit folders; empty when the machine
    has no compiler to ask (then there is nothing a solution file could shadow either)."""

    # A problem's own image (base_image) has headers of its own.
    suffix = f"-{slug(runner.case_image)}" if runner.case_image else ""

    def compute() -> list[str]:
        workdir = context.run_dir / "probe" / f"headers{suffix}"
        workdir.mkdir(parents=True, exist_ok=True)
        listing = workdir / LISTING
        listing.unlink(missing_ok=True)
        runner.run(_LIST.replace("{listing}", LISTING), cwd=workdir, timeout=120)
        return _read(listing)

    return frozenset(context.once(ONCE_KEY + suffix, compute))


def _read(listing: Path) -> list[str]:
    try:
        text = listing.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line]
