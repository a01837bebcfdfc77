# The image ComputeEval items build and run in (--codebench-runner docker).
# Users get NVIDIA's CUDA development image; tests build it on a local Debian base.
ARG BASE=nvidia/cuda:13.0.1-devel-ubuntu24.04
FROM ${BASE}
# A C toolchain and Python for host-side harnesses; CUDA images already carry the toolchain.
RUN if ! command -v cc >/dev/null || ! command -v python3 >/dev/null; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev python3 \
        && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /workspace
