"""pytest-codebench: grade code-generation benchmarks as pytest items."""

__version__ = "0.1.0"
