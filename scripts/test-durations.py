"""Each test module's measured time, for ordering the suite (tests/conftest.py): the heaviest
modules start first, so that under xdist no long test starts last.

    pytest -n 2 --durations=0 ... | tee run.log
    python scripts/test-durations.py run.log > tests/durations.json

Reads the ``--durations`` lines of a pytest run (setup, call and teardown of each test) and
writes {module: seconds}, the heaviest first, rounded to the second. Modules under a second are
left out: their order does not matter.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+?\.py)::")


def module_seconds(lines: list[str]) -> dict[str, int]:
    spent: dict[str, float] = defaultdict(float)
    for line in lines:
        match = LINE.match(line)
        if match:
            spent[match.group(2)] += float(match.group(1))
    return {module: round(seconds) for module, seconds in sorted(spent.items(), key=lambda kv: -kv[1]) if seconds >= 1}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        print(json.dumps(module_seconds(log.read().splitlines()), indent=1))


if __name__ == "__main__":
    main()
