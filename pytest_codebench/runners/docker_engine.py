"""The Docker engine a process talks to, and its identity.

Each process follows its own ``DOCKER_HOST`` (the Docker SDK's ``from_env``): an xdist worker
on another host, or one started with ``--tx popen//env:DOCKER_HOST=...``, uses the engine its
environment names, not the controller's. Workers of one host share a run folder, and so what
the run decides once (the image, whether it has ``timeout``, the sweep of stale containers):
those decisions are keyed by the engine's identity, so that two engines never share one.
"""

from __future__ import annotations

import hashlib
import os
import socket
from typing import TYPE_CHECKING

from ..errors import HarnessError
from .docker_sweep import engine_errors
from .podman import is_podman

if TYPE_CHECKING:
    import docker


def engine_address() -> str:
    """The engine this process's environment names, as a user would set it."""
    host = os.environ.get("DOCKER_HOST")
    return f"DOCKER_HOST={host}" if host else "the default engine (DOCKER_HOST is not set)"


def connect() -> docker.DockerClient:
    """A client of the engine DOCKER_HOST names (or the local socket), checked to answer. The
    error names the engine and this host: under xdist, each worker has its own."""
    import docker  # here, not at start-up: see docker_sweep.engine_errors

    try:
        client = docker.from_env(version="auto", timeout=120)
        client.ping()
    except engine_errors() as exc:
        raise HarnessError(f"no Docker engine answers at {engine_address()} on {socket.gethostname()}: {exc}") from None
    return client


def engine_id(client: docker.DockerClient) -> str:
    """A short, file-name-safe identity of the engine ``client`` talks to: its own ID (the same
    over every address that reaches it), else its address."""
    try:
        info = client.info()
    except engine_errors() as exc:
        raise HarnessError(f"the Docker engine at {engine_address()} failed: {exc}") from None
    ident = str(info.get("ID") or "")
    if is_podman(client):
        # Podman's compatible API answers a new random ID on every call: its host and store
        # are what stay the same (else each process of a run would see another engine).
        ident = f"podman {info.get('Name')} {info.get('DockerRootDir')}"
    return hashlib.sha256((ident or client.api.base_url).encode()).hexdigest()[:12]
