"""The static HTML report of a run (``--codebench-html DIR``, ``codebench html``): the JSON
report turned into data files that a plain page loads from the file system (see docs/reports.md)."""

from .writer import write_html

__all__ = ["write_html"]
