"""Writing files so that a failure never leaves a half-written one (Qt-free).

``atomic_replace`` has a temporary file in the same folder written (by a
callback given its path) and renames it over the target: the old file (if
any) survives any failure, and no temporary file is left behind.
``atomic_write`` does that for text written to a file object.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import TextIO


def atomic_replace(path: str, suffix: str, write_file: Callable[[str], None]) -> None:
    """Call ``write_file(tmp)`` with a temporary path in ``path``'s folder, then rename it to ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".lanemon-", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        write_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write(path: str, suffix: str, write: Callable[[TextIO], None]) -> None:
    """Call ``write(fh)`` on a temporary UTF-8 text file, then rename it to ``path``."""
    def write_file(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            write(fh)
    atomic_replace(path, suffix, write_file)


def write_json(path: str, data: object) -> None:
    """``data`` as indented JSON with a final newline, written atomically."""
    def write(fh: TextIO) -> None:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    atomic_write(path, ".json", write)


def cannot_write(path: str, exc: OSError) -> str:
    """The one line that says why ``path`` was not written, as the window and the command
    line say it: "cannot write P: No space left on device" (the OS's reason when it gave one)."""
    return f"cannot write {path}: {exc.strerror or exc or type(exc).__name__}"
