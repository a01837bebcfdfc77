"""The two kinds of trouble that are not a model's failure."""

from __future__ import annotations

from pathlib import Path


class DatasetError(Exception):
    """Bad input: names the file, and where known the line and the field.

    Shown to the user as its message alone (no traceback): it describes their data, not our code.
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(f"{where}: {message}")


class HarnessError(Exception):
    """The grader could not do its job (no toolkit, a dead daemon, a lock never freed).

    An item that raises it is reported as an error with this message, never as a failure.
    """
