"""The image a case names for its own commands (ComputeEval's ``base_image``, e.g. NVIDIA's
``compute-eval:13.1.0`` for the cutlass and cute-dsl groups), as the docker runner finds it.

The problem's commands run in that image itself, as NVIDIA's podman evaluator runs them: not in
one built FROM it (the plugin's own image adds only a compiler and Python that such an image
already has). The guard and canary files reach it as they reach any image, mounted read-only
from the cache folder.

Where it is found, first that applies, once per run and engine:

1. on the engine, by the name the case gives (built or loaded there: ``docker load``);
2. with ``--codebench-registry HOST[:PORT][/PATH]``, a name without a registry of its own
   (``compute-eval:13.1.0``, not ``nvcr.io/...`` or ``localhost/...``) is looked for as
   ``HOST[:PORT][/PATH]/NAME``, on the engine, else pulled from there (a pull-through cache or
   a local registry);
3. else pulled by its own name, from wherever the engine is configured to pull (Docker's
   registry mirrors, podman's registries.conf).

An image none of them gives is :class:`ImageUnavailable`: the case is skipped, never failed,
with the name and the ways to get it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from ..context import RunContext
from ..options import Option
from . import ImageUnavailable
from .docker_engine import engine_address
from .docker_images import ImageChooser, digest

if TYPE_CHECKING:
    import docker


class Found(TypedDict, total=False):
    """What the run found for a case's image: the name it runs under and its id, or why none."""

    image: str
    id: str
    error: str


def parse_registry(value: str) -> str | None:
    """``HOST[:PORT][/PATH]``: a registry, with neither a scheme nor a digest."""
    registry = value.strip().rstrip("/")
    if not registry or "://" in registry or "@" in registry or any(c.isspace() for c in registry):
        raise ValueError(f"expected HOST[:PORT][/PATH] (a registry, no scheme), not {value!r}")
    return registry


REGISTRY = Option(
    "registry",
    "Registry (HOST[:PORT][/PATH], a pull-through cache or a local registry) where the docker runner looks for "
    "the images problems name (base_image) that are neither on the engine nor qualified with a registry of their own.",
    None,
    parse_registry,
    "HOST[:PORT]",
)


def names_registry(image: str) -> bool:
    """Whether ``image`` names its registry: a first component with a dot or a port, or localhost
    (Docker's own rule for telling a registry from a Docker Hub user)."""
    first, slash, _ = image.partition("/")
    return bool(slash) and ("." in first or ":" in first or first == "localhost")


def in_registry(image: str, registry: str | None) -> str | None:
    """The name ``image`` has in ``registry``, or None when there is no registry to look in or
    the image names its own."""
    if registry is None or names_registry(image):
        return None
    return f"{registry}/{image}"


def find(client: docker.DockerClient, context: RunContext, engine: str, image: str) -> Found:
    """``image`` on this engine, in the order of this module's docstring (once per run and engine)."""
    registry: str | None = context.settings[REGISTRY]

    def look() -> Found:
        chooser = ImageChooser(client, context, {})
        found = chooser.image_id(image)
        if found is not None:
            return {"image": image, "id": found}
        mirrored = in_registry(image, registry)
        for name in (mirrored,) if mirrored else (image,):
            found = chooser.obtain(name)
            if found is not None:
                return {"image": name, "id": found}
        tried = f"nor pulled from {mirrored}" if mirrored else "nor pulled"
        return {
            "error": f"the problem's image {image} is not on the Docker engine ({engine_address()}) {tried}"
            f" ({chooser.pull_error}): get it with `docker pull {mirrored or image}` (or podman pull) where the"
            f" registry is reachable, or `docker save {image}` there and `docker load` here, or name a registry that"
            f" has it with --codebench-registry"
        }

    return Found(**context.once(f"docker-case-image-{engine}-{digest(image, registry or '')}", look))  # type: ignore[typeddict-item]


def require(found: Found) -> tuple[str, str]:
    """The name and id of a found image; :class:`ImageUnavailable` with the reason otherwise."""
    if "error" in found:
        raise ImageUnavailable(found["error"])
    return found["image"], found["id"]
