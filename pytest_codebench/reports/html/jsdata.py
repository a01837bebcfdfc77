"""Data as JavaScript files the page loads with <script> tags (Chromium refuses fetch() of
file:// URLs): each file calls the page's loader with one JSON value, written so that nothing a
model wrote can end the script or run: JSON is a JavaScript expression, and the characters that
could close a script element, open an HTML comment or end a line inside a string literal in
older engines are escaped."""

from __future__ import annotations

import json
from typing import Any

# <, > and & can form </script> or <!--; U+2028/U+2029 end a line in pre-ES2019 string literals.
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TABLE = str.maketrans(_ESCAPES)


def json_text(value: Any) -> str:
    """``value`` as JSON with the characters above escaped (still valid JSON, the same value)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).translate(_TABLE)


def loader_call(name: str, value: Any) -> str:
    """The text of a data file: ``codebench.load("NAME", VALUE);``."""
    return f"codebench.load({json_text(name)},{json_text(value)});\n"
