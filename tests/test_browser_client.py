"""The browser tests' own client (tests/browser.py) on small pages of its own: it must see what a
person would, and catch what a person would miss, or the HTML report's tests prove nothing."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from browser import Browser, BrowserError, console_error, session_processes

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>t</title></head>
<body>
<button id="go" style="width:200px;height:40px">go</button>
<p id="out">nothing yet</p>
<input id="q" value="old"><select id="s"><option value="a">a</option><option value="b">b</option></select>
<script>
  function render() {
    document.getElementById("out").textContent = "route " + location.hash;
    document.body.dataset.ready = location.hash;
  }
  document.getElementById("go").addEventListener("click", () => {
    document.getElementById("out").textContent = "clicked";
  });
  for (const id of ["q", "s"]) {
    const el = document.getElementById(id);
    el.addEventListener(id === "q" ? "input" : "change", () => {
      document.getElementById("out").textContent = id + "=" + el.value;
    });
  }
  window.addEventListener("hashchange", render);
  render();
  BODY_SCRIPT
</script>
</body></html>
"""


def page(tmp_path: Path, script: str = "") -> str:
    path = tmp_path / "page.html"
    path.write_text(PAGE.replace("BODY_SCRIPT", script))
    return path.as_uri()


def test_a_page_is_waited_for_and_a_click_lands(browser: Browser, tmp_path: Path) -> None:
    url = page(tmp_path)
    with browser.tab() as tab:
        tab.open(url + "#/first", "#/first")
        assert tab.text("#out") == "route #/first"
        tab.click("#go")
        assert tab.text("#out") == "clicked"
        tab.open(url + "#/second", "#/second")
        assert tab.text("#out") == "route #/second"
        assert tab.errors == []


def test_typing_and_choosing_fire_the_events_a_person_would(browser: Browser, tmp_path: Path) -> None:
    with browser.tab() as tab:
        tab.open(page(tmp_path), "")
        tab.type("#q", "p0001")
        assert tab.text("#out") == "q=p0001"
        tab.choose("#s", "b")
        assert tab.text("#out") == "s=b"
        with pytest.raises(BrowserError, match="no option 'c' in '#s'"):
            tab.choose("#s", "c")
        assert tab.errors == []


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ('console.error("the view broke");', "console.error: the view broke"),
        ('setTimeout(() => { throw new Error("boom"); });', "uncaught: Error: boom"),
        ('document.head.append(Object.assign(document.createElement("script"), {src: "data/missing.js"}));', "log: "),
    ],
    ids=["console.error", "uncaught", "missing-file"],
)
def test_every_kind_of_page_error_is_caught(browser: Browser, tmp_path: Path, script: str, expected: str) -> None:
    with browser.tab() as tab:
        tab.open(page(tmp_path, script), "")
        tab.evaluate("new Promise(done => setTimeout(done, 100))")
        errors = tab.errors
        assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_a_page_that_never_renders_the_route_fails_saying_so(browser: Browser, tmp_path: Path) -> None:
    with browser.tab() as tab, pytest.raises(BrowserError, match="did not render '#/never'.*ready: ''"):
        tab.goto(page(tmp_path))
        tab.wait_ready("#/never", timeout=0.5)


def test_a_missing_element_and_a_throwing_expression_fail(browser: Browser, tmp_path: Path) -> None:
    with browser.tab() as tab:
        tab.open(page(tmp_path), "")
        with pytest.raises(BrowserError, match="nothing on the page matches '#nope'"):
            tab.click("#nope")
        with pytest.raises(BrowserError, match="ReferenceError"):
            tab.evaluate("undefinedName.x")


def test_a_screenshot_is_a_png_of_the_page(browser: Browser, tmp_path: Path) -> None:
    with browser.tab(width=640, height=480) as tab:
        tab.open(page(tmp_path), "")
        png = tab.screenshot(tmp_path / "shot.png")
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", png[16:24]) == (640, 480)
        assert (tmp_path / "shot.png").read_bytes() == png
        metrics = tab.metrics()
        assert metrics["Nodes"] > 0 and metrics["JSHeapUsedSize"] > 0


def test_closing_ends_every_process_of_the_browser(tmp_path: Path, browser: Browser) -> None:
    # ``browser`` only so that this test skips (or fails in CI) where there is no Chromium.
    with Browser(tmp_path / "profile") as own, own.tab() as tab:
        tab.open(page(tmp_path), "")
        assert len(session_processes(own.process.pid)) > 1  # the browser, its zygotes, a renderer...
    assert own.process.returncode is not None
    assert session_processes(own.process.pid) == []


def test_an_event_that_is_no_error_is_not_one() -> None:
    assert console_error({"method": "Runtime.consoleAPICalled", "params": {"type": "log", "args": []}}) is None
    assert console_error({"method": "Log.entryAdded", "params": {"entry": {"level": "warning", "text": "x"}}}) is None
