# The image PIE items run in (--codebench-runner docker): Python, a C++ compiler, taskset for
# pinning, and valgrind for --codebench-pie-metric instructions.
ARG BASE=python:3.11-slim
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 g++ util-linux valgrind \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /workspace
