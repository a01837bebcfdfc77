"""Run commands in containers, through the Docker SDK.

One container per command: it starts from the image, so no sample sees what another left
behind, and every process a command starts dies with its container, whatever it did to hide.
The workspace is bind-mounted at /workspace and is the only writable mount of the host (a
host toolkit the image lacks, see docker_images, is mounted read-only); the root filesystem is
read-only and /tmp a small tmpfs. Copying the workspace in and out
(put_archive/get_archive) would keep host disk out of reach, but it costs two tar round
trips per command, and the builds' outputs must survive into the test step anyway; a
per-file size limit (RLIMIT_FSIZE) bounds what a command can write instead.
"""

from __future__ import annotations

import os
import platform
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
import docker.errors
from docker.types import DeviceRequest, LogConfig, Ulimit
from docker.utils import parse_repository_tag

from ..context import RunContext
from ..errors import HarnessError
from ..options import BENCHMARK, ENV, Option, positive
from . import PROVISION_SCRIPT, Gpu, GpuProbe, OutputCap, RunHow, Runner, RunResult, Toolchain, allowed_names
from .docker_images import DOCKER_BASE, ENGINE_ERRORS, IMAGE, ImageChoice, ImageChooser, choose, digest, engine_error

if TYPE_CHECKING:
    from typing_extensions import Unpack

RUN_LABEL = "pytest-codebench.run"
NOBODY = 65534
WORKSPACE = "/workspace"
RECIPE_DIR = "/opt/codebench/recipe"
ENV_PREFIX = "/opt/codebench/env"
# Docker's own log of a container is kept small: the runner streams the output as it comes.
LOG_CONFIG = LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "1"})


def _size(text: str) -> int:
    """Bytes from "512m", "4g", "1048576"."""
    match = re.fullmatch(r"(\d+)([kmg]?)b?", text.strip().lower())
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    return int(match.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2)]


DOCKER_MEMORY = Option("docker-memory", "Memory limit of a container.", _size("4g"), _size, "SIZE")
DOCKER_CPUS = Option("docker-cpus", "CPUs a container may use.", 2.0, positive(float), "N", ini_type="float")
DOCKER_PIDS = Option("docker-pids", "Processes a container may have at once.", 256, positive(int), "N", ini_type="int")
DOCKER_TMPFS = Option("docker-tmpfs", "Size of a container's /tmp (memory).", "512m", str, "SIZE")
DOCKER_MAX_FILE = Option("docker-max-file", "Largest file a command may write (RLIMIT_FSIZE).", 1 << 30, _size, "SIZE")


class DockerRunner(Runner):
    """Each command in a fresh, locked-down container of the benchmark's image."""

    name = "docker"
    options = (IMAGE, DOCKER_BASE, DOCKER_MEMORY, DOCKER_CPUS, DOCKER_PIDS, DOCKER_TMPFS, DOCKER_MAX_FILE)

    def __init__(self, context: RunContext) -> None:
        super().__init__(context)
        settings = context.settings
        # Inside the image, the image's own PATH and toolkit count: only variables the user
        # names explicitly cross over, and never a secret.
        extra: list[str] = settings[ENV]
        self.allowed_env = allowed_names(extra, base=())
        self.run_id = context.run_dir.name
        max_file = settings[DOCKER_MAX_FILE]
        self.limits = {
            "mem_limit": settings[DOCKER_MEMORY],
            "memswap_limit": settings[DOCKER_MEMORY],
            "nano_cpus": int(settings[DOCKER_CPUS] * 1e9),
            "pids_limit": settings[DOCKER_PIDS],
            "tmpfs": {"/tmp": f"size={settings[DOCKER_TMPFS]},mode=1777"},
            "ulimits": [Ulimit(name="fsize", soft=max_file, hard=max_file)],
        }
        self.client = connect()
        self.choice = _choice(self.client, context)
        self.image = self.choice.image
        # Host folders (a CUDA toolkit) every container sees read-only at their own path.
        self.mounts = {path: {"bind": path, "mode": "ro"} for path in self.choice.mounts}

    @classmethod
    def describe(cls, context: RunContext) -> dict[str, Any]:
        """The image chosen for the run (making the choice if no process has yet) and why."""
        try:
            client = connect()
            try:
                choice = _choice(client, context)
            finally:
                client.close()
        except HarnessError as exc:
            return {"summary": f"docker image: none ({exc})", "error": str(exc)}
        return {"summary": choice.summary(), **choice.to_json()}

    def missing(self, command: str) -> str | None:
        return self.choice.missing.get(command)

    def fingerprint(self) -> str:
        return f"{self.name}@{platform.node()}:{self.image}:{','.join(self.choice.mounts)}"

    def run(self, command: str, *, cwd: Path, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        cap = OutputCap(self.output_limit)
        shared = how.get("shared") or {}
        toolchain, gpu = how.get("toolchain"), how.get("gpu")
        user = self._user(cwd, [path for path, writable in shared.items() if writable])
        volumes = {**self.mounts, str(cwd.resolve()): {"bind": WORKSPACE, "mode": "rw"}}
        for path, writable in shared.items():
            volumes[str(path)] = {"bind": str(path), "mode": "rw" if writable else "ro"}
        try:
            container = self.client.containers.create(
                toolchain.image if toolchain and toolchain.image else self.image,
                ["/bin/sh", "-c", command],
                working_dir=WORKSPACE,
                user=user,
                environment=self.child_env(WORKSPACE, "/tmp", how.get("env")),
                volumes=volumes,
                network_mode="bridge" if how.get("network") else "none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                labels={RUN_LABEL: self.run_id},
                log_config=LOG_CONFIG,
                device_requests=[DeviceRequest(device_ids=[gpu], capabilities=[["gpu"]])] if gpu else None,
                **self.limits,
            )
        except ENGINE_ERRORS as exc:
            raise engine_error(exc) from None
        try:
            return self._run(container, command, timeout, cap)
        finally:
            try:
                container.remove(force=True)
            except ENGINE_ERRORS:
                pass  # the engine is gone; the controller's sweep will find it

    def _run(self, container: Any, command: str, timeout: float, cap: OutputCap) -> RunResult:
        started = time.monotonic()
        try:
            stream = container.attach(stdout=True, stderr=True, stream=True, logs=True)
            reader = threading.Thread(target=_pump, args=(stream, cap), daemon=True)
            reader.start()
            container.start()
        except docker.errors.APIError as exc:
            if "could not select device driver" in str(exc):
                raise HarnessError(
                    f"the Docker engine cannot give containers a GPU (no NVIDIA runtime): {exc}"
                ) from None
            raise engine_error(exc) from None
        except ENGINE_ERRORS as exc:
            raise engine_error(exc) from None
        # Our own clock: the SDK's HTTP timeout reads, over a unix socket, like a dead engine.
        waiter = _Waiter(container)
        waiter.start()
        waiter.join(timeout)
        timed_out = waiter.is_alive()
        if timed_out:
            # The command's time is up: the container dies with everything in it.
            try:
                container.kill()
            except ENGINE_ERRORS:
                pass
            waiter.join(30)
        if waiter.error is not None and not timed_out:
            raise engine_error(waiter.error)
        reader.join(timeout=10)
        exit_code = None if timed_out else waiter.exit_code
        return RunResult(
            command=command,
            exit_code=exit_code,
            timed_out=timed_out,
            seconds=time.monotonic() - started,
            output=cap.text(),
            dropped_bytes=cap.dropped,
        )

    @staticmethod
    def _user(workspace: Path, writable: list[Path]) -> str:
        """Never root in the container: the caller's own ids, or nobody's when the caller is
        root, the workspace (and writable shared folders) then handed over to nobody so that
        the command can write in them."""
        if os.getuid() != 0:
            return f"{os.getuid()}:{os.getgid()}"
        for folder in (workspace, *writable):
            for path in (folder, *folder.rglob("*")):
                os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        return f"{NOBODY}:{NOBODY}"

    def provision(self, key: str, recipe: Path) -> Toolchain:
        """An image per environment, ``pytest-codebench/BENCHMARK-env:KEY``, built once per
        machine: from the recipe's own Dockerfile (``FROM ${BASE}``, the base given by
        ``--codebench-docker-base``), or else on the benchmark's image, installing the
        recipe at /opt/codebench/env."""
        # The tag names the image it is built on: a new base gives new environments.
        tag = f"{parse_repository_tag(self.image)[0]}-env:{key[:32]}-{digest(self.image)}"
        own = (recipe / "Dockerfile").exists()
        if not own:
            (recipe / "Dockerfile").write_text(
                f"FROM {self.image}\nCOPY . {RECIPE_DIR}\nRUN sh {RECIPE_DIR}/{PROVISION_SCRIPT} {ENV_PREFIX}\n"
            )
        base = self.context.settings[DOCKER_BASE]
        chooser = ImageChooser(self.client, self.context, {RUN_LABEL: self.run_id})
        chooser.build(tag, recipe, "Dockerfile", {"BASE": base} if own and base else {})
        return Toolchain(key, "" if own else ENV_PREFIX, tag)

    def probe_gpus(self) -> GpuProbe:
        """Ask nvidia-smi inside a container given every GPU: what a test would see."""
        query = "nvidia-smi --query-gpu=index,name,compute_cap --format=csv,noheader"
        try:
            container = self.client.containers.create(
                self.image,
                ["/bin/sh", "-c", query],
                device_requests=[DeviceRequest(count=-1, capabilities=[["gpu"]])],
                volumes=self.mounts,
                network_mode="none",
                labels={RUN_LABEL: self.run_id},
            )
            try:
                container.start()
                container.wait(timeout=120)
                output = container.logs(stdout=True, stderr=True).decode(errors="replace")
            finally:
                container.remove(force=True)
        except docker.errors.APIError as exc:
            if "could not select device driver" in str(exc):
                return {"error": "the Docker engine cannot give containers a GPU (no NVIDIA runtime)"}
            return {"error": f"no GPU in the container: {exc}"}
        except ENGINE_ERRORS as exc:
            return {"error": f"the Docker engine failed: {exc}"}
        gpus: list[Gpu] = []
        for line in output.strip().splitlines():
            fields = [part.strip() for part in line.split(",")]
            if len(fields) == 3 and fields[0].isdigit():
                gpus.append({"index": int(fields[0]), "name": fields[1], "compute_capability": fields[2]})
        return {"gpus": gpus} if gpus else {"error": f"no GPU visible in the container: {output.strip()[-300:]}"}

    def close(self) -> None:
        self.client.close()

    @classmethod
    def sweep(cls, context: RunContext) -> None:
        try:
            client = connect()
            for container in client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={context.run_dir.name}"}):
                container.remove(force=True)
            client.close()
        except (HarnessError, *ENGINE_ERRORS):
            pass  # nothing can be swept from an engine that is gone


def _pump(stream: Iterable[bytes], cap: OutputCap) -> None:
    for chunk in stream:
        cap.feed(chunk)


class _Waiter(threading.Thread):
    """Waits for a container to exit, keeping its exit code or the engine's error."""

    def __init__(self, container: Any) -> None:
        super().__init__(daemon=True)
        self.container = container
        self.exit_code: int | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.exit_code = self.container.wait()["StatusCode"]
        except ENGINE_ERRORS as exc:
            self.error = exc


def _choice(client: docker.DockerClient, context: RunContext) -> ImageChoice:
    """The run's image, chosen by the first process that asks (docker_images.choose)."""
    benchmark = context.settings[BENCHMARK] or "custom"
    labels = {RUN_LABEL: context.run_dir.name}
    stored = context.once(f"docker-image-{benchmark}", lambda: choose(client, context, benchmark, labels).to_json())
    return ImageChoice.from_json(stored)


def connect() -> docker.DockerClient:
    """A client of the engine DOCKER_HOST names (or the local socket), checked to answer."""
    try:
        client = docker.from_env(version="auto", timeout=120)
        client.ping()
    except ENGINE_ERRORS as exc:
        raise HarnessError(f"no Docker engine answers: {exc}") from None
    return client
