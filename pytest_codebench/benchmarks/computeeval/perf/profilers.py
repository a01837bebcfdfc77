"""Profilers for ComputeEval's timing modes (``--codebench-profiler``): what a run did on the GPU.

* ``cupti``: our preload library on CUPTI's activity API (``profiler/cupti_profile.cpp``, built
  and cached by perf.cupti), its sha256 checked before each use. Kernels, memory
  transfers, NVTX ranges and the application's duration. NVIDIA's library writes profile.json
  into the workspace, where the solution can rewrite it; ours writes its totals to a private
  duplicate of stderr, each line marked with a nonce that it takes out of the environment before
  the program's code runs (as the main guard does): a program cannot cheaply forge its profile.
* ``ncu``: Nsight Compute, found on PATH where commands run, read from its CSV log. It replays
  kernels one at a time and measures no transfers and no wall time; its log, written outside
  the workspace, cannot carry a nonce (a program that finds ncu's command line can rewrite it).

Reading a profile is pure (:func:`parse_cupti`, :func:`parse_ncu`), tested on outputs recorded
on a GPU by ``bench/record_profiles.py``.
"""

from __future__ import annotations

import abc
import csv
import dataclasses
import re
import secrets
import shlex
from pathlib import Path
from typing import TypedDict
from urllib.parse import unquote

from pytest_codebench.context import RunContext
from pytest_codebench.runners import Runner, RunResult

from ..preload import checked, hand_nonce
from .cupti import build_cupti

MARK = "codebench-profile"
NONCE_VAR = "CODEBENCH_PROFILE_NONCE"
ROOT_VAR = "CODEBENCH_PROFILE_ROOT"
NONCE_FILE = "nonce"
NCU_LOG = "ncu.csv"
NCU_TIME = "gpu__time_duration.sum"
NCU_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# ERR_NVGPUCTRPERM: no permission for the GPU's counters; the others: ncu cannot run on this
# machine at all. All are the machine's reasons, never the model's.
NCU_UNUSABLE = ("ERR_NVGPUCTRPERM", "Failed to initialize the profiler", "not supported")
NCU_OPTIONS = "--csv --page=details --print-units=base --print-kernel-base=demangled --nvtx".split()
NCU_OPTIONS += ["--clock-control=none", "--target-processes=all"]


class KernelTime(TypedDict):
    """One kernel name: its launches, their time, the DRAM bytes they moved (ncu; else 0)."""

    name: str
    launches: int
    ms: float
    bytes: int


class RangeTime(TypedDict):
    """One NVTX range name (all its occurrences): its kernels' time and launches, its wall time (cupti)."""

    name: str
    kernel_ms: float
    wall_ms: float | None
    launches: int


class Profile(TypedDict):
    """What one run did on the GPU."""

    kernels: list[KernelTime]
    ranges: list[RangeTime]
    #: All memory transfers (HtoD, DtoH, DtoD, memset); 0 where the profiler measures none (ncu).
    memcpy_ms: float
    memcpy_bytes: int
    #: The application's duration, where the profiler measures it (cupti).
    app_ms: float | None


@dataclasses.dataclass(frozen=True)
class ProfiledCommand:
    """A command wrapped to run under a profiler, with what reading its profile needs:
    ``scratch`` is this run's own folder for the profiler's files (made under the folder given)."""

    command: str
    env: dict[str, str]
    shared: dict[Path, bool]
    nonce: str
    scratch: Path


class ProfileError(Exception):
    """Why no profile could be read: the run's own failure, or its records missing or forged."""


class ProfilerUnavailable(ProfileError):
    """The profiler cannot measure on this machine (no permission for the GPU's counters, CUPTI
    unusable): the machine's reason, so perf is skipped, never failed."""


class Profiler(abc.ABC):
    """One profiler, ready for a run's commands (one instance per run and runner)."""

    name: str

    @abc.abstractmethod
    def wrap(self, command: str, scratch: Path) -> ProfiledCommand:
        """``command`` run under the profiler; its files go to a new folder under ``scratch``."""

    @abc.abstractmethod
    def read(self, wrapped: ProfiledCommand, result: RunResult) -> Profile:
        """The profile of the run of ``wrapped``, or :class:`ProfileError`."""


def prepare(context: RunContext, runner: Runner, name: str) -> Profiler | str:
    """The profiler ``name``, built (cupti) or found (ncu) where ``runner``'s commands run; a
    str says why it cannot be used here (perf is then skipped with that reason)."""
    if name == "cupti":
        built = build_cupti(context, runner)
        return CuptiProfiler(Path(built["library"]), built["sha256"]) if "library" in built else built["error"]
    if name == "ncu":
        path = runner.which("ncu")
        return NcuProfiler(path) if path else "Nsight Compute (ncu) is not on PATH where commands run"
    return f"unknown profiler {name!r} (cupti or ncu)"


def _empty() -> Profile:
    return Profile(kernels=[], ranges=[], memcpy_ms=0.0, memcpy_bytes=0, app_ms=None)


def _run_folder(scratch: Path) -> Path:
    """A new folder for one run's profiler files: new, so that the sandbox hands it (and what
    is in it) to the command's user."""
    folder = scratch / f"profile-{secrets.token_hex(6)}"
    folder.mkdir(parents=True)
    return folder


def _failure(result: RunResult, nonce: str = "") -> ProfileError:
    status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    tail = "\n".join(strip_records(result.output, nonce).rstrip("\n").splitlines()[-5:])
    return ProfileError(f"the profiled run failed ({status}): {tail}")


def strip_records(output: str, nonce: str) -> str:
    """``output`` without the profile's own lines (what the program printed)."""
    return re.sub(rf"^{MARK} {re.escape(nonce)} .*\n?", "", output, flags=re.MULTILINE) if nonce else output


class CuptiProfiler(Profiler):
    name = "cupti"

    def __init__(self, library: Path, sha256: str) -> None:
        self.library = library
        self.sha256 = sha256

    def wrap(self, command: str, scratch: Path) -> ProfiledCommand:
        """``command`` with the library preloaded (and NVTX's injection), its nonce handed over as
        :func:`preload.hand_nonce` does (through a file of the run's scratch folder)."""
        checked({"library": str(self.library), "sha256": self.sha256}, "CUPTI profiler")
        folder = _run_folder(scratch)
        secret = folder / NONCE_FILE
        nonce, prologue = hand_nonce(secret, shlex.quote(str(secret)), (NONCE_VAR, ROOT_VAR))
        library = str(self.library)
        return ProfiledCommand(
            command=prologue + command,
            env={"LD_PRELOAD": library, "NVTX_INJECTION64_PATH": library},
            shared={self.library.parent: False, folder: True},
            nonce=nonce,
            scratch=folder,
        )

    def read(self, wrapped: ProfiledCommand, result: RunResult) -> Profile:
        if not result.ok:
            raise _failure(result, wrapped.nonce)
        return parse_cupti(result.output, wrapped.nonce)


def parse_cupti(output: str, nonce: str) -> Profile:
    """The profile in a run's ``output``: the lines the library wrote with this run's ``nonce``,
    ``begin`` first and ``end <count of lines between>`` last. Lines with another nonce (a
    program's forgery, another run's) are ignored; a set that is missing, doubled or cut is an
    error, never a profile."""
    if not re.fullmatch(r"[0-9a-f]{32}", nonce):
        raise ProfileError("no nonce for this run's profile")
    pattern = re.compile(rf"^{MARK} {nonce} (\w+)(?: (.*))?$", re.MULTILINE)
    records = [(m.group(1), m.group(2) or "") for m in pattern.finditer(output)]
    if not records:
        raise ProfileError("no profile records: the program did not exit normally, or closed the profiler's channel")
    kinds = [kind for kind, _ in records]
    ends = kinds.count("end")
    if kinds.count("begin") != 1 or ends != 1 or kinds[0] != "begin" or kinds[-1] != "end":
        raise ProfileError(f"the profile records are doubled or cut ({len(records)} lines, {ends} ends)")
    if records[-1][1] != str(len(records) - 1):
        raise ProfileError(f"the profile records are cut: {len(records) - 1} of {records[-1][1]}")
    profile = _empty()
    try:
        for kind, fields in records[1:-1]:
            _take_record(profile, kind, fields.split(" "))
    except (ValueError, IndexError) as exc:
        raise ProfileError(f"a malformed profile record: {exc}") from None
    return profile


def _take_record(profile: Profile, kind: str, fields: list[str]) -> None:
    if kind == "error":
        raise ProfilerUnavailable(f"CUPTI cannot record here: {unquote(fields[0])}")
    if kind == "lost":
        raise ProfileError(f"CUPTI's records were lost at exit: {unquote(fields[0])}")
    if kind == "dropped":
        raise ProfileError(f"CUPTI dropped {fields[0]} activity records")
    if kind == "kernel":
        kernel = KernelTime(name=unquote(fields[2]), launches=int(fields[0]), ms=int(fields[1]) / 1e6, bytes=0)
        profile["kernels"].append(kernel)
    elif kind == "copy":
        profile["memcpy_ms"] = int(fields[1]) / 1e6
        profile["memcpy_bytes"] = int(fields[2])
    elif kind == "range":
        wall, kernel_ns, launches = int(fields[1]) / 1e6, int(fields[2]) / 1e6, int(fields[3])
        profile["ranges"].append(
            RangeTime(name=unquote(fields[4]), kernel_ms=kernel_ns, wall_ms=wall, launches=launches)
        )
    elif kind == "app":
        profile["app_ms"] = int(fields[0]) / 1e6


class NcuProfiler(Profiler):
    name = "ncu"

    def __init__(self, path: str) -> None:
        self.path = path

    def wrap(self, command: str, scratch: Path) -> ProfiledCommand:
        """ncu runs the command's shell and follows every process it starts; kernel names
        demangled, units unscaled, kernels timed at the clocks they would run at anyway (as
        cupti times them)."""
        folder = _run_folder(scratch)
        options = [*NCU_OPTIONS, f"--metrics={','.join((NCU_TIME, *NCU_BYTES))}", f"--log-file={folder / NCU_LOG}"]
        wrapped = shlex.join([self.path, *options, "sh", "-c", command])
        return ProfiledCommand(command=wrapped, env={}, shared={folder: True}, nonce="", scratch=folder)

    def read(self, wrapped: ProfiledCommand, result: RunResult) -> Profile:
        log = wrapped.scratch / NCU_LOG
        # ncu writes its own errors into the log; the program's output could fake them.
        text = log.read_text(errors="replace") if log.is_file() else ""
        _check_ncu_errors(text)
        if not result.ok:
            raise _failure(result)
        if not text:
            raise ProfileError(f"ncu wrote no log: {result.tail(5)}")
        return parse_ncu(text)


def _check_ncu_errors(text: str) -> None:
    for line in text.splitlines():
        if line.startswith("==ERROR=="):
            error = ProfilerUnavailable if any(sign in line for sign in NCU_UNUSABLE) else ProfileError
            raise error(f"ncu: {line.removeprefix('==ERROR==').strip()}")


class _Launch(TypedDict):
    name: str
    ranges: set[str]
    ns: float
    bytes: float


_TIME_UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_BYTE_UNITS = {"byte": 1.0, "B": 1.0, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6, "Gbyte": 1e9, "GB": 1e9}


def parse_ncu(text: str) -> Profile:
    """The profile in ncu's CSV log (``--page details``: one row per kernel launch and metric,
    after ncu's own ``==PROF==`` lines): per kernel name its launches, time and DRAM bytes; per
    NVTX range (every range open at a launch, push/pop and start/end) its kernels' time."""
    _check_ncu_errors(text)
    lines = [line for line in text.splitlines() if not line.startswith("==")]
    header = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if header is None:
        if "No kernels were profiled" in text:
            return _empty()
        raise ProfileError(f"no CSV in ncu's log: {' '.join(text.split())[-300:]}")
    reader = csv.DictReader(lines[header:])
    nvtx = [name for name in reader.fieldnames or [] if "Push/Pop_Range" in name or "Start/Stop_Range" in name]
    launches: dict[tuple[str, str], _Launch] = {}
    for row in reader:
        metric = row.get("Metric Name") or ""
        if metric != NCU_TIME and metric not in NCU_BYTES:
            continue
        ranges = {name for column in nvtx for name in _range_names(column, row.get(column) or "")}
        key = (row.get("Process ID") or "", row.get("ID") or "")
        launch = launches.setdefault(key, _Launch(name=row.get("Kernel Name") or "", ranges=ranges, ns=0.0, bytes=0.0))
        units = _TIME_UNITS if metric == NCU_TIME else _BYTE_UNITS
        value = _ncu_number(row.get("Metric Value") or "", row.get("Metric Unit") or "", units, metric)
        launch["ns" if metric == NCU_TIME else "bytes"] += value
    return _ncu_profile(list(launches.values()))


def _ncu_number(text: str, unit: str, units: dict[str, float], metric: str) -> float:
    if text.strip() in ("", "n/a") and units is _BYTE_UNITS:
        return 0.0  # DRAM counters some GPUs lack
    if unit not in units:
        raise ProfileError(f"ncu printed {metric} in an unknown unit {unit!r}")
    try:
        return float(text.replace(",", "")) * units[unit]
    except ValueError:
        raise ProfileError(f"ncu printed {metric} as {text!r}") from None


def _range_names(column: str, value: str) -> list[str]:
    """The ranges an NVTX cell names, as ncu prints them: one "Domain:Name:PL_Type:PL_Value:
    CLR_Type:Color:Msg_Type:Msg" record per open range (a thread or range id may lead, as the
    column's header says), each quoted when there are several. A name may hold colons."""
    fields = column.split(":")
    lead = next((i for i, field in enumerate(fields) if field.endswith("_Range")), 1)
    trail = len(fields) - lead - 1
    names = []
    for record in re.findall(r'"([^"]*)"', value) or [value]:
        parts = record.strip().split(":")
        if len(parts) < trail + 2:
            continue
        start = max(0, lead + min(0, len(parts) - len(fields)))
        name = ":".join(parts[start : len(parts) - trail]).strip()
        if name and name not in ("<none>", "none"):
            names.append(name)
    return names


def _ncu_profile(launches: list[_Launch]) -> Profile:
    kernels: dict[str, KernelTime] = {}
    ranges: dict[str, RangeTime] = {}
    for launch in launches:
        name = launch["name"]
        kernel = kernels.setdefault(name, KernelTime(name=name, launches=0, ms=0.0, bytes=0))
        kernel["launches"] += 1
        kernel["ms"] += launch["ns"] / 1e6
        kernel["bytes"] += round(launch["bytes"])
        for range_name in sorted(launch["ranges"]):
            nvtx = ranges.setdefault(range_name, RangeTime(name=range_name, kernel_ms=0.0, wall_ms=None, launches=0))
            nvtx["kernel_ms"] += launch["ns"] / 1e6
            nvtx["launches"] += 1
    return {**_empty(), "kernels": list(kernels.values()), "ranges": list(ranges.values())}
