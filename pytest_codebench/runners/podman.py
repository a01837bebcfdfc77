"""What the docker runner does differently when the engine is podman's Docker-compatible API
(``podman system service``).

Podman gives every container a high open-files and processes limit of its own (1048576 files),
above what the service's own process holds: where that process may not raise its limits (no
CAP_SYS_RESOURCE, as inside another container), runc refuses to start any container ("error
setting rlimit type 7: operation not permitted"). Docker's containers inherit the daemon's. So
under podman, each container is given its limits explicitly, no higher than this process's own,
and the processes limit no higher than podman 4's conmon holds (32768), the most runc may set
below it; the container's pids limit (--codebench-docker-pids) is what bounds its processes.
"""

from __future__ import annotations

import resource
from typing import TYPE_CHECKING

from .docker_sweep import engine_errors

if TYPE_CHECKING:
    import docker
    from docker.types import Ulimit

# The largest limits runc may set under podman without CAP_SYS_RESOURCE: podman's own default
# for files, and what it gives conmon (the parent of runc) for processes.
CEILINGS = {"nofile": (resource.RLIMIT_NOFILE, 1 << 20), "nproc": (resource.RLIMIT_NPROC, 32768)}


def is_podman(client: docker.DockerClient) -> bool:
    """Whether the engine ``client`` talks to is podman (its version names a Podman Engine)."""
    try:
        components = client.version().get("Components") or []
    except engine_errors():
        return False  # the next call to the engine says what is wrong with it
    return any("podman" in str(component.get("Name", "")).lower() for component in components)


def is_rootless(client: docker.DockerClient) -> bool:
    """Whether the engine runs as an ordinary user (rootless podman or Docker), where a
    container's root is that user on this machine and every other id one of its subordinate ids."""
    try:
        info = client.info()
    except engine_errors():
        return False  # the next call to the engine says what is wrong with it
    return bool(info.get("Rootless")) or any("name=rootless" in str(o) for o in info.get("SecurityOptions") or ())


def container_limits(podman: bool) -> list[Ulimit]:
    """The limits every container gets on this engine: none of its own under Docker; under
    podman, this process's own hard limits, capped at :data:`CEILINGS`."""
    if not podman:
        return []
    from docker.types import Ulimit  # here, not at start-up: see docker_sweep.engine_errors

    limits = []
    for name, (which, ceiling) in CEILINGS.items():
        hard = resource.getrlimit(which)[1]
        value = ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)
        limits.append(Ulimit(name=name, soft=value, hard=value))
    return limits
