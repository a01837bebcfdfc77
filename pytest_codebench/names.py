"""File and folder names made from text the harness did not write: a model's name
(``model_name_or_path``), a solution set's, a task's id. One rule for them all
(:func:`safe_name`), so that no such text can end a run's outputs (a NUL, a name longer than the
file system takes) or move them (``..``, ``/``, ``../../x``); and one rule
(:func:`escape_controls`) for such text shown in a terminal or a page, so that none can act there
(a program's output is stripped instead: ``runners.text``).

An honest name is kept as it is (``gpt-5``, ``org__model-7b``, ``django__django-11099``), so
that the files a benchmark's own tools look for keep their official names. Any other name is
made safe, and then ends in ``+`` and a hash of the whole text, so that two texts never share a
name. Imports nothing of the plugin: every layer may use it.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from typing import Any

# Bytes of UTF-8 a name may take. A file name may hold 255; the harness adds to some of them
# (``report.NAME.jsonl``, ``NAME.RUN.json``, the ``.NAME.XXXXXXXX.tmp`` of an atomic write).
MAX_NAME = 200
# Hex digits of the hash that ends a changed name.
HASH = 10
# What only a changed name ends in: an honest name of that shape is changed too, so that no
# honest name can be taken for another one's changed form.
_CHANGED = re.compile(rf".*\+[0-9a-f]{{{HASH}}}", re.DOTALL)
# Characters never kept: separators, and (by Unicode category) control characters, lone
# surrogates (text that was not valid UTF-8) and the line and paragraph separators.
_SEPARATORS = frozenset("/\\")
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
# The smallest limit a caller may ask: some text, the ``+`` and the hash.
MIN_LIMIT = 2 * HASH


def digest(text: str) -> str:
    """The hash a changed name ends in: of the whole text, lone surrogates included."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH]


def unsafe(char: str) -> bool:
    """Whether ``char`` is never kept in a name."""
    return char in _SEPARATORS or unicodedata.category(char) in _UNSAFE_CATEGORIES


def is_safe(text: str, limit: int = MAX_NAME) -> bool:
    """Whether ``text`` is kept as it is: not empty, ``.`` or ``..``, no character
    :func:`unsafe`, at most ``limit`` bytes of UTF-8, and not of a changed name's shape."""
    if text in ("", ".", "..") or any(unsafe(char) for char in text):
        return False
    return len(text.encode()) <= limit and not _CHANGED.fullmatch(text)


def hashed(text: str, shown: str, limit: int = MAX_NAME) -> str:
    """``shown`` (safe characters only), cut to fit, then ``+`` and :func:`digest` of ``text``."""
    start = shown.encode()[: limit - HASH - 1].decode("utf-8", "ignore")
    return f"{start}+{digest(text)}"


def safe_name(text: str | bytes, limit: int = MAX_NAME) -> str:
    """A name for a file or folder made from ``text`` (bytes: as the file system decodes them):
    ``text`` itself where :func:`is_safe`, else its safe characters (each other one ``_``), cut
    to fit within ``limit`` bytes, then ``+`` and the hash of the whole text. Never empty,
    ``.`` or ``..``; never a separator, NUL or other control character; valid UTF-8; distinct
    texts give distinct names."""
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    limit = max(limit, MIN_LIMIT)
    if is_safe(text, limit):
        return text
    return hashed(text, "".join("_" if unsafe(char) else char for char in text), limit)


def name_with(text: str, suffix: str, limit: int = MAX_NAME) -> str:
    """``safe_name(text)`` followed by the harness's own ``suffix`` (``-graded-solutions.jsonl``),
    the two within ``limit`` bytes."""
    return safe_name(text, limit - len(suffix.encode())) + suffix


# What a terminal acts on instead of showing (and what a markdown page hides): control characters
# (ESC begins a sequence that clears the screen or recolours a line; CR and backspace overwrite
# what was printed), the bidi controls that reorder the text after them (a name that reads
# "passed" backwards), the line and paragraph separators, and lone surrogates.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ACTIVE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` as a terminal or a page shows it and never acts on it: each character it would act
    on (above) as its escape (``\\x1b``, ``\\u202e``, ``\\udcff``), but those in ``keep`` (a
    message's line breaks). The same string where there is none."""
    if text.isprintable():  # the common case, at C speed: letters, digits, spaces, punctuation
        return text
    return "".join(
        char.encode("unicode_escape").decode()
        if char not in keep and (char in _BIDI_CONTROLS or unicodedata.category(char) in _ACTIVE_CATEGORIES)
        else char
        for char in text
    )


# A lone surrogate: what Python makes of text that was not valid UTF-8 (a JSON ``\udcff``, a
# file name's undecodable byte). No UTF-8 file and no execnet message (xdist) can hold one.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate in its strings (dict keys, list and tuple members
    too) as its escape, ``\\udcff``; the same object where there is none."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode() if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {escape_surrogates(key): escape_surrogates(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(escape_surrogates(item) for item in value)
    return value
