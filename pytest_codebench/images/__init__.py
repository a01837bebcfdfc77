"""Dockerfiles of the benchmarks images (``--codebench-runner docker``)."""
