"""Each local command in a bubblewrap (``bwrap``) sandbox of its own.

What a sandboxed command gets:

* its own PID namespace: ``/proc`` shows only its processes (never the harness's environment),
  and when it ends every process it started dies with it, ``setsid`` or not; ``--die-with-parent``
  ends it with the harness;
* no network (its own network namespace) unless the step asks for it; a private ``/tmp`` and
  ``/dev/shm``, each a tmpfs of ``--codebench-sandbox-tmp`` bytes (memory no process is charged
  for: unbounded, each took half of RAM); the sandbox's own root and ``/dev`` read-only (for a
  caller that is not root they are tmpfs it owns, as unbounded);
* a root of its own: the system folders (/usr, /etc, /opt, /bin, /lib...), the Python commands
  find, the folders of ``PATH`` and the CUDA toolkit, read-only (a tool manager's folder in a
  home, ~/.cargo or ~/.pyenv, only in the parts its programs run from, and whatever looks like
  a credential in what a home shows masked; the header names them all); the toolchain's prefix
  read-only; the ``shared`` folders as marked; its workspace, the one writable folder of the
  host. Nothing else exists: not the caller's home, not the other workspaces, not the run folder,
  the cache or the dataset (masked with an empty folder where a bound folder holds them);
* rlimits: processes (counted per sandbox, in a user namespace of its own), core files,
  file size, and optionally address space and CPU seconds;
* for a caller that is root: the uid ``nobody`` (65534) without capabilities and with
  ``no_new_privs``, so root-only files stay unreadable. bwrap itself must run as root to mount
  folders only root can reach (a pyenv under /root), so the command is
  ``bwrap -> setpriv (drop to nobody) -> unshare -U (its own count of processes) -> clock -> sh``,
  all ``exec``: bwrap's own two processes are the only ones added. The clock's bash sets the
  rlimits (``ulimit``, soft and hard) before anything else; without bash, ``prlimit`` does.
  The workspace (and writable shared folders, once) are handed to nobody before each command,
  as the docker runner does.

The clock (``RunResult.seconds``, the command's own wall time): see :mod:`.sandbox_clock`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..options import CACHE_DIR, DATASET, SOLUTIONS, Option, Settings, choice, positive
from .host_folders import credentials, homes, in_home, tool_folders
from .host_folders import under as _under
from .quota import entries, human, parse_size
from .sandbox_clock import CLOCK, full_folders, inner_seconds, read_clock

SANDBOX = Option(
    "sandbox",
    "Where local commands run: auto (a bubblewrap sandbox where bwrap works here, else unconfined,"
    " with a warning), bwrap (a sandbox or a usage error), none (unconfined, today's behaviour).",
    "auto",
    choice("auto", "bwrap", "none"),
    "auto|bwrap|none",
)
SANDBOX_PIDS = Option(
    "sandbox-pids",
    "Processes and threads a sandboxed local command may have at once (RLIMIT_NPROC, per sandbox).",
    1024,
    positive(int),
    "N",
    ini_type="int",
)
SANDBOX_MAX_FILE = Option(
    "sandbox-max-file", "Largest file a sandboxed local command may write (RLIMIT_FSIZE).", 1 << 30, parse_size, "SIZE"
)
SANDBOX_MEMORY: Option[int | None] = Option(
    "sandbox-memory",
    "Address space of each process of a sandboxed local command (RLIMIT_AS; default: none, CUDA"
    " reserves far more than it uses).",
    None,
    parse_size,
    "SIZE",
)
SANDBOX_CPU: Option[int | None] = Option(
    "sandbox-cpu",
    "CPU seconds of each process of a sandboxed local command (RLIMIT_CPU; default: none).",
    None,
    positive(int),
    "SECONDS",
    ini_type="int",
)
SANDBOX_TMP = Option(
    "sandbox-tmp",
    "Size of a sandboxed local command's /tmp and of its /dev/shm, each (memory, as docker's /tmp).",
    512 << 20,
    parse_size,
    "SIZE",
)
SANDBOX_OPTIONS = (SANDBOX, SANDBOX_PIDS, SANDBOX_MAX_FILE, SANDBOX_MEMORY, SANDBOX_CPU, SANDBOX_TMP)

NOBODY = 65534
SYSTEM_DIRS = ("/usr", "/etc", "/opt")
# Links to /usr on merged-/usr systems, folders elsewhere.
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The folders a sandboxed command gets as tmpfs of ``--codebench-sandbox-tmp`` bytes each.
TMPFS = ("/tmp", "/dev/shm")


@dataclasses.dataclass(frozen=True)
class Limits:
    pids: int
    max_file: int
    memory: int | None
    cpu: int | None
    tmp: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            settings[SANDBOX_PIDS],
            settings[SANDBOX_MAX_FILE],
            settings[SANDBOX_MEMORY],
            settings[SANDBOX_CPU],
            settings[SANDBOX_TMP],
        )

    def prlimit(self) -> list[str]:
        argv = ["prlimit", f"--nproc={self.pids}", "--core=0", f"--fsize={self.max_file}"]
        argv += [f"--as={self.memory}"] if self.memory else []
        argv += [f"--cpu={self.cpu}"] if self.cpu else []
        return [*argv, "--"]

    def ulimit(self) -> str:
        """The same limits as bash's ``ulimit`` options (soft and hard; sizes in KiB, rounded
        down: never more than asked)."""
        options = f"-u {self.pids} -c 0 -f {self.max_file // 1024}"
        options += f" -v {self.memory // 1024}" if self.memory else ""
        return options + (f" -t {self.cpu}" if self.cpu else "")


class Mounts:
    """bwrap's folder arguments, in order: parents made (0755: bwrap would make them 0700,
    closed to nobody) before what is bound in them."""

    def __init__(self, bound: Iterable[str] = (), made: Iterable[str] = (), masked: Iterable[str] = ()) -> None:
        self.argv: list[str] = []
        self.bound = list(bound)  # host folders (and links): what lies under them exists
        self.made = list(made)  # empty folders of the sandbox
        self.masked = list(masked)  # empty folders over host ones

    def _exists(self, folder: str) -> bool:
        if folder in self.made or folder in self.masked:
            return True
        if any(_under(folder, mask) for mask in self.masked):
            return False
        return any(_under(folder, done) for done in self.bound)

    def _parents(self, dest: str) -> None:
        parts = Path(dest).parts
        for depth in range(2, len(parts)):
            parent = str(Path(*parts[:depth]))
            if not self._exists(parent):
                self.argv += ["--perms", "0755", "--dir", parent]
                self.made.append(parent)

    def bind(self, source: str, dest: str, *, writable: bool = False) -> None:
        self._parents(dest)
        self.argv += ["--bind" if writable else "--ro-bind", source, dest]
        self.bound.append(dest)

    def link(self, target: str, dest: str) -> None:
        self.argv += ["--symlink", target, dest]
        self.bound.append(dest)

    def mask(self, path: str) -> None:
        """An empty folder (or file) over ``path``, where a bound folder holds it."""
        if any(_under(path, done) for done in self.bound) and os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                self.argv += ["--tmpfs", path]
                self.masked.append(path)
            else:
                self.argv += ["--ro-bind", "/dev/null", path]


def base_mounts(settings: Settings, run_dir: Path | None) -> Mounts:
    """The folders every command sees (read-only), and the masks over what it must not see."""
    mounts = Mounts()
    for folder in SYSTEM_DIRS:
        if os.path.isdir(folder):
            mounts.bind(folder, folder)
    for entry in ROOT_LINKS:
        if os.path.islink(entry):
            mounts.link(os.readlink(entry), entry)
        elif os.path.isdir(entry):
            mounts.bind(entry, entry)
    home_folders = homes()
    solutions = [spec.path for spec in settings[SOLUTIONS]]  # every model's: none sees another's answers
    given = [settings[CACHE_DIR], settings[DATASET], *solutions, str(run_dir) if run_dir else None]
    hidden = [os.path.realpath(path) for path in (*given, str(Path(__file__).parents[1])) if path]
    shown = {os.path.realpath(path) for path in tool_folders(home_folders) if os.path.exists(path)}
    for folder in sorted(shown):
        # A home stays out (a program's folder in it, a pyenv or a venv, is bound on its own),
        # and so do the cache, the dataset and the run folder, except the Python we run on.
        mine = folder in (os.path.realpath(p) for p in (sys.prefix, sys.base_prefix))
        if mine or (folder not in home_folders and not any(_under(folder, private) for private in hidden)):
            if not any(_under(folder, done) for done in mounts.bound):
                mounts.bind(folder, folder)
    for path in (*home_folders, *hidden):
        mounts.mask(path)
    # Defence in depth: what a folder bound from a home holds that looks like a credential.
    for folder in [done for done in mounts.bound if in_home(done, home_folders) and os.path.isdir(done)]:
        for path in credentials(folder):
            mounts.mask(path)
    return mounts


@dataclasses.dataclass(frozen=True)
class Plan:
    """How commands start: the fixed head of bwrap's arguments and the chain inside."""

    head: tuple[str, ...]
    chain: tuple[str, ...]
    mounts_made: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]  # bound, made, masked
    clocked: bool
    limits: str  # the clock's ulimit options (clocked only; else prlimit in the chain)
    user: int | None  # the uid the workspace is handed to (a root caller), else None

    def shown(self) -> list[str]:
        """The host folders (and files) every command sees, read-only: the header names them."""
        return [path for path in self.mounts_made[0] if not os.path.islink(path)]

    def argv(self, command: str, cwd: Path, clock_fd: int, extra: Mounts) -> list[str]:
        tail = [command, str(clock_fd), self.limits] if self.clocked else ["sh", "-c", command]
        # Last, once every mount point is made: the sandbox's root, /dev and the masks (tmpfs of
        # no size, which a caller that is not root owns) read-only; device nodes stay writable.
        sealed = [arg for folder in ("/dev", *self.mounts_made[2], "/") for arg in ("--remount-ro", folder)]
        return [*self.head, *extra.argv, *sealed, "--chdir", str(cwd), "--", *self.chain, *tail]

    def mounts(self, cwd: Path, toolchain: str | None, shared: Mapping[Path, bool]) -> Mounts:
        """The command's own folders, bound after (over) the base ones."""
        mounts = Mounts(*self.mounts_made)
        for path, writable in sorted(shared.items()):
            mounts.bind(os.path.realpath(path), str(path), writable=writable)
        if toolchain and os.path.isdir(toolchain):
            mounts.bind(os.path.realpath(toolchain), toolchain)
        mounts.bind(os.path.realpath(cwd), str(cwd), writable=True)
        return mounts


def plan(settings: Settings, bwrap: str, run_dir: Path | None = None) -> Plan:
    """The sandbox of this process's commands (built once); ``run_dir`` (its workspaces) is hidden."""
    mounts = base_mounts(settings, run_dir)
    mounts.made += ["/proc", "/dev", *TMPFS]
    limits = Limits.of(settings)
    head = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    head += ["--hostname", "codebench", "--proc", "/proc", "--dev", "/dev"]
    for folder in TMPFS:
        head += ["--size", str(limits.tmp), "--perms", "1777", "--tmpfs", folder]
    head += mounts.argv
    root = os.getuid() == 0
    chain: list[str] = []
    if root:
        # bwrap runs as root (it must reach root's folders); the command as nobody, in a user
        # namespace of its own so that its process limit counts its own processes only.
        chain += ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--no-new-privs"]
        chain += ["--inh-caps=-all", "--bounding-set=-all", "--", "unshare", "--user", "--map-current-user", "--"]
    clocked = shutil.which("bash") is not None
    chain += ["bash", "--noprofile", "--norc", "-c", CLOCK, "clock"] if clocked else limits.prlimit()
    return Plan(
        tuple(head),
        tuple(chain),
        (tuple(mounts.bound), tuple(mounts.made), tuple(mounts.masked)),
        clocked,
        limits.ulimit(),
        NOBODY if root else None,
    )


def options_through_fd(argv: list[str]) -> tuple[list[str], int]:
    """``argv`` with bwrap's options (every argument before the command) moved to a memory file
    read through ``--args FD``, and that descriptor (the caller passes it on, then closes it).
    bwrap's argv is what pid 1 of the sandbox shows in /proc/1/cmdline: the host paths of the
    run folder, the cache and the masks would be there for any command to read."""
    end = argv.index("--")
    fd = os.memfd_create("bwrap-args")
    try:
        os.write(fd, b"".join(os.fsencode(arg) + b"\0" for arg in argv[1:end]))
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return [argv[0], "--args", str(fd), *argv[end:]], fd


def network_args(network: bool) -> list[str]:
    return [] if network else ["--unshare-net"]


def gpu_args(gpu: str | None) -> list[str]:
    """The NVIDIA device nodes and /sys (read-only), which the driver library reads."""
    if gpu is None:
        return []
    args = ["--ro-bind", "/sys", "/sys"]
    for name in sorted(os.listdir("/dev")):
        if name.startswith("nvidia"):
            args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    return args


def hand_over(folder: Path, uid: int) -> None:
    """Make ``folder`` and everything in it ``uid``'s (never through a link; a file with other
    hard links stays as it is, it may be one the harness did not make)."""
    try:
        if os.lstat(folder).st_uid != uid:
            os.chown(folder, uid, uid, follow_symlinks=False)
        for fd, name, info in entries(folder, strict=False):
            if info.st_uid != uid and (stat.S_ISDIR(info.st_mode) or info.st_nlink == 1):
                os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        pass


def full_mounts(clock: bytes, settings: Settings) -> str | None:
    """Why a failed command may have failed, where the clock line says it left /tmp or
    /dev/shm full: a sentence naming the limit (None otherwise). A forged line can only hide
    this sentence, never change a verdict for the better."""
    folders = " and ".join(full_folders(clock))
    if not folders:
        return None
    return f"it filled {folders}, {human(settings[SANDBOX_TMP])} each ({SANDBOX_TMP.cli})"


def probe(sandbox_plan: Plan) -> str | None:
    """Why this machine cannot run the sandbox (None when it can): the real chain, once."""
    folder = Path(tempfile.mkdtemp(prefix="codebench-sandbox-probe-"))
    read, write = os.pipe()
    try:
        if sandbox_plan.user is not None:
            hand_over(folder, sandbox_plan.user)
        argv = sandbox_plan.argv("true", folder, write, sandbox_plan.mounts(folder, None, {}))
        argv[1:1] = network_args(False)
        argv, options = options_through_fd(argv)
        try:
            result = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, pass_fds=(write, options), cwd=folder
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{argv[0]} could not run: {exc}"
        finally:
            os.close(options)
        os.close(write)
        write = -1
        if result.returncode != 0:
            output = (result.stdout + result.stderr).decode(errors="replace").strip()[-500:]
            return f"a sandbox failed to start (exit {result.returncode}): {output}"
        if sandbox_plan.clocked and inner_seconds(read_clock(read), 0, float("inf")) is None:
            return "the clock inside the sandbox wrote no time"
        return None
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
        shutil.rmtree(folder, ignore_errors=True)


def missing_tools(root: bool) -> list[str]:
    # prlimit sets the limits only where no bash can (Plan.limits).
    tools = ["bwrap", *(["setpriv", "unshare"] if root else []), *([] if shutil.which("bash") else ["prlimit"])]
    return [tool for tool in tools if shutil.which(tool) is None]


def version(bwrap: str) -> str:
    try:
        return subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "bwrap"


def signal_exit(code: int) -> int:
    """A shell's 128+N for a command killed by signal N, as a negative code like Popen's."""
    return -(code - 128) if 128 < code < 160 else code


def describe_limits(settings: Settings) -> Iterable[str]:
    limits = Limits.of(settings)
    yield f"{limits.pids} processes"
    yield f"files up to {limits.max_file} bytes"
    if limits.memory:
        yield f"address space {limits.memory} bytes"
    if limits.cpu:
        yield f"{limits.cpu} CPU seconds"
    yield f"/tmp and /dev/shm {human(limits.tmp)} each"
