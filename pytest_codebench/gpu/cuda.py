"""What CUDA this machine offers: GPUs through the driver, and the toolkit nvcc belongs to.

Probing the driver happens in a child process: initialising CUDA inside pytest would tie a
driver context to a process that then forks workers and subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

if TYPE_CHECKING:
    from ..context import RunContext
    from ..runners import GpuProbe, Runner

# Run with `python -c`; prints one JSON object: {"gpus": [...]} or {"error": "..."}.
_PROBE = r"""
import ctypes, json
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as exc:
    print(json.dumps({"error": "no CUDA driver (libcuda.so.1 cannot be loaded)"})); raise SystemExit
def check(result, what):
    if result != 0:
        print(json.dumps({"error": f"{what} failed with CUDA error {result}"})); raise SystemExit
check(cuda.cuInit(0), "cuInit")
count = ctypes.c_int()
check(cuda.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
gpus = []
for index in range(count.value):
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), index), "cuDeviceGet")
    name = ctypes.create_string_buffer(256)
    check(cuda.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, device), "compute capability")
    check(cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, device), "compute capability")
    gpus.append({"index": index, "name": name.value.decode(), "compute_capability": f"{major.value}.{minor.value}"})
print(json.dumps({"gpus": gpus}))
"""

# Data-centre parts, by the model names NVIDIA gives them (the official harness's notion).
_DATACENTER = re.compile(
    r"\b(A100|A30|A40|A10|A16|A2|H100|H200|H20|H800|GH200|B100|B200|GB200|L4|L40S?|T4|V100|P100)\b"
)


def probe_gpus(timeout: float = 60) -> GpuProbe:
    """{"gpus": [{"index", "name", "compute_capability"}...]}, or {"error": why there is none}."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"the CUDA driver did not answer within {timeout:.0f} s"}
    try:
        return cast("GpuProbe", json.loads(done.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError):
        return {"error": f"the GPU probe failed: {done.stderr.strip()[-500:]}"}


class Toolkit(TypedDict, total=False):
    """The CUDA toolkit commands build with, or ``error`` saying why there is none."""

    #: nvcc's release, ``major.minor``.
    version: str
    #: Where the toolkit is installed, as nvcc's dry run names it.
    root: str | None
    #: The folders nvcc links from.
    library_dirs: list[str]
    error: str


class Machine(TypedDict):
    """What the commands of a run get: the toolkit and the GPUs."""

    toolkit: Toolkit
    gpu: GpuProbe


def probe_machine(context: RunContext, runner: Runner) -> Machine:
    """The toolkit and the GPUs ``runner``'s commands get (the GPUs as the probe hook says)."""
    workdir = context.run_dir / "probe"
    workdir.mkdir(exist_ok=True)
    config = context.config
    return {"toolkit": probe_toolkit(runner, workdir), "gpu": config.hook.pytest_codebench_probe_gpus(config=config)}


def is_datacenter(name: str) -> bool:
    return bool(_DATACENTER.search(name))


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


# Run by a runner, so that the toolkit probed is the one commands will use (a container's).
# nvcc's dry run names its own installation (TOP) and the folders it links from (LIBRARIES).
_TOOLKIT_PROBE = r"""
nvcc --version || exit 127
echo '--- dryrun'
nvcc -dryrun -o probe.out -x cu /dev/null 2>&1 | grep -E '^#\$ (TOP|LIBRARIES)='
true
"""
# Links an empty host program against each library in turn, the way the build would: the
# linker's answer covers nvcc's folders, the system's and anything LIBRARY_PATH adds.
_LINK_PROBE = r"""
printf 'int main(void) { return 0; }\n' > link-probe.c
for name in "$@"; do
    nvcc -o link-probe.out link-probe.c "-l$name" >/dev/null 2>&1 && echo "linked $name"
done
true
"""


def probe_toolkit(runner: Runner, workdir: Path) -> Toolkit:
    """nvcc's release and where it lives: {"version": "13.0", "root": ..., "library_dirs":
    [...]}, or {"error": ...} without a toolkit."""
    result = runner.run(_TOOLKIT_PROBE, cwd=workdir, timeout=120)
    if result.exit_code == 127:
        return {"error": runner.missing("nvcc") or "no CUDA toolkit: nvcc is not on PATH"}
    if not result.ok:
        return {"error": f"nvcc failed: {result.tail(5)}"}
    version, _, dryrun = result.output.partition("--- dryrun")
    match = re.search(r"release (\d+\.\d+)", version)
    if match is None:
        return {"error": f"cannot read nvcc's release from: {version.strip()[-200:]}"}
    top = re.search(r"^#\$ TOP=(.*)$", dryrun, re.MULTILINE)
    libraries = re.search(r"^#\$ LIBRARIES=(.*)$", dryrun, re.MULTILINE)
    return {
        "version": match.group(1),
        "root": os.path.normpath(top.group(1).strip()) if top else None,
        "library_dirs": [os.path.normpath(d) for d in re.findall(r'-L"?([^"\s]+)', libraries.group(1))]
        if libraries
        else [],
    }


def linkable_libraries(runner: Runner, workdir: Path, names: list[str]) -> set[str]:
    """Which of ``names`` a build can link with ``-lNAME`` through ``runner``'s nvcc."""
    valid = [name for name in names if re.fullmatch(r"[\w+.-]+", name)]
    if not valid:
        return set()
    result = runner.run(_LINK_PROBE.replace('"$@"', " ".join(valid)), cwd=workdir, timeout=120)
    return set(re.findall(r"^linked (\S+)$", result.output, re.MULTILINE)) & set(valid)
