"""The clock. bwrap takes 5-9 ms to set a sandbox up, which must not count in timed runs (PIE,
performance). ``RunResult.seconds`` is therefore the command's own wall time, clocked by a bash
inside the sandbox around ``sh -c COMMAND`` with ``$EPOCHREALTIME``, and written after the command
ended to a pipe descriptor the command does not inherit. A command runs as the same uid as that
bash and could reach the pipe through ``/proc/PPID/fd``, so: before writing, the bash kills every
other process of the sandbox (``kill -9 -1``: none can write or read the pipe any more), and the
harness takes the inner time only when the pipe holds exactly one well-formed line whose exit
status matches bwrap's and whose time lies within the outer clock's. A forged, doubled, partial
or missing line, or a blocked pipe, falls back to the outer clock (which includes the sandbox's
start-up) or a timeout: forging can only cost the command time, never save it.
"""

from __future__ import annotations

import os
import re

# Sets the rlimits ($3), runs ``sh -c "$1"`` and writes "START END STATUS" to descriptor $2,
# which sh does not get; bash's own messages ("Segmentation fault") go to /dev/null, the
# command's stderr to the caller's. Everything else in the sandbox dies before the line is
# written (module docstring). A limit that cannot be set ends it before the command runs, with
# bash's message and no time line. The limits are bash's ``ulimit`` rather than a ``prlimit``
# exec before it: one program fewer to start in every command (about a millisecond).
# Where the command failed, the clock first looks whether /tmp or /dev/shm is full (a write of
# 64 KiB there fails), before the kill frees what a process left running holds: the line names
# them, so the failure can name the limit (``sandbox.full_mounts``).
CLOCK = (
    'ulimit $3 || exit 125; c=$2; exec {err}>&2 2>/dev/null; s=$EPOCHREALTIME; sh -c "$1" 2>&$err {err}>&- {c}>&-; '
    "r=$?; e=$EPOCHREALTIME; f=; [ $r = 0 ] || for d in /tmp /dev/shm; do "
    'printf %65536s "" >$d/.codebench-free || f="$f $d"; done; kill -9 -1; echo "$s $e $r$f" >&$c; exit $r'
)
CLOCK_LINE = re.compile(rb"(\d+)\.(\d{6}) (\d+)\.(\d{6}) (\d+)((?: /tmp| /dev/shm){0,2})\n")


def inner_seconds(clock: bytes, exit_code: int, outer: float) -> float | None:
    """The command's own time from the clock line, or None where the line cannot be trusted."""
    match = CLOCK_LINE.fullmatch(clock)
    if match is None or int(match.group(5)) != exit_code:
        return None
    start = int(match.group(1)) * 1_000_000 + int(match.group(2))
    end = int(match.group(3)) * 1_000_000 + int(match.group(4))
    seconds = (end - start) / 1e6
    return seconds if 0 <= seconds <= outer else None


def full_folders(clock: bytes) -> list[str]:
    """The folders the clock line says the failed command left full (``/tmp``, ``/dev/shm``)."""
    match = CLOCK_LINE.fullmatch(clock)
    return match.group(6).decode().split() if match is not None else []


def read_clock(fd: int) -> bytes:
    """What the clock pipe holds once every writer is gone (a little more than a line's worth)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 256)
    except BlockingIOError:
        return b""
