"""Slot pools (build slots): a slot is held by one holder at a time, whether the others are
threads of the same process or other processes on the machine."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_codebench.errors import HarnessError
from pytest_codebench.once import SlotPool

HOLD = """
import sys, time
from pathlib import Path
from pytest_codebench.once import SlotPool
with SlotPool(Path(sys.argv[1]), "build", ["0"]).acquire(30) as slot:
    print("holding", slot, flush=True)
    time.sleep(60)
"""


def test_threads_of_one_process_take_a_slot_in_turn(tmp_path: Path) -> None:
    pool = SlotPool(tmp_path, "build", ["0"])
    holders: list[int] = []
    seen: list[int] = []

    def work() -> None:
        with pool.acquire(60):
            holders.append(1)
            seen.append(len(holders))
            time.sleep(0.02)
            holders.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [1, 1, 1, 1]


def test_a_slot_another_process_holds_is_not_given(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding 0"
        with SlotPool(tmp_path, "build", ["0", "1"]).acquire(5) as slot:
            assert slot == "1"
        with pytest.raises(HarnessError, match="waited 0 s for a free build slot"):
            with SlotPool(tmp_path, "build", ["0"]).acquire(0.2):
                pass
    finally:
        holder.kill()
        holder.wait()
    # The holder is gone, and its lock with it.
    with SlotPool(tmp_path, "build", ["0"]).acquire(5) as slot:
        assert slot == "0"
