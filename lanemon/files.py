"""Writing files so that a failure never leaves a half-written one (Qt-free).

``atomic_write`` writes into a temporary file in the same folder and renames
it over the target: the old file (if any) survives any failure, and no
temporary file is left behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Callable, TextIO


def atomic_write(path: str, suffix: str, write: Callable[[TextIO], None]) -> None:
    """Call ``write(fh)`` on a temporary text file, then rename it to ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".lanemon-", suffix=suffix, dir=folder)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str, data: object) -> None:
    """``data`` as indented JSON with a final newline, written atomically."""
    def write(fh: TextIO) -> None:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    atomic_write(path, ".json", write)
