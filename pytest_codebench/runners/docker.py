"""Run commands in containers, through the Docker SDK.

One container per command: it starts from the image, so no sample sees what another left
behind, and every process a command starts dies with its container, whatever it did to hide.
The workspace is bind-mounted at /workspace and is the only writable mount of the host (a
host toolkit the image lacks, see docker_images, is mounted read-only); the root filesystem is
read-only and /tmp a small tmpfs. Copying the workspace in and out
(put_archive/get_archive) would keep host disk out of reach, but it costs two tar round
trips per command, and the builds' outputs must survive into the test step anyway; a
per-file size limit (RLIMIT_FSIZE) bounds one file, and the workspace quota (quota.py) the
whole workspace's bytes and entries.

Every container lives by its own deadline, whatever becomes of the process that started it
(a CI timeout kills pytest with SIGKILL): its PID 1 is ``timeout -s KILL BUDGET+SLACK``, and a
container ends with its PID 1. Containers carry their run, their deadline and their owner
process (docker_sweep.py); at the start of a run, those of earlier runs that are past their
deadline or whose owner is gone are removed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import platform
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..context import RunContext
from ..errors import HarnessError
from ..options import BENCHMARK, ENV, Option, positive
from . import PROVISION_SCRIPT, Gpu, GpuProbe, OutputCap, RunHow, Runner, RunResult, Toolchain, allowed_names
from .docker_case_images import REGISTRY, find, require
from .docker_engine import connect, engine_id
from .docker_images import DOCKER_BASE, IMAGE, ImageChoice, ImageChooser, choose, digest, engine_error
from .docker_streams import Waiter, feed, kill, pump
from .docker_sweep import RUN_LABEL, container_labels, engine_errors, sweep_stale
from .podman import container_limits, is_podman, is_rootless
from .quota import QUOTA_OPTIONS, entries, parse_size, quota_limits, watch

if TYPE_CHECKING:
    import docker
    from typing_extensions import Unpack

NOBODY = 65534
WORKSPACE = "/workspace"
RECIPE_DIR = "/opt/codebench/recipe"
ENV_PREFIX = "/opt/codebench/env"
# Docker's own log of a container is kept small: the runner streams the output as it comes.
LOG_CONFIG = {"type": "json-file", "config": {"max-size": "1m", "max-file": "1"}}
#: A container's own deadline is its command's budget plus this: the runner kills it first
#: while it lives; the deadline is for when the runner is gone.
DEADLINE_SLACK = 10
#: What a container's PID 1 runs the command under (coreutils' or busybox's ``timeout``).
DEADLINE = ("timeout", "-s", "KILL")
PROBE_TIMEOUT = 120
#: Longer budgets are cut to this for the deadline (a year: a number `timeout` reads as one).
MAX_BUDGET = 365 * 86400


DOCKER_MEMORY = Option("docker-memory", "Memory limit of a container.", 4 << 30, parse_size, "SIZE")
DOCKER_CPUS = Option("docker-cpus", "CPUs a container may use.", 2.0, positive(float), "N", ini_type="float")
DOCKER_PIDS = Option("docker-pids", "Processes a container may have at once.", 256, positive(int), "N", ini_type="int")
DOCKER_TMPFS = Option("docker-tmpfs", "Size of a container's /tmp (memory).", "512m", str, "SIZE")
DOCKER_MAX_FILE = Option(
    "docker-max-file", "Largest file a command may write (RLIMIT_FSIZE).", 1 << 30, parse_size, "SIZE"
)


class DockerRunner(Runner):
    """Each command in a fresh, locked-down container of the benchmark's image."""

    name = "docker"
    options = (
        IMAGE,
        DOCKER_BASE,
        DOCKER_MEMORY,
        DOCKER_CPUS,
        DOCKER_PIDS,
        DOCKER_TMPFS,
        DOCKER_MAX_FILE,
        REGISTRY,
        *QUOTA_OPTIONS,
    )
    runs_images = True

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
        }
        # The SDK is imported here, where a run first talks to an engine: see docker_sweep.engine_errors.
        from docker.types import Ulimit

        rlimits = [Ulimit(name="fsize", soft=max_file, hard=max_file)]
        self.quota = quota_limits(settings)
        self.client = connect()
        # Podman's API (podman system service) serves too, given each container's limits.
        self.podman = is_podman(self.client)
        self.rootless = is_rootless(self.client)
        self.limits["ulimits"] = [*rlimits, *container_limits(self.podman)]
        # This process's engine (its DOCKER_HOST): what the run decides once is decided per engine.
        self.engine = engine_id(self.client)
        _sweep_once(self.client, context, self.engine)
        self.choice = _choice(self.client, context, self.engine)
        self.image = self.choice.image
        # Host folders (a CUDA toolkit) every container sees read-only at their own path.
        self.mounts = {path: {"bind": path, "mode": "ro"} for path in self.choice.mounts}
        self._deadline_ok: set[str] = set()
        self._views: dict[str, DockerRunner] = {}

    @classmethod
    def describe(cls, context: RunContext) -> dict[str, Any]:
        """The image chosen for the run (making the choice if no process has yet) and why."""
        try:
            client = connect()
            try:
                engine = engine_id(client)
                _sweep_once(client, context, engine)
                choice = _choice(client, context, engine)
            finally:
                client.close()
        except HarnessError as exc:
            return {"summary": f"docker image: none ({exc})", "error": str(exc)}
        return {"summary": choice.summary(), **choice.to_json()}

    def missing(self, command: str) -> str | None:
        return self.choice.missing.get(command)

    def for_image(self, image: str) -> DockerRunner:
        """This runner with ``image`` (found as docker_case_images says) for the run's image, and
        none of its host folders: such an image brings its own toolkit."""
        if image not in self._views:
            name, image_id = require(find(self.client, self.context, self.engine, image))
            view = copy.copy(self)
            view.image, view.case_image, view.mounts, view._found = name, image, {}, {}
            view.choice = ImageChoice(name, f"the problem's own image ({image})")
            view.__dict__["_image_id"] = image_id  # the cached property, known already
            self._views[image] = view
        return self._views[image]

    def fingerprint(self) -> str:
        """The host, the engine (another DOCKER_HOST is another machine), the image by name and
        id (a tag given with --codebench-image may be rebuilt) and the host folders mounted."""
        mounts = ",".join(self.choice.mounts)
        return f"{self.name}@{platform.node()}/{self.engine}:{self.image}@{self._image_id}:{mounts}"

    @functools.cached_property
    def _image_id(self) -> str | None:
        return ImageChooser(self.client, self.context, {}).image_id(self.image)

    def run(self, command: str, *, cwd: Path, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        cap = OutputCap(self.output_limit)
        shared = how.get("shared") or {}
        toolchain, gpu = how.get("toolchain"), how.get("gpu")
        user = self._user(cwd, [path for path, writable in shared.items() if writable])
        volumes = {**self.mounts, str(cwd.resolve()): {"bind": WORKSPACE, "mode": "rw"}}
        for path, writable in shared.items():
            volumes[str(path)] = {"bind": str(path), "mode": "rw" if writable else "ro"}
        image = toolchain.image if toolchain and toolchain.image else self.image
        self._check_deadline(image)
        stdin = how.get("stdin")
        budget = min(math.ceil(timeout), MAX_BUDGET) + DEADLINE_SLACK
        try:
            container = self.client.containers.create(
                image,
                # One stream, as the local runner gives: what a program writes to stdout and
                # to stderr keeps its order (ComputeEval reads time lines against the main
                # guard's records); docker's two streams would interleave them as they come.
                [*DEADLINE, str(budget), "/bin/sh", "-c", f"exec 2>&1\n{command}"],
                stdin_open=stdin is not None,
                working_dir=WORKSPACE,
                user=user,
                environment=self.child_env(WORKSPACE, "/tmp", how.get("env")),
                volumes=volumes,
                network_mode="bridge" if how.get("network") else "none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                labels=container_labels(self.run_id, budget),
                log_config=LOG_CONFIG,
                device_requests=[{"device_ids": [gpu], "capabilities": [["gpu"]]}] if gpu else None,
                **self.limits,
            )
        except engine_errors() as exc:
            raise engine_error(exc) from None
        try:
            # The workspace is this machine's disk: past its quota the container dies.
            with watch(cwd, self.quota, lambda: kill(container)) as watcher:
                result = self._run(container, command, timeout, cap, stdin)
            if watcher.exceeded is None:
                return result
            # Said in the output too, so that every benchmark's failure text shows why.
            cap.feed(f"\n[pytest-codebench: the command was killed: {watcher.exceeded}]\n".encode())
            return dataclasses.replace(result, output=cap.text(), dropped_bytes=cap.dropped, killed=watcher.exceeded)
        finally:
            try:
                container.remove(force=True)
            except engine_errors():
                pass  # the engine is gone; the controller's sweep will find it

    def _run(self, container: Any, command: str, timeout: float, cap: OutputCap, stdin: bytes | None) -> RunResult:
        import docker.errors

        started = time.monotonic()
        try:
            stream = container.attach(stdout=True, stderr=True, stream=True, logs=True)
            reader = threading.Thread(target=pump, args=(stream, cap), daemon=True)
            reader.start()
            # The input goes over the engine's socket straight to the command's stdin: no file
            # holds it, in the workspace or anywhere another program could read it.
            feeder = None
            if stdin is not None:
                attached = container.attach_socket(params={"stdin": 1, "stream": 1})
                feeder = threading.Thread(target=feed, args=(attached, stdin), daemon=True)
            container.start()
            if feeder is not None:
                feeder.start()
        except docker.errors.APIError as exc:
            if "could not select device driver" in str(exc):
                raise HarnessError(
                    f"the Docker engine cannot give containers a GPU (no NVIDIA runtime): {exc}"
                ) from None
            raise engine_error(exc) from None
        except engine_errors() as exc:
            raise engine_error(exc) from None
        # Our own clock: the SDK's HTTP timeout reads, over a unix socket, like a dead engine.
        waiter = Waiter(container)
        waiter.start()
        waiter.join(timeout)
        timed_out = waiter.is_alive()
        if timed_out:
            # The command's time is up: the container dies with everything in it.
            kill(container)
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

    def _user(self, workspace: Path, writable: list[Path]) -> str:
        """Never root in the container: the caller's own ids, or nobody's when the caller is
        root, the workspace (and writable shared folders) then handed over to nobody so that
        the command can write in them. A rootless engine maps the container's root, without
        capabilities, to the caller, and any other id to one that owns nothing here."""
        if self.rootless:
            return "0:0"
        if os.getuid() != 0:
            return f"{os.getuid()}:{os.getgid()}"
        for folder in (workspace, *writable):
            os.chown(folder, NOBODY, NOBODY)
            # Through folder descriptors, never a link, at any depth: the tree may be a command's.
            for fd, name, info in entries(folder, strict=False):
                if info.st_uid != NOBODY or info.st_gid != NOBODY:
                    os.chown(name, NOBODY, NOBODY, dir_fd=fd, follow_symlinks=False)
        return f"{NOBODY}:{NOBODY}"

    def _check_deadline(self, image: str) -> None:
        """Every container's PID 1 is ``timeout``: an image without one cannot serve (asked
        once per image and run)."""
        if image in self._deadline_ok:
            return
        chooser = ImageChooser(self.client, self.context, {RUN_LABEL: self.run_id})
        key = f"docker-timeout-{self.engine}-{digest(image)}"
        if not self.context.once(key, lambda: chooser.has(image, DEADLINE[0])):
            raise HarnessError(
                f"the image {image} has no `timeout` command (coreutils or busybox): the docker runner runs every"
                " command under one, so that no container outlives its budget; give an image that has it"
            )
        self._deadline_ok.add(image)

    def provision(self, key: str, recipe: Path) -> Toolchain:
        """An image per environment, ``pytest-codebench/BENCHMARK-env:KEY``, built once per
        machine: from the recipe's own Dockerfile (``FROM ${BASE}``, the base given by
        ``--codebench-docker-base``), or else on the benchmark's image, installing the
        recipe at /opt/codebench/env."""
        # The tag names the image it is built on: a new base gives new environments.
        from docker.utils import parse_repository_tag

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
        import docker.errors

        query = "nvidia-smi --query-gpu=index,name,compute_cap --format=csv,noheader"
        try:
            self._check_deadline(self.image)
        except HarnessError as exc:
            return {"error": str(exc)}
        try:
            container = self.client.containers.create(
                self.image,
                [*DEADLINE, str(PROBE_TIMEOUT + DEADLINE_SLACK), "/bin/sh", "-c", query],
                device_requests=[{"count": -1, "capabilities": [["gpu"]]}],
                volumes=self.mounts,
                network_mode="none",
                labels=container_labels(self.run_id, PROBE_TIMEOUT + DEADLINE_SLACK),
                ulimits=container_limits(self.podman),
            )
            try:
                container.start()
                container.wait(timeout=PROBE_TIMEOUT)
                output = container.logs(stdout=True, stderr=True).decode(errors="replace")
            finally:
                container.remove(force=True)
        except docker.errors.APIError as exc:
            if "could not select device driver" in str(exc):
                return {"error": "the Docker engine cannot give containers a GPU (no NVIDIA runtime)"}
            return {"error": f"no GPU in the container: {exc}"}
        except engine_errors() as exc:
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
        except engine_errors() + (HarnessError,):
            pass  # nothing can be swept from an engine that is gone


def _sweep_once(client: docker.DockerClient, context: RunContext, engine: str) -> None:
    """Remove what earlier runs on this engine left behind, once per run and engine, before
    anything runs."""
    context.once(f"docker-stale-sweep-{engine}", lambda: sweep_stale(client, context.run_dir.name))


def _choice(client: docker.DockerClient, context: RunContext, engine: str) -> ImageChoice:
    """The run's image on this engine, chosen by the first process that asks (docker_images.choose):
    an image built on one engine is not on another."""
    benchmark = context.settings[BENCHMARK] or "custom"
    labels = {RUN_LABEL: context.run_dir.name}
    key = f"docker-image-{benchmark}-{engine}"
    return ImageChoice.from_json(context.once(key, lambda: choose(client, context, benchmark, labels).to_json()))
