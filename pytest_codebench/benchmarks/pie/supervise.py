"""The supervisor of a program counted by callgrind: a script the harness sends into the
program's sandbox (its source, compressed, run by ``python -c``), never imported by the harness.

Callgrind counts inside the program's own process, so whatever it writes the program can
write too: valgrind refuses ``write`` and ``close`` on its log's descriptor to the program, not
``dup``, and the runner's output is a pipe any process of the sandbox can open again through
``/proc``. A count line is therefore a claim (a program kills a child before callgrind writes
its count, and writes one of its choosing for it). What backs it is the kernel's: the CPU time
of every process the program ran, which the harness checks the count against (see
``measure.incredible`` and ``measure.unproven``), and the pids its PID namespace handed out.

The supervisor is out of the program's reach (not dumpable: no ``ptrace``, no
``/proc/<pid>/fd``). It reads callgrind's log on a pipe (its write end kept at the top
descriptor, which valgrind keeps for itself): a program can add lines to a pipe, never shut it
(a socket it could ``shutdown`` through a copy, and callgrind's own count line was then lost
behind a forged one), nor make it drop a line: a write end made non-blocking (its flags are
shared with every copy) is tampering. Once the program ends the supervisor kills every process
the program left (it is their subreaper, so none escapes by a double fork), then writes its
``MARK`` line (pids, CPU seconds) and the log, last: nothing of the program's can come after
it. It exits with the program's status, or 125 where the log cannot be taken whole.

argv: the program's stdout file, its stderr file, then the command (valgrind's, with
``--log-fd=3``, moved to the top descriptor).
"""

import ctypes
import fcntl
import os
import resource
import sys
import threading

MARK = "==codebench== supervisor"
LAST_PID = "/proc/sys/kernel/ns_last_pid"
MAX_LOG = 1 << 20
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
# Where valgrind finds its log: the top of the descriptors a process may open, which valgrind
# keeps for its own (it refuses them to the program's calls).
LOG_FD = resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 1


def last_pid() -> int:
    try:
        with open(LAST_PID) as file:
            return int(file.read())
    except (OSError, ValueError):
        return -1


def descendants(root: int) -> list[int]:
    """Every live process under ``root``, read from ``/proc``."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as file:
                parents[int(name)] = int(file.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def sweep() -> None:
    """Kill every process the program left, until none is left to reap."""
    while True:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return 125
    reader, writer = os.pipe()
    # A copy of the write end, held here: it shares the flags of every copy the program makes.
    flags = os.dup(writer)
    log = bytearray()
    # Read as valgrind writes (a full pipe would stop it); started before the first pid is
    # read, as a thread takes a pid of its own.
    thread = threading.Thread(target=lambda: _drain(reader, log), daemon=True)
    thread.start()
    before = last_pid()
    stdout = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    stderr = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    program = os.fork()
    if program == 0:
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.dup2(writer, LOG_FD)
        os.closerange(3, LOG_FD)
        command = [f"--log-fd={LOG_FD}" if arg == "--log-fd=3" else arg for arg in sys.argv[3:]]
        os.execvp(command[0], command)
    os.close(writer)
    os.close(stdout)
    os.close(stderr)
    _, status = os.waitpid(program, 0)
    sweep()
    blocking = not fcntl.fcntl(flags, fcntl.F_GETFL) & os.O_NONBLOCK
    os.close(flags)
    thread.join(10)
    after = last_pid()
    whole = blocking and not thread.is_alive() and len(log) <= MAX_LOG
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    # Every process of the program is reaped by now (by its parent, or by this subreaper): the
    # kernel's count of their CPU time, which no count line can take back.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    sys.stdout.write(f"\n{MARK} {os.getpid()} {before} {after} {int(whole)} {cpu:.3f}\n")
    sys.stdout.write(log[:MAX_LOG].decode("utf-8", errors="replace"))
    sys.stdout.flush()
    return code if whole else 125


def _drain(reader: int, log: bytearray) -> None:
    while chunk := os.read(reader, 65536):
        log.extend(chunk[: MAX_LOG + 1 - len(log)])


if __name__ == "__main__":
    sys.exit(main())
