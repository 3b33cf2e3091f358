"""The recording file format (skeleton; filled in by the next commits)."""

from __future__ import annotations

FORMAT = "lanemon-recording"
VERSION = 1


class RecordingError(Exception):
    """A file that cannot be read as a recording: ``path``, ``line`` (1-based, or None
    when the problem is not one line) and ``message``; ``str()`` is one sentence."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        import os

        where = os.path.basename(self.path) + (f" line {self.line}" if self.line is not None else "")
        return f"{where}: {self.message}"


class Recording:
    header: dict
    warnings: list[str]


def open_recording(path: str) -> Recording:
    raise NotImplementedError
