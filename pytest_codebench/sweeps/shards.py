"""Which part of a run's items a shard grades (``--codebench-shard I/N``), for a CI matrix.

Every sample of a task goes to the same shard, so that each shard's pass@k over its tasks is
exact and the shards' items together are the whole run's, each once. The part is a hash of the
task's id, so it is the same in every process of a run and on every machine of a matrix.
"""

from __future__ import annotations

import hashlib
import re

Shard = tuple[int, int]  # (I, N): part I of N, from 1


def parse_shard(text: str) -> Shard:
    """``I/N`` with 1 <= I <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None:
        raise ValueError(f"expected I/N (part I of N, e.g. 1/4), not {text.strip()!r}")
    part, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= part <= count:
        raise ValueError(f"there is no part {part} of {count}: I runs from 1 to N")
    return part, count


def shard_of(key: str, count: int) -> int:
    """The part (1 to ``count``) that the task named ``key`` belongs to."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1
