"""Writing files so that a failure never leaves a half-written one (Qt-free).

``atomic_replace`` has a temporary file in the same folder written (by a
callback given its path) and renames it over the target: the old file (if
any) survives any failure, and no temporary file is left behind.
``atomic_write`` does that for text written to a file object.

The file ends with the mode a plain ``open(path, "w")`` would give it: an
existing file keeps its mode; a new one gets ``0o666 & ~umask`` (a temporary
file is created ``0o600``, which alone would hide every export from the rest
of the machine).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from typing import TextIO


def current_umask() -> int:
    """The process's umask. Read from ``/proc/self/status`` where there is one; else
    set and restored at once (``os.umask`` has no read-only form)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _plain_open_mode(path: str) -> int:
    """The permission bits ``open(path, "w")`` would leave ``path`` with."""
    try:
        st = os.stat(path)
    except OSError:
        return 0o666 & ~current_umask()
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o666 & ~current_umask()


def atomic_replace(path: str, suffix: str, write_file: Callable[[str], None]) -> None:
    """Call ``write_file(tmp)`` with a temporary path in ``path``'s folder, then rename it to
    ``path``, which ends with the mode a plain ``open()`` would give it (see the module)."""
    folder = os.path.dirname(os.path.abspath(path))
    mode = _plain_open_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=".lanemon-", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        write_file(tmp)
        os.chmod(tmp, mode)
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
