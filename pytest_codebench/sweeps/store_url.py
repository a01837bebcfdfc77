"""``--codebench-store s3://BUCKET/PREFIX``, read (at the bottom of the import graph: the
options parse it, before anything of the store is imported)."""

from __future__ import annotations

import re

URL = re.compile(r"s3://([a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(.*))?")


def parse_url(text: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` as (bucket, prefix); ValueError names what is wrong."""
    match = URL.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"expected s3://BUCKET/PREFIX (a bucket of 3 to 63 lowercase letters, digits, . or -), not {text!r}"
        )
    return match.group(1), (match.group(2) or "").strip("/")
