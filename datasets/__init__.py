"""Bundled sample datasets of pytest-codebench."""
