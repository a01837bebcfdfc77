"""Work shared by a run's processes: a process killed while it writes the answer leaves
either no answer or the whole one, so the next process never reads half of one."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from pytest_codebench.once import once, write_atomically

# Computes a large answer, so that writing it takes long enough to be killed half way.
WRITER = """
import sys
from pathlib import Path
from pytest_codebench.once import once
once(Path(sys.argv[1]), "probe", lambda: "x" * 300_000_000)
"""


def _kill_while_writing(folder: Path) -> None:
    """Start a process answering ``probe`` in ``folder``; kill it once its answer is partly
    on disk (a file beside the answer's, not yet empty)."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and writer.poll() is None:
            if any(path.stat().st_size > 0 for path in folder.glob(".probe.json.*")):
                writer.send_signal(signal.SIGKILL)
                break
            time.sleep(0.001)
        assert writer.wait() == -signal.SIGKILL, "the answer was not seen being written: nothing was killed"
    finally:
        writer.kill()


def test_a_process_killed_while_writing_its_answer_leaves_none(tmp_path: Path) -> None:
    _kill_while_writing(tmp_path)
    assert not (tmp_path / "probe.json").exists()
    # The next process does the work itself, as if nobody had started it.
    assert once(tmp_path, "probe", lambda: "done again") == "done again"
    assert once(tmp_path, "probe", lambda: "not asked") == "done again"  # and keeps it for the others


def test_an_answer_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "answer.json"
    write_atomically(path, "old")
    write_atomically(path, b"new")
    assert path.read_text() == "new"
    assert [entry.name for entry in tmp_path.iterdir()] == ["answer.json"]  # nothing left beside it
