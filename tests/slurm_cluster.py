"""A real Slurm cluster on loopback, for the tests and the bench: Debian's slurmctld, slurmd and
munged (22.05), started as this process's children with a configuration of their own (its own
ports, state, munge socket and key), one node ``localhost`` with 2 CPUs and 2 GPUs as GRES,
each GPU backed by a file (a count-only GPU GRES leaves the node invalid). No cgroups: the
processes are tracked by /proc (proctrack/linuxproc, task/none), as in a container."""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")


@dataclasses.dataclass(frozen=True)
class Cluster:
    folder: Path
    #: The environment a client command (sbatch, squeue, scontrol, codebench launch) needs.
    env: dict[str, str]

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60, check=False)

    def job_states(self, job: str) -> dict[str, str]:
        """``{"12_0": "RUNNING", ...}`` for a job's elements still in the queue."""
        listed = self.run("squeue", "-h", "-r", "-j", job, "-o", "%i %T").stdout.split()
        return dict(zip(listed[::2], listed[1::2], strict=True))

    def wait_gone(self, job: str, timeout: float) -> None:
        """Until the job (all its elements) has left the queue; TimeoutError naming its state."""
        end = time.monotonic() + timeout
        while (states := self.job_states(job)) and time.monotonic() < end:
            time.sleep(0.5)
        if states:
            raise TimeoutError(f"job {job} still queued after {timeout:.0f} s: {states}\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text()[-3000:]}" for path in sorted(self.folder.glob("*.log")))


def unusable() -> str | None:
    """Why no cluster can start here (None: it can)."""
    missing = [name for name in (*DAEMONS, "sbatch", "sinfo") if shutil.which(name) is None]
    missing = [name for name in missing if not Path(f"/usr/sbin/{name}").exists()]
    if missing:
        return f"no Slurm here: {', '.join(missing)} not found (apt-get install slurmctld slurmd munge)"
    if os.geteuid() != 0:
        return "the loopback Slurm cluster runs slurmd as root (it starts jobs as their users): not root here"
    return None


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _gpu_files(folder: Path) -> str:
    """Two GPU device files: character devices like /dev/null where mknod is allowed (slurmd
    then takes them for devices), else plain files (slurmd says so, and the node still works)."""
    for n in range(2):
        path = folder / f"nvidia{n}"
        try:
            os.mknod(path, 0o600 | 0o020000, os.makedev(1, 3))
        except OSError:
            path.touch()
    return str(folder / "nvidia[0-1]")


def _config(folder: Path, munge_socket: Path) -> str:
    lines = {
        "ClusterName": "codebench",
        "SlurmctldHost": "localhost(127.0.0.1)",
        "SlurmctldPort": str(_port()),
        "SlurmdPort": str(_port()),
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "AuthType": "auth/munge",
        "AuthInfo": f"socket={munge_socket}",
        "CredType": "cred/munge",
        "StateSaveLocation": str(folder / "state"),
        "SlurmdSpoolDir": str(folder / "spool"),
        "SlurmctldPidFile": str(folder / "slurmctld.pid"),
        "SlurmdPidFile": str(folder / "slurmd.pid"),
        "SlurmctldLogFile": str(folder / "slurmctld.log"),
        "SlurmdLogFile": str(folder / "slurmd.log"),
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "MpiDefault": "none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "ReturnToService": "2",
        "MinJobAge": "600",
        "GresTypes": "gpu",
    }
    text = "".join(f"{key}={value}\n" for key, value in lines.items())
    return (
        text + "NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:2 State=UNKNOWN\n"
        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n"
    )


@contextmanager
def loopback_cluster(folder: Path) -> Iterator[Cluster]:
    """Starts the cluster in ``folder`` (a short path: munge's socket must fit in sun_path),
    waits until its node is idle, and stops every daemon it started at the end."""
    for name in ("state", "spool", "munge"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / "munge").chmod(0o700)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = folder / "munge" / "munge.socket"
    (folder / "slurm.conf").write_text(_config(folder, munge_socket))
    (folder / "gres.conf").write_text(f"NodeName=localhost Name=gpu File={_gpu_files(folder)}\n")
    env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    for name in ("SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID", "JOB_COMPLETION_INDEX"):
        env.pop(name, None)
    cluster = Cluster(folder, env)
    started: list[subprocess.Popen[bytes]] = []
    try:
        munged = [
            "munged", "--foreground", "--force", f"--socket={munge_socket}", f"--key-file={key}",
            f"--pid-file={folder / 'munge' / 'munged.pid'}", f"--log-file={folder / 'munged.log'}",
            f"--seed-file={folder / 'munge' / 'seed'}",
        ]  # fmt: skip
        for command in (munged, ["slurmctld", "-D", "-i"], ["slurmd", "-D", "-N", "localhost"]):
            log = (folder / f"{command[0]}.out").open("wb")
            started.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
            time.sleep(0.5)
        end = time.monotonic() + 60
        state = ""
        while time.monotonic() < end:
            state = cluster.run("sinfo", "-h", "-n", "localhost", "-o", "%T").stdout.strip()
            if state == "idle" or any(process.poll() is not None for process in started):
                break
            time.sleep(0.5)
        if state != "idle":
            outs = "\n".join((folder / f"{name}.out").read_text()[-2000:] for name in DAEMONS)
            raise RuntimeError(f"the loopback Slurm node is {state or 'not up'}, not idle:\n{outs}\n{cluster.logs()}")
        yield cluster
    finally:
        if started:
            cluster.run("scancel", "--user", str(os.getuid()))  # this cluster's jobs: it has only the tests'
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
