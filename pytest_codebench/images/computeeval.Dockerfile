# The image ComputeEval items build and run in (--codebench-runner docker).
# Users get NVIDIA's CUDA development image; where it cannot be had (no registry), the runner
# builds on a local base and mounts the host's CUDA toolkit (see runners/docker_images.py).
ARG BASE=nvidia/cuda:13.0.1-devel-ubuntu24.04
FROM ${BASE}
# Items run nvcc: an image built here without it gets the host's toolkit, read-only.
LABEL org.pytest-codebench.needs="nvcc"
# The host compiler nvcc drives (g++, with gcc and libc's headers) and Python for host-side
# harnesses; CUDA development images already carry the compiler.
RUN if ! command -v c++ >/dev/null || ! command -v python3 >/dev/null; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++ libc6-dev python3 \
        && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /workspace
