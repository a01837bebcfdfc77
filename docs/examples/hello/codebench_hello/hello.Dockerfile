# The image hello's items run in (--codebench-runner docker): Python, and coreutils' `timeout`,
# which the runner runs every command under. Built once per machine as pytest-codebench/hello,
# FROM --codebench-docker-base if given, else this BASE, else the local codebench-base:bookworm.
ARG BASE=python:3.11-slim
FROM ${BASE}
RUN command -v python3 >/dev/null || { apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 \
        && rm -rf /var/lib/apt/lists/*; }
WORKDIR /workspace
