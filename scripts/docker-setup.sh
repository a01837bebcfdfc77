#!/usr/bin/env bash
# Make a Docker engine and a local base image available, without Docker Hub:
#   - installs docker.io and debootstrap (Debian packages) when missing,
#   - starts dockerd in the background when no engine answers,
#   - builds the base image (default codebench-base:bookworm) from Debian's packages.
# The plugin builds the benchmark images FROM it when their own base (nvidia/cuda, python)
# cannot be pulled, or when it is named with --codebench-docker-base; ComputeEval's then gets
# the host's CUDA toolkit mounted read-only (see docs/containers.md). Under
# another name than the default, pass that name with --codebench-docker-base.
# Usage: scripts/docker-setup.sh [IMAGE]     (prints the base image name last)
set -euo pipefail
base=${1:-codebench-base:bookworm}

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    # An engine killed without cleaning up (a session's end) leaves pid files that stop the next.
    for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
        if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then rm -f "$pidfile"; fi
    done
    nohup dockerd >/tmp/codebench-dockerd.log 2>&1 &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || { tail -20 /tmp/codebench-dockerd.log; echo "dockerd did not start" >&2; exit 1; }
fi

if ! docker image inspect "$base" >/dev/null 2>&1; then
    root=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$root" >/tmp/codebench-debootstrap.log 2>&1 \
        || { tail -20 /tmp/codebench-debootstrap.log; exit 1; }
    # The host's trust goes with it: where a proxy re-signs TLS (as on CI machines), pip in
    # the images can still reach the package index. Users' images (python:3.11-slim) need none.
    mkdir -p "$root/etc/codebench"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/codebench/host-ca.pem"
    tar -C "$root" -c . | docker import \
        --change "ENV PIP_CERT=/etc/codebench/host-ca.pem SSL_CERT_FILE=/etc/codebench/host-ca.pem" \
        - "$base" >/dev/null
    rm -rf "$root"
fi
echo "$base"
