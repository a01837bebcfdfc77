"""``python -m pytest_codebench merge ...``: see :mod:`.merge`."""

from .merge import main

raise SystemExit(main())
