"""``codebench html REPORT.json... -o DIR``: the command line of the HTML report (its run lives
in reports/merge.py, beside ``merge``, which merges several reports first)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DESCRIPTION = """\
Writes the HTML report of a run into DIR (DIR/index.html, opened from the file system). Several
reports (a run's shards) are merged first, as `merge` does, the merged report kept as
DIR/report.json; one report is drawn as it is, an older run's too.

example:
  codebench html run.json -o report/
  codebench html part1.json part2.json -o report/
"""


def add_command(commands: Any) -> None:
    command = commands.add_parser(
        "html",
        help="write the HTML report of a JSON report (several: a run's shards, merged)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json", help="a --codebench-report")
    command.add_argument("-o", "--output", required=True, type=Path, metavar="DIR", help="the report's folder")
