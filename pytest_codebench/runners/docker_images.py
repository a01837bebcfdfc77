"""Which image the docker runner's commands run in: chosen once per run, with the reason kept.

The order, first that applies:

1. ``--codebench-image``, as given.
2. ``pytest-codebench/BENCHMARK``, built from the benchmark's Dockerfile (:func:`dockerfile_of`)
   FROM ``--codebench-docker-base``; without one, FROM the Dockerfile's own ``BASE`` when it is
   here or can be pulled, else FROM the local base that scripts/docker-setup.sh builds.
3. Where that image lacks a command the Dockerfile says its items need
   (``LABEL org.pytest-codebench.needs="nvcc"``) and this machine has it, the machine's own:
   for nvcc, the host's CUDA toolkit, mounted read-only at its own path into every container
   of an image built FROM the one of step 2 that puts it on PATH and LD_LIBRARY_PATH.

A need that neither the image nor the machine meets is kept with the ways out, for the header,
the report, and whoever asks the runner about that command.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from importlib import import_module, resources
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from .. import __version__
from ..errors import HarnessError
from ..options import text_option
from .docker_sweep import engine_errors, lifetime_labels
from .podman import container_limits, is_podman

if TYPE_CHECKING:
    import docker

    from ..context import RunContext

IMAGE = text_option(
    "image",
    "Image to run in (default: pytest-codebench/BENCHMARK, built once from the benchmark's Dockerfile;"
    " where it lacks nvcc, the host's CUDA toolkit is mounted read-only).",
    metavar="IMAGE",
)
DOCKER_BASE = text_option(
    "docker-base",
    "Base image (FROM) when the default image is built (default: the Dockerfile's, else codebench-base:bookworm).",
    metavar="IMAGE",
)

# The base scripts/docker-setup.sh builds from Debian's packages, for machines without Docker Hub.
LOCAL_BASE = "codebench-base:bookworm"
# Seconds a container asking an image for a command may live (it answers at once).
HAS_BUDGET = 120
NEEDS_LABEL = "org.pytest-codebench.needs"
# Where benchmarks register (benchmark.ENTRY_POINT_GROUP; the runners import nothing above them).
BENCHMARKS_GROUP = "pytest_codebench.benchmarks"


def engine_error(exc: BaseException) -> HarnessError:
    return HarnessError(f"the Docker engine failed: {exc}")


@dataclasses.dataclass(frozen=True)
class ImageChoice:
    """The image commands run in, why, the host folders every container gets read-only at
    their own path, and each declared need that nothing meets, with the ways out."""

    image: str
    reason: str
    mounts: tuple[str, ...] = ()
    missing: dict[str, str] = dataclasses.field(default_factory=dict)

    def summary(self) -> str:
        lines = [f"docker image {self.image}: {self.reason}", *self.missing.values()]
        return "; ".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "mounts": list(self.mounts)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImageChoice:
        return cls(data["image"], data["reason"], tuple(data["mounts"]), dict(data["missing"]))


@dataclasses.dataclass(frozen=True)
class HostToolkit:
    """A toolkit of this machine that containers can use from a read-only mount of ``root``."""

    root: str
    bin: str
    library_dirs: tuple[str, ...]
    release: str


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _folders(value: str) -> list[str]:
    """The absolute folders an nvcc setting names (``-I``, ``-isystem`` and ``-L`` arguments)."""
    paths = (re.sub(r"^-[IL]", "", token) for token in shlex.split(value))
    return [os.path.realpath(path) for path in paths if path.startswith("/")]


def parse_dryrun(output: str, release: str = "") -> HostToolkit | str:
    """The toolkit ``nvcc --dryrun`` describes (its TOP, and the folders it includes and links
    from, all of which must lie inside TOP to be mounted as one folder), or why it cannot be."""
    values = dict(re.findall(r"^#\$ (\w+)=(.*)$", output, re.MULTILINE))
    if "TOP" not in values:
        return "nvcc --dryrun names no TOP (its installation)"
    root = os.path.realpath(values["TOP"].strip())
    bin_dir = os.path.realpath(values.get("_HERE_", os.path.join(root, "bin")).strip())
    if not os.path.isfile(os.path.join(bin_dir, "nvcc")):
        return f"nvcc's folder {bin_dir} holds no nvcc"
    try:
        includes = _folders(values.get("INCLUDES", "")) + _folders(values.get("SYSTEM_INCLUDES", ""))
        libraries = _folders(values.get("LIBRARIES", ""))
    except ValueError as exc:  # unbalanced quotes
        return f"cannot read nvcc --dryrun: {exc}"
    outside = [folder for folder in (bin_dir, *includes, *libraries) if not _inside(folder, root)]
    if outside:
        return f"the CUDA toolkit at {root} uses {outside[0]}, outside its folder, so it cannot be mounted as one"
    # Programs load the toolkit's libraries at run time, never its link-time stubs.
    runtime = [folder for folder in libraries if os.path.basename(folder) != "stubs"]
    return HostToolkit(root, bin_dir, tuple(dict.fromkeys(runtime)), release)


def host_cuda_toolkit() -> HostToolkit | str:
    """The CUDA toolkit of the nvcc on this machine's PATH, as nvcc itself tells (it may be a
    wrapper script elsewhere, so its own path says nothing), or why there is none to mount."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return "this machine has no nvcc on PATH either"
    try:
        dryrun = subprocess.run(
            [nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        version = subprocess.run(
            [nvcc, "--version"], check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the nvcc at {nvcc} does not run: {exc}"
    release = re.search(r"release (\d+\.\d+)", version.stdout)
    return parse_dryrun(dryrun.stdout + dryrun.stderr, release.group(1) if release else "")


# The commands a Dockerfile may declare its items need that this machine can lend containers
# when the image lacks them: what they are part of, and how to find that here.
HOST_TOOLS: dict[str, tuple[str, Callable[[], HostToolkit | str]]] = {"nvcc": ("CUDA toolkit", host_cuda_toolkit)}


def declared(dockerfile: str) -> tuple[str | None, list[str]]:
    """The Dockerfile's default ``BASE`` and the commands it says its items need."""
    base = re.search(r"^\s*ARG\s+BASE=(\S+)", dockerfile, re.MULTILINE | re.IGNORECASE)
    label = re.search(
        rf'^\s*LABEL\s+.*\b{re.escape(NEEDS_LABEL)}="?([^"\n]*)', dockerfile, re.MULTILINE | re.IGNORECASE
    )
    needs = [need for need in re.split(r"[\s,]+", label.group(1)) if re.fullmatch(r"[\w.+-]+", need)] if label else []
    return (base.group(1) if base else None), needs


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


class ImageChooser:
    """Makes the choice above against one engine; :func:`choose` is the way in."""

    def __init__(self, client: docker.DockerClient, context: RunContext, labels: dict[str, str]) -> None:
        self.client = client
        self.context = context
        self.labels = labels
        self.pull_error = ""

    def image_id(self, image: str) -> str | None:
        import docker.errors  # here, not at start-up: see docker_sweep.engine_errors

        try:
            return str(self.client.images.get(image).id)
        except docker.errors.ImageNotFound:
            return None
        except engine_errors() as exc:
            raise engine_error(exc) from None

    def build(self, tag: str, context: Path | None, dockerfile: str, buildargs: dict[str, str]) -> None:
        """Build ``tag`` unless it exists; one process of the machine at a time builds it."""
        self.context.lock_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.context.lock_dir / f"image-{digest(tag)}.lock")):
            if self.image_id(tag) is not None:
                return
            source: dict[str, Any] = {"path": str(context), "dockerfile": dockerfile}
            if context is None:  # a generated Dockerfile, no build context
                source = {"fileobj": io.BytesIO(dockerfile.encode())}
            import docker.errors

            try:
                self.client.images.build(**source, tag=tag, buildargs=buildargs, rm=True)
            except docker.errors.BuildError as exc:
                log = "".join(str(line.get("stream", line.get("error", ""))) for line in exc.build_log)
                raise HarnessError(f"building {tag} failed: {exc}\n{log[-2000:]}") from None
            except engine_errors() as exc:
                raise engine_error(exc) from None

    def obtain(self, image: str) -> str | None:
        """Its id, pulled first when it is not here; None when it cannot be had (the error kept)."""
        found = self.image_id(image)
        if found is not None:
            return found
        import docker.errors
        from docker.utils import parse_repository_tag

        repository, tag = parse_repository_tag(image)
        try:
            self.client.images.pull(repository, tag=tag or "latest")
        except docker.errors.APIError as exc:
            self.pull_error = str(exc.explanation or exc).splitlines()[0][:200]
            return None
        except engine_errors() as exc:
            raise engine_error(exc) from None
        return self.image_id(image)

    def base(self, given: str | None, default: str | None) -> tuple[str, str, str]:
        """(base, its id, why it): the user's, else the Dockerfile's, else the local one."""
        if given:
            found = self.obtain(given)
            if found is None:
                raise HarnessError(
                    f"the base image {given} (--codebench-docker-base) is not here"
                    f" and cannot be pulled: {self.pull_error}"
                )
            return given, found, f"FROM {given} (--codebench-docker-base)"
        if default is None:
            raise HarnessError("the Dockerfile has no ARG BASE=IMAGE: give --codebench-docker-base")
        found = self.obtain(default)
        if found is not None:
            return default, found, f"FROM {default} (the Dockerfile's base)"
        why = f"FROM {LOCAL_BASE}, as {default} is not here and cannot be pulled ({self.pull_error})"
        local = self.image_id(LOCAL_BASE)
        if local is None:
            raise HarnessError(
                f"the base image {default} is not here and cannot be pulled ({self.pull_error}), and there is no local "
                f"base {LOCAL_BASE}: run scripts/docker-setup.sh, or give --codebench-docker-base or --codebench-image"
            )
        return LOCAL_BASE, local, why

    def has(self, image: str, command: str) -> bool:
        """Whether ``command`` is on the image's PATH. Its exit status is waited for, never its
        output followed: podman's compatible API may never end the log stream of a container that
        exited before the stream began (containers.run hung there until pytest-timeout)."""
        import requests.exceptions

        try:
            container = self.client.containers.create(
                image,
                ["/bin/sh", "-c", f"command -v {command}"],
                network_mode="none",
                # Labelled as the runner's own: a concurrent run's sweep leaves it alone.
                labels={**self.labels, **lifetime_labels(HAS_BUDGET)},
                ulimits=container_limits(is_podman(self.client)),
            )
            try:
                container.start()
                status = container.wait(timeout=HAS_BUDGET)["StatusCode"]
            finally:
                container.remove(force=True)
        except engine_errors() + (requests.exceptions.RequestException,) as exc:
            raise engine_error(exc) from None
        return bool(status == 0)

    def with_host_toolkit(self, image: str, need: str, toolkit: HostToolkit) -> str:
        """An image FROM ``image`` whose PATH and LD_LIBRARY_PATH reach the toolkit's mount."""
        from docker.utils import parse_repository_tag

        repository, _ = parse_repository_tag(image)
        key = digest(self.image_id(image) or image, toolkit.root, toolkit.bin, *toolkit.library_dirs, toolkit.release)
        tag = f"{repository}-host-{need}:{__version__}-{key}"
        libraries = ":".join(toolkit.library_dirs)
        dockerfile = (
            f"FROM {image}\n"
            f"ENV PATH={toolkit.bin}:$PATH LD_LIBRARY_PATH={libraries}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n"
            f'LABEL org.pytest-codebench.host-toolkit="{toolkit.root}"\n'
        )
        self.build(tag, None, dockerfile, {})
        return tag


def dockerfile_places(benchmark: str) -> list[Path]:
    """Where ``BENCHMARK.Dockerfile`` may be, in order: this package's ``images/`` (the bundled
    benchmarks'), then the folder of the module the benchmark's entry point names, so that a
    benchmark of another distribution ships its image's recipe beside its own code."""
    places = [Path(str(resources.files("pytest_codebench.images"))) / f"{benchmark}.Dockerfile"]
    for entry in entry_points(group=BENCHMARKS_GROUP, name=benchmark):
        # Imported already: the run found its benchmark class through this entry point.
        source = getattr(import_module(entry.module), "__file__", None)
        if source:
            places.append(Path(source).parent / f"{benchmark}.Dockerfile")
    return places


def dockerfile_of(benchmark: str) -> Path | str:
    """The Dockerfile ``benchmark``'s image is built from (the first of :func:`dockerfile_places`),
    or why there is none: the file it needs, where it may go, and the other way out."""
    places = dockerfile_places(benchmark)
    found = next((place for place in places if place.is_file()), None)
    if found is not None:
        return found
    where = " or ".join(str(place.parent) for place in reversed(places))
    return (
        f"no Dockerfile for the benchmark {benchmark}: the docker runner builds its image from {benchmark}.Dockerfile,"
        f" and there is none in {where}. Add one there (ARG BASE=IMAGE, FROM ${{BASE}}, with the commands its items"
        " run and coreutils' timeout, shipped as package data: see docs/adding-a-benchmark.md), or give an image"
        " with --codebench-image"
    )


def choose(client: docker.DockerClient, context: RunContext, benchmark: str, labels: dict[str, str]) -> ImageChoice:
    """The image for ``benchmark``'s commands, in the order of this module's docstring."""
    chooser = ImageChooser(client, context, labels)
    dockerfile = dockerfile_of(benchmark)
    default_base, needs = declared(dockerfile.read_text()) if isinstance(dockerfile, Path) else (None, [])
    given = context.settings[IMAGE]
    if given:
        if chooser.image_id(given) is None:
            raise HarnessError(f"image {given} does not exist (build it, or leave out --codebench-image)")
        missing = {
            need: f"{given} has no {need}: give an image that has it, or leave out --codebench-image to build one"
            for need in needs
            if not chooser.has(given, need)
        }
        return ImageChoice(given, "given with --codebench-image", missing=missing)
    if isinstance(dockerfile, str):
        raise HarnessError(dockerfile)
    base, base_id, why = chooser.base(context.settings[DOCKER_BASE], default_base)
    image = f"pytest-codebench/{benchmark}:{__version__}-{digest(dockerfile.read_text(), base_id)}"
    chooser.build(image, dockerfile.parent, dockerfile.name, {"BASE": base})
    reason = f"built {why}"
    missing = {}
    mounts: list[str] = []
    for need in needs:
        if chooser.has(image, need):
            continue
        what, find = HOST_TOOLS.get(need, (need, lambda: "the runner cannot bring it from this machine"))
        found = find()
        if isinstance(found, str):
            missing[need] = (
                f"no {what}: {image} has no {need}, and {found}: give an image with a {what} with --codebench-image "
                f"(or make {default_base} pullable), or install a {what} on this machine"
            )
            continue
        image = chooser.with_host_toolkit(image, need, found)
        mounts.append(found.root)
        reason += (
            f"; it has no {need}, so the host's {what} {found.root} (release {found.release}) is mounted read-only"
        )
    return ImageChoice(image, reason, tuple(mounts), missing)
