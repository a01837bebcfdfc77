"""The benchmarks that ship with pytest-codebench; each registers through an entry point."""
