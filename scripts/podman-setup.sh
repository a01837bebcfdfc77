#!/usr/bin/env bash
# Make podman able to start containers on this host, for tests/test_podman.py:
#   - installs podman (Debian's package) when missing,
#   - where its default OCI runtime (crun) cannot start a container and runc can, makes runc
#     podman's runtime (/etc/containers/containers.conf.d/): crun refuses a host whose cgroup
#     v2 hierarchy holds controllers beside v1 ("cgroups in hybrid mode not supported"), as
#     some CI machines are; runc, which Docker brings, runs there.
# The probe runs a container of the base image with the limits the plugin's runner gives
# podman's containers (this shell's hard limits, processes at most 32768: runners/podman.py):
# podman's own defaults ask for more than a host may allow.
# Usage: scripts/podman-setup.sh [IMAGE]  (after scripts/docker-setup.sh)
set -euo pipefail
base=${1:-codebench-base:bookworm}

if ! command -v podman >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman >/dev/null
fi
if ! podman image exists "$base"; then
    docker save "$base" | podman load >/dev/null
fi
files=$(ulimit -Hn)
processes=$(ulimit -Hu)
if [ "$processes" = unlimited ] || [ "$processes" -gt 32768 ]; then processes=32768; fi
probe() {
    podman "$@" run --rm --ulimit "nofile=$files:$files" --ulimit "nproc=$processes:$processes" "$base" echo probe 2>&1
}
if ! said=$(probe); then
    runc=$(command -v runc || true)
    if [ -n "$runc" ] && probe --runtime "$runc" >/dev/null; then
        mkdir -p /etc/containers/containers.conf.d
        printf '[engine]\nruntime = "runc"\n' >/etc/containers/containers.conf.d/codebench-runtime.conf
        echo "podman: crun cannot start a container here ($said); runc is its runtime now" >&2
    else
        echo "podman cannot start a container here: $said" >&2
        exit 1
    fi
fi
probe >/dev/null
