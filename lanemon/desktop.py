"""``lanemon install-desktop``: a launcher entry for double-click start.

Writes, into the user's XDG folders (``$XDG_DATA_HOME``, default
``~/.local/share``):

- ``applications/lanemon.desktop``: ``Exec`` is the absolute path of the
  installed ``lanemon`` script (or of the frozen executable), ``Icon`` the
  installed icon's name, ``StartupWMClass=lanemon`` (the window's class),
  ``Categories=Development;``, ``Version=1.4`` of the Desktop Entry
  Specification: the newest that ``desktop-file-validate`` of Debian 12
  (desktop-file-utils 0.26) knows (it rejects 1.5 as "not a known version";
  the entry uses no key that 1.5 added). The entry passes that validator with
  no error, warning or hint (``tests/test_desktop.py`` runs it).
- ``icons/hicolor/scalable/apps/lanemon.svg`` and
  ``icons/hicolor/256x256/apps/lanemon.png``.

``--uninstall`` removes exactly those files and nothing else. Both are
idempotent and say what they did. No root, no system folders.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from lanemon.files import atomic_write

APP_ID = "lanemon"
RESOURCES = Path(__file__).resolve().parent / "resources"


class DesktopError(Exception):
    """The entry cannot be installed (reported as one line)."""


def data_home() -> Path:
    value = os.environ.get("XDG_DATA_HOME")
    return Path(value) if value and os.path.isabs(value) else Path.home() / ".local" / "share"


def installed_paths(base: Path | None = None) -> dict[str, Path]:
    base = base or data_home()
    return {
        "desktop": base / "applications" / f"{APP_ID}.desktop",
        "svg": base / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg",
        "png": base / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png",
    }


def launcher_command() -> str:
    """The absolute path that starts the window."""
    if getattr(sys, "frozen", False):
        return str(Path(sys.executable).resolve())
    beside = Path(sys.executable).parent / ("lanemon.exe" if os.name == "nt" else "lanemon")
    if beside.is_file():
        return str(beside)
    found = shutil.which("lanemon")
    if found:
        return str(Path(found).resolve())
    raise DesktopError("the lanemon command is not installed: run `pip install .` first")


def _quote_exec(path: str) -> str:
    # Desktop Entry Spec: quote arguments with reserved characters.
    if any(ch in path for ch in ' \t\n"\'\\><~|&;$*?#()`'):
        escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
        return f'"{escaped}"'
    return path


def desktop_entry(exec_path: str, icon: str) -> str:
    """The ``.desktop`` file's text: Desktop Entry Specification 1.4, one main category
    (``Development``; an additional category such as ``Monitor`` would need ``System`` or
    ``Network`` beside it, and two main categories list the entry twice in menus)."""
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        "Name=lanemon",
        "GenericName=Event-loop monitor",
        "Comment=See event-loop lag and scheduling contention live",
        f"Exec={_quote_exec(exec_path)}",
        f"Icon={icon}",
        "Terminal=false",
        "Categories=Development;",
        f"StartupWMClass={APP_ID}",
        "StartupNotify=true",
        "",
    ])


def install(base: Path | None = None) -> list[Path]:
    paths = installed_paths(base)
    exec_path = launcher_command()
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RESOURCES / "lanemon.svg", paths["svg"])
    shutil.copyfile(RESOURCES / "lanemon.png", paths["png"])
    entry = desktop_entry(exec_path, APP_ID)
    atomic_write(str(paths["desktop"]), ".desktop", lambda fh: fh.write(entry))
    return list(paths.values())


def uninstall(base: Path | None = None) -> list[Path]:
    removed = []
    for path in installed_paths(base).values():
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed
