"""Screenshots of the HTML report of the bundled PIE sample graded for two models, for the docs:
the overview, the speed view and an item, as headless Chromium shows them (tests/browser.py).

    python bench/html_screenshots.py [--out docs] [--report R.json] [-n 2]

Without --report, grades the sample (datasets/pie) with two solution sets: `model-a`, its own
generations, and `model-b`, each row's candidates but its first, in reverse order (fewer fast
answers, another first answer per row: best@1, the counts and the speedups differ), with
`--codebench-html`; with --report, writes the page of that JSON report with `python -m
pytest_codebench html`. Writes OUT/html-overview.png, OUT/html-speed.png and OUT/html-item.png
(whole pages, 1280 pixels wide), and prints where the page is, to open it by hand.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from browser import Browser  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "pie"
# The item shown: a crash (the right count, then exit 3), with its reason, program and short log.
ITEM = "p00001/s0000001[model-a:1]"
WIDTH, HEIGHT = 1280, 900


def two_sets(folder: Path) -> Path:
    rows = [json.loads(line) for line in (SAMPLE / "generations.jsonl").read_text().splitlines() if line]
    # Without each row's first candidate (mostly the sample's fast one), the others reversed.
    reverse = [{**row, "generated_answers": row["generated_answers"][:0:-1]} for row in rows]
    sets = folder / "sets"
    sets.mkdir()
    for name, written in (("model-a", rows), ("model-b", reverse)):
        (sets / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in written))
    return sets


def build(folder: Path, report: Path | None, workers: str) -> tuple[Path, dict[str, Any]]:
    """The page's index.html and the JSON report it shows."""
    html = folder / "html"
    if report is None:
        report = folder / "report.json"
        command = [sys.executable, "-m", "pytest", "--codebench=pie", "-p", "no:cacheprovider", "-n", workers]
        command += ["--codebench-solutions", str(two_sets(folder)), "--codebench-report", str(report)]
        subprocess.run([*command, "--codebench-html", str(html), "-q"], cwd=folder, check=False)
    else:
        command = [sys.executable, "-m", "pytest_codebench", "html", str(report), "-o", str(html)]
        subprocess.run(command, check=True)
    return html / "index.html", json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    parser.add_argument("--report", type=Path, help="a JSON report to show instead of grading the sample")
    parser.add_argument("-n", default="2", help="xdist workers for the sample's run (default 2)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="codebench-html-"))
    page, report = build(folder, args.report, args.n)
    items = {item["id"]: item for item in report["items"]}
    item = items.get(ITEM) or next(iter(items.values()))
    shots = {
        "html-overview.png": "#/",
        "html-speed.png": "#/speed",
        "html-item.png": "#/item/" + quote(item["nodeid"], safe="-_.!~*'()"),
    }
    with Browser(folder / "profile") as browser, browser.tab(WIDTH, HEIGHT) as tab:
        for name, route in shots.items():
            tab.open(page.as_uri() + route, route)
            tab.screenshot(args.out / name, full_page=True)
            print(f"{args.out / name}: {route}")
        if tab.errors:
            print("console errors:", *tab.errors, sep="\n  ")
    print(f"page: {page}")


if __name__ == "__main__":
    main()
