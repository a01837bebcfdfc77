"""The HTML report (--codebench-html, `python -m pytest_codebench html`) looked at as a person
would, in headless Chromium (tests/browser.py): a real plugin run of the bundled PIE sample with
two solution sets, serial and under xdist; the leaderboard against the JSON report, a click
through to an item's logs, a filter, no console errors, and a hostile candidate shown as text."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import test_html_data as made_up
from browser import Browser, BrowserError, Tab

from conftest import XDIST_MODES
from pytest_codebench.reports.html import write_html

# The bundled sample's rows graded and timed (a minute or so on a busy 2-core machine), once per
# xdist mode and once for the shards: `pytest -m "not slow"` leaves them out while developing.
pytestmark = pytest.mark.slow

# Each set answers some rows of the bundled sample (datasets/pie), with candidates of its own:
# the rows either set answers are the sweep's, and a row a set leaves out is its missing_solution.
GENERATIONS = (Path(__file__).parents[1] / "datasets" / "pie" / "generations.jsonl").read_text().splitlines()
SAMPLE, SECOND_ROW = (json.loads(line) for line in GENERATIONS[:2])
FASTER, CRASH, WRONG = SAMPLE["generated_answers"]
# A candidate whose program and output (hence its log and its failure's reason) try to break out
# of the page's HTML and of its data's JS strings, in colour: shown as text, it runs nothing.
HOSTILE = (
    "# </script><script>window.pwned=1</script>\n"
    '# "); window.pwned=3; (" \u2028 `${window.pwned=4}`\n'
    '# <img src=x onerror="window.pwned=2">\n'
    "print('\\x1b[31m</script><script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">\\x1b[0m')\n"
)
SETS = {
    "model-a": [{"input": SAMPLE["input"], "generated_answers": [FASTER, HOSTILE]}],
    "model-b": [
        {"input": SAMPLE["input"], "generated_answers": [WRONG, CRASH]},
        {"input": SECOND_ROW["input"], "generated_answers": [SECOND_ROW["input"]]},
    ],
}
# The items above: the hostile one and one with a log to click through to.
HOSTILE_ID, CRASH_ID = "p00001/s0000001[model-a:1]", "p00001/s0000001[model-b:1]"
# The fewest timed trials a speedup can be shown with (5, none ignored).
ARGS = ("--codebench=pie", "--codebench-pie", "num_trials=5 ignore_first_k=0", "-p", "no:cacheprovider")
VIEWS = ("#/", "#/speed", "#/problems")
# The item's logs, by name: {data-log: text}.
LOGS = 'Object.fromEntries([...document.querySelectorAll("#item pre.log")].map(p => [p.dataset.log, p.textContent]))'


@dataclasses.dataclass
class Run:
    """A plugin run's JSON report and the HTML report's index.html."""

    report: dict[str, Any]
    page: Path

    def item(self, item_id: str) -> dict[str, Any]:
        return next(item for item in self.report["items"] if item["id"] == item_id)

    def url(self, route: str) -> str:
        return self.page.as_uri() + route


def inner_pytest(tmp: pytest.TempPathFactory, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest ARGS args`` in ``folder``, with a verdict store of this test session's own: the rows
    are graded once (seconds each on a quiet machine), and the other xdist mode's run and the
    shards' runs take their verdicts from it, as a user's rerun would; the logs those verdicts
    name are this session's (a store kept across sessions would name logs pytest has since removed)."""
    cache = tmp.getbasetemp() / "codebench-cache"
    command = [sys.executable, "-m", "pytest", *ARGS, f"--codebench-cache-dir={cache}", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


def write_sets(folder: Path) -> Path:
    sets = folder / "sets"
    sets.mkdir()
    for name, rows in SETS.items():
        (sets / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return sets


def written(done: subprocess.CompletedProcess[str], report: Path, page: Path) -> Run:
    assert page.is_file(), f"no {page} (exit status {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return Run(json.loads(report.read_text()), page)


@pytest.fixture(scope="module", params=list(XDIST_MODES), ids=list(XDIST_MODES))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One plugin run per xdist mode, looked at by every test of the module (a run per test would
    grade the same rows again: pytester's folder is a test's own)."""
    folder = tmp_path_factory.mktemp(f"html-{request.param}")
    sets = write_sets(folder)
    report, html = folder / "report.json", folder / "html"
    extra = XDIST_MODES[request.param]
    done = inner_pytest(
        tmp_path_factory,
        folder,
        "--codebench-solutions",
        str(sets),
        "--codebench-report",
        str(report),
        "--codebench-html",
        str(html),
        *extra,
    )
    return written(done, report, html / "index.html")


def item_route(nodeid: str) -> str:
    # As JavaScript's encodeURIComponent spells it: the page's own links are built with it.
    return "#/item/" + quote(nodeid, safe="-_.!~*'()")


def shows_program(shown: str | None, program: str) -> bool:
    """Whether the page shows every line of ``program``, as it is or as a diff's added lines."""
    return shown is not None and all(line in shown for line in program.splitlines())


def numbers(text: str) -> list[float]:
    return [float(found) for found in re.findall(r"-?\d+(?:\.\d+)?", text.replace(",", ""))]


def metric_value(report: dict[str, Any], model: str, metric: str) -> float | None:
    """The figure a leaderboard cell names, read from a model's summary in the JSON report:
    ``count:OUTCOME``, ``items`` (all counted), ``excused`` (items the machine excused),
    ``not-graded`` (problems left out of the metrics); ``score`` (the gate's); ``pass@K`` (the report keeps a fraction,
    the page a percent); PIE's ``correct@K``, ``optimized@K``, ``mean_speedup@K`` (best@K);
    ComputeEval's ``fast_P[@K]`` and ``geomean[@K]`` (perf's best@K, K=1 unsaid)."""
    summary = report["models"][model]
    if metric.startswith("count:"):
        return float(summary["counts"].get(metric.removeprefix("count:"), 0))
    if metric == "items":
        return float(sum(summary["counts"].values()))
    if metric == "excused":
        return float(sum(1 for item in report["items"] if item["model"] == model and item["excused"]))
    if metric == "score":  # the gate's figure, in percent
        return _number(summary["score"])
    metrics = summary["metrics"]
    if metric == "not-graded":
        return float(len(metrics.get("excluded") or []))
    name, _, k = metric.partition("@")
    if name == "pass":
        value = _number(metrics["pass@k"][k])
        return None if value is None else 100.0 * value
    if name in ("correct", "optimized", "optimized_at_bar", "mean_speedup"):
        return _number(metrics[f"best@{k}"][name])
    best = metrics["perf"]["best_at_k"][k or "1"]
    if name == "geomean":
        return _number(best["geomean"])
    if name.startswith("fast_"):
        return _number(best["fast_p"][name.removeprefix("fast_")])
    raise AssertionError(f"the leaderboard shows {metric!r}: no figure of that name in the JSON report")


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def open_view(tab: Tab, run: Run, route: str) -> None:
    tab.open(run.url(route), route)
    assert tab.errors == [], f"{route}: {tab.errors}"


def leaderboard(tab: Tab) -> list[dict[str, str]]:
    cells: list[dict[str, str]] = tab.evaluate(
        """[...document.querySelectorAll("#leaderboard tr[data-model] td[data-metric]")].map(td => ({
            model: td.closest("tr").dataset.model, metric: td.dataset.metric,
            value: td.dataset.value ?? "", text: td.textContent}))"""
    )
    return cells


def test_the_leaderboard_shows_the_json_reports_numbers(browser: Browser, run: Run) -> None:
    with browser.tab() as tab:
        open_view(tab, run, "#/")
        cells = leaderboard(tab)
        models = run.report["models"]
        assert {cell["model"] for cell in cells} == set(models)
        for name, summary in models.items():
            mine = [cell for cell in cells if cell["model"] == name]
            assert any(not cell["metric"].startswith("count:") for cell in mine), f"{name}: no metric shown"
            shown_counts = {cell["metric"] for cell in mine if cell["metric"].startswith("count:")}
            assert {f"count:{outcome}" for outcome in summary["counts"]} <= shown_counts
            for cell in mine:
                expected = metric_value(run.report, name, cell["metric"])
                if expected is None:  # a figure the run could not compute: no number shown
                    assert cell["value"] in ("", "null") and not numbers(cell["text"]), (name, cell)
                    continue
                assert float(cell["value"]) == pytest.approx(expected, rel=1e-9, abs=1e-12), (name, cell)
                # What a person reads: the number itself, as rounded for the eye.
                assert any(abs(n - expected) <= max(0.051, abs(expected) * 1e-3) for n in numbers(cell["text"])), (
                    name,
                    cell,
                )
        header = tab.text("header#run") or ""
        assert run.report["harness_version"] in header
        assert run.report["dataset"]["sha256"][:12] in header
        assert run.report["dataset"]["path"] in header and "--codebench=pie" in header
        assert run.report["environment"]["runner"]["summary"] in header


def group_value(report: dict[str, Any], model: str, group: str, metric: str) -> float:
    """A per-group cell's figure: the benchmark's pass@1 of the group (``pass@1``, ComputeEval),
    else the percent of the model's scored items of the group that passed (``passed``)."""
    if metric == "pass@1":
        return 100.0 * float(report["models"][model]["metrics"]["groups"][group]["pass@k"]["1"])
    assert metric == "passed", f"the group table shows {metric!r}"
    mine = [i for i in report["items"] if i["model"] == model and i["group"] == group and not i["excused"]]
    return 100.0 * sum(item["outcome"] == "passed" for item in mine) / len(mine)


def test_the_group_table_has_each_groups_figure_per_model_and_links_to_its_tasks(browser: Browser, run: Run) -> None:
    groups = {item["group"] for item in run.report["items"]}
    with browser.tab() as tab:
        open_view(tab, run, "#/")
        cells = tab.evaluate(
            """[...document.querySelectorAll("#groups tr[data-group] td[data-model]")].map(td => ({
                group: td.closest("tr").dataset.group, model: td.dataset.model, metric: td.dataset.metric,
                value: td.dataset.value, text: td.textContent}))"""
        )
        assert {(cell["group"], cell["model"]) for cell in cells} == {(g, m) for g in groups for m in SETS}
        for cell in cells:
            expected = group_value(run.report, cell["model"], cell["group"], cell["metric"])
            assert float(cell["value"]) == pytest.approx(expected), cell
            assert any(abs(n - expected) <= 0.051 for n in numbers(cell["text"])), cell
        tab.click('#groups tr[data-group="p00001"] a')
        tab.wait_for('document.body.dataset.ready?.startsWith("#/problems")')
        assert count_becomes(tab, 2) == (2, 2)
        assert tab.evaluate('document.querySelector("#filter-group").value') == "p00001"
        assert tab.errors == []


def test_clicking_a_task_shows_its_logs(browser: Browser, run: Run) -> None:
    item = run.item(CRASH_ID)
    ((name, path),) = item["logs"].items()
    with browser.tab() as tab:
        open_view(tab, run, "#/problems")
        tab.click(f'#matrix td[data-item="{item["nodeid"]}"] a')
        tab.wait_ready(item_route(item["nodeid"]))
        assert item["outcome"] in (tab.text('#item [data-field="outcome"]') or "")
        assert item["reason"] in (tab.text('#item [data-field="reason"]') or "")
        assert item["nodeid"] in (tab.text('#item [data-field="nodeid"]') or "")
        logs = tab.evaluate(LOGS)
        shown = logs.get(name, logs.get(Path(path).name))
        assert shown is not None, f"no log {name!r} on the page: {list(logs)}"
        assert Path(path).read_text().strip() in shown and "# exit code 3" in shown
        assert tab.errors == []
        assert shows_program(tab.text("#item pre.solution"), CRASH), tab.text("#item")


def test_a_timed_items_page_shows_its_speedup_and_interval(browser: Browser, run: Run) -> None:
    item = run.item("p00001/s0000001[model-a:0]")
    figures = item["figures"]
    with browser.tab() as tab:
        open_view(tab, run, item_route(item["nodeid"]))
        shown = numbers(tab.text('#item [data-field="figures"]') or "")
        for name in ("speedup", "ci_low", "ci_high", "trials"):
            assert any(abs(n - figures[name]) <= 0.0051 for n in shown), (name, figures[name], shown)
        assert item["outcome"] in (tab.text('#item [data-field="outcome"]') or "")


def matrix_count(tab: Tab) -> tuple[int, int]:
    """The count the page says, and the rows it shows."""
    said = numbers(tab.text("#matrix-count") or "")
    assert said, f"no count in #matrix-count: {tab.text('#matrix-count')!r}"
    return int(said[0]), tab.evaluate('document.querySelectorAll("#matrix tr[data-task]").length')


def count_becomes(tab: Tab, expected: int) -> tuple[int, int]:
    """The count and rows once the page has shown ``expected`` (a filter may re-render a moment later)."""
    with contextlib.suppress(BrowserError):
        tab.wait_for(
            f'(document.querySelector("#matrix-count")?.textContent.match(/\\d+/) ?? [])[0] === "{expected}"', 10
        )
    return matrix_count(tab)


def test_a_filter_narrows_the_matrix(browser: Browser, run: Run) -> None:
    tasks = {item["task_id"] for item in run.report["items"]}
    crashed = {item["task_id"] for item in run.report["items"] if item["outcome"] == "runtime_error"}
    with browser.tab() as tab:
        open_view(tab, run, "#/problems")
        assert matrix_count(tab) == (len(tasks), len(tasks)) == (2, 2)
        # Every item in its cell, coloured (data-outcome) by its outcome.
        cells = tab.evaluate(
            'Object.fromEntries([...document.querySelectorAll("#matrix td[data-item]")]'
            ".map(td => [td.dataset.item, td.dataset.outcome]))"
        )
        assert cells == {item["nodeid"]: item["outcome"] for item in run.report["items"]}
        tab.choose("#filter-outcome", "runtime_error")
        assert count_becomes(tab, len(crashed)) == (1, 1)
        tab.choose("#filter-outcome", "")
        assert count_becomes(tab, 2) == (2, 2)
        tab.type("#filter-text", "s0000002")
        assert count_becomes(tab, 1) == (1, 1)
        assert tab.evaluate('document.querySelector("#matrix tr[data-task]").dataset.task') == "p00001/s0000002"
        # The filter as a link: opened afresh, the page shows the same narrowed matrix.
        open_view(tab, run, "#/problems?outcome=missing_solution")
        assert matrix_count(tab) == (1, 1)
        assert tab.evaluate('document.querySelector("#filter-outcome").value') == "missing_solution"
        assert tab.errors == []


def test_every_view_and_item_opens_without_a_console_error(browser: Browser, run: Run) -> None:
    with browser.tab() as tab:
        for route in [*VIEWS, *(item_route(item["nodeid"]) for item in run.report["items"])]:
            open_view(tab, run, route)


def test_the_speed_view_has_each_models_charts_and_the_two_side_by_side(browser: Browser, run: Run) -> None:
    with browser.tab() as tab:
        open_view(tab, run, "#/speed")
        figures = tab.evaluate('[...document.querySelectorAll("figure[id]")].map(f => f.id)')
        expected = {f"{chart}-chart-{name}" for name in SETS for chart in ("speedup", "fastp")} | {"speedup-vs"}
        assert expected <= set(figures)
        assert tab.errors == []


def test_a_hostile_candidate_is_shown_as_text_and_runs_nothing(browser: Browser, run: Run) -> None:
    item = run.item(HOSTILE_ID)
    assert item["outcome"] == "wrong_output"
    with browser.tab() as tab:
        for route in (*VIEWS, item_route(item["nodeid"])):
            open_view(tab, run, route)
        tab.evaluate("new Promise(done => setTimeout(done, 300))")  # an <img>'s onerror comes later
        log = tab.evaluate('[...document.querySelectorAll("#item pre.log")].map(p => p.textContent).join("")')
        assert '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">' in log
        assert "\x1b" not in log and "[31m" not in log  # ANSI escapes stripped
        assert "window.pwned=1</script>" in (tab.text('#item [data-field="reason"]') or "")
        assert tab.evaluate("typeof window.pwned") == "undefined"
        assert tab.evaluate('document.querySelectorAll("#item img, #item script").length') == 0
        assert tab.errors == []
        assert shows_program(tab.text("#item pre.solution"), HOSTILE), tab.text("#item")


def test_a_long_log_is_cut_with_a_link_to_the_whole_log(browser: Browser, run: Run, tmp_path: Path) -> None:
    # The run's own report, one item's log swapped for a long coloured one (a build's, say).
    lines = [f"\x1b[1m{n:06d}\x1b[0m: <b>compiling</b> kernel_{n}.cu" for n in range(20_000)]
    log = tmp_path / "long.log"
    log.write_text("\n".join(lines) + "\n")
    report = json.loads(json.dumps(run.report))
    item = next(item for item in report["items"] if item["id"] == CRASH_ID)
    item["logs"] = {"build": str(log)}
    (tmp_path / "long.json").write_text(json.dumps(report))
    html = tmp_path / "html"
    command = [sys.executable, "-m", "pytest_codebench", "html", str(tmp_path / "long.json"), "-o", str(html)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with browser.tab() as tab:
        open_view(tab, Run(report, html / "index.html"), item_route(item["nodeid"]))
        shown = tab.evaluate(LOGS)["build"]
        assert "000000: <b>compiling</b> kernel_0.cu" in shown and "019999: <b>compiling</b>" in shown
        assert "\x1b" not in shown and len(shown) < log.stat().st_size / 2
        href = tab.evaluate('document.querySelector("#item a.whole-log")?.getAttribute("href") ?? null')
        assert href is not None and not href.startswith(("/", "file:")), href
        whole = (html / href).read_text()
        assert all(line.split("\x1b[0m")[-1] in whole for line in (lines[0], lines[10_000], lines[-1]))
        assert tab.errors == []


def test_shard_reports_make_one_page_with_every_item_that_can_move(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, browser: Browser
) -> None:
    sets = write_sets(tmp_path)
    parts = [tmp_path / f"part{part}.json" for part in (1, 2)]
    for part, report in enumerate(parts, 1):
        done = inner_pytest(
            tmp_path_factory,
            tmp_path,
            "--codebench-solutions",
            str(sets),
            f"--codebench-shard={part}/2",
            "--codebench-report",
            str(report),
        )
        assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    html = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_codebench", "html", *map(str, parts), "-o", str(html)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    items = [item for report in parts for item in json.loads(report.read_text())["items"]]
    assert {item["task_id"] for item in items} == {"p00001/s0000001", "p00001/s0000002"}
    # The folder moved after it was written (sent as a CI artifact, say): its links are relative.
    moved = tmp_path / "elsewhere" / "page"
    moved.parent.mkdir()
    html.rename(moved)
    merged = Run({"items": items, "models": {}}, moved / "index.html")
    with browser.tab() as tab:
        open_view(tab, merged, "#/problems")
        assert matrix_count(tab) == (2, 2)
        shown = tab.evaluate('[...document.querySelectorAll("#matrix td[data-item]")].map(td => td.dataset.item)')
        assert sorted(shown) == sorted(item["nodeid"] for item in items)
        open_view(tab, merged, "#/")
        assert {cell["model"] for cell in leaderboard(tab)} == set(SETS)
        crash = merged.item(CRASH_ID)
        open_view(tab, merged, item_route(crash["nodeid"]))
        assert "# exit code 3" in "".join(tab.evaluate(LOGS).values())
        assert tab.errors == []


def test_a_run_without_a_score_says_why_beside_the_model(browser: Browser, tmp_path: Path) -> None:
    """No GPU: the leaderboard names the reason and leaves pass@1 empty, never 0% (the page of a
    made-up report: tests/test_headlines.py checks that a real run's report says the same)."""
    reason = "no usable CUDA GPU: no sample could be graded to a pass here"
    items = [made_up.item("T/1", None, 0, "skipped"), made_up.item("T/2", None, 0, "build_error")]
    metrics = {"pass@k": {"1": 0.0}, "problems": 1, "excluded": ["T/1"], "no_pass_here": True}
    write_html(
        made_up.report(items, metrics=metrics, counts={"build_error": 1, "skipped": 1}, score=None, no_score=reason),
        tmp_path,
    )
    with browser.tab() as tab:
        tab.open((tmp_path / "index.html").as_uri() + "#/", "#/")
        assert tab.errors == []
        said = tab.evaluate('document.querySelector("#leaderboard [data-field=no-score]").textContent')
        assert said == f"no score here: {reason}"
        (cell,) = [cell for cell in leaderboard(tab) if cell["metric"] == "pass@1"]
        assert (cell["value"], cell["text"]) == ("", "–")
