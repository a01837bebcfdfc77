"""``python -m pytest_codebench merge ...``, the ``codebench`` console script: see :mod:`.reports.merge`."""

from .reports.merge import python_m

raise SystemExit(python_m())
