# The image TensorBench environments are built on (--codebench-runner docker): Python 3.11, a C++
# toolchain and ccache. Each environment (a base commit's requirements) is an image FROM this one.
ARG BASE=python:3.11-slim
FROM ${BASE}
RUN apt-get update \
    && packages="g++ ccache ca-certificates" \
    && if ! command -v python3 >/dev/null; then packages="$packages python3 python3-venv python3-dev"; fi \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /workspace
