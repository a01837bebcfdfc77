"""``python -m pytest_codebench merge ...``: see :mod:`.merge`."""

from .reports.merge import main

raise SystemExit(main())
