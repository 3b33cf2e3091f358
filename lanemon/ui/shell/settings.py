"""Settings kept between starts, in Qt's own store (``QSettings``).

Organization "lanemon", application "lanemon": on Linux
``~/.config/lanemon/lanemon.conf`` (``$XDG_CONFIG_HOME`` first), the registry
on Windows, a plist on macOS. Kept: the window geometry, presenter mode, the
theme (palette outside presenter mode), the chart's lag axis outside presenter
mode (log or linear: presenter mode's own log axis is not kept), the heartbeat
period, the job size and its unit, and the store URLs a tab followed last
(``recent_sources`` / ``remember_source``: redacted, newest first, at most
:data:`RECENT_SOURCES_KEPT`). ``restore(window, store)`` before the window shows;
``save(window, store)`` when it closes (``app.main`` does both).
``unwritable(store)`` says, before anything is lost, why a store cannot be
written (the window shows it at start); ``save`` raises ``OSError`` when the
write fails, instead of losing the settings silently.

Tests never touch the user's settings: with ``LANEMON_NO_SETTINGS`` set
(``tests/conftest.py`` sets it) ``open_store()`` returns a new, empty store
in a temporary folder of this process (removed at exit): nothing is read, and
nothing one window saves reaches the next. A test of persistence
passes an explicit ini path.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import tempfile

from PySide6.QtCore import QByteArray, QSettings

from lanemon.ui.heartbeat.timer import MAX_PERIOD_MS, MIN_PERIOD_MS

ORGANIZATION = "lanemon"
APPLICATION = "lanemon"
NO_SETTINGS_ENV = "LANEMON_NO_SETTINGS"

GEOMETRY = "window/geometry"
PRESENTER = "view/presenter"
THEME = "view/theme"
LOG_SCALE = "chart/log_scale"
PERIOD = "heartbeat/period_ms"
JOB_SIZE = "job/size"
JOB_UNIT = "job/unit"
RECENT_SOURCES = "sources/recent"
RECENT_SOURCES_KEPT = 8

_scratch: str | None = None


def _scratch_dir() -> str:
    global _scratch
    if _scratch is None:
        _scratch = tempfile.mkdtemp(prefix="lanemon-settings-")
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


def open_store(path: str | None = None) -> QSettings:
    """The settings store: ``path`` (an ini file) if given; a throw-away one under
    ``LANEMON_NO_SETTINGS``; else the user's (organization and application "lanemon")."""
    if path is None and os.environ.get(NO_SETTINGS_ENV):
        # a new, empty file each time: nothing read, nothing carried from one window to the next
        fd, path = tempfile.mkstemp(prefix="lanemon-", suffix=".ini", dir=_scratch_dir())
        os.close(fd)
    if path is not None:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(ORGANIZATION, APPLICATION)


def _bool(value) -> bool:
    if isinstance(value, str):        # ini files give strings back
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _number(value, kind=float):
    """``value`` as a finite number of ``kind``; ``None`` for anything else (a hand-edited
    ``inf`` or ``1e999`` included: ``int(inf)`` raised OverflowError at every start)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return kind(number)


def unwritable(store: QSettings) -> str | None:
    """Why ``store`` cannot be saved, as a sentence naming its file; ``None`` when it can.

    A file store (ini, or the native format on Linux) must be a writable file,
    or a file that can be created: its folder (or the nearest existing parent
    folder) writable and a folder. Other stores (the registry, plists) are
    judged by ``QSettings.isWritable`` alone."""
    path = store.fileName()
    if not store.isWritable():
        return f"{path} is read-only"
    if not os.path.isabs(path):
        return None
    if os.path.exists(path):
        if os.path.isdir(path):
            return f"{path} is a folder"
        return None if os.access(path, os.W_OK) else f"{path} is read-only"
    folder = os.path.dirname(path)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"cannot create {path}: {folder} is not a folder"
    if not os.access(folder, os.W_OK):
        return f"cannot create {path}: folder {folder} is not writable"
    return None


def save(window, store: QSettings) -> None:
    """Write the window's state (geometry before full screen, if it is full screen).

    Raises ``OSError`` naming the file when the store could not be written."""
    talk = getattr(window, "talk", None)
    geometry = talk.normal_geometry() if talk is not None else window.saveGeometry()
    store.setValue(GEOMETRY, geometry)
    if talk is not None:
        store.setValue(PRESENTER, talk.presenter)
        store.setValue(THEME, talk.theme)
        store.setValue(LOG_SCALE, talk.log_outside)
    else:
        store.setValue(LOG_SCALE, window.chart.log_scale)
    store.setValue(PERIOD, int(window.heartbeat.period_ms))
    size, unit = window.runs_panel.job()
    store.setValue(JOB_SIZE, float(size))
    store.setValue(JOB_UNIT, unit)
    store.sync()
    if store.status() != QSettings.Status.NoError:
        raise OSError(f"cannot write {store.fileName()} ({store.status().name})")


def restore(window, store: QSettings) -> None:
    """Apply what ``save`` kept; missing or unreadable values keep the defaults.

    What is restored is the state the widgets show (the heartbeat's period, the runs
    panel's job), and the widgets follow it; no widget is driven to set it."""
    geometry = store.value(GEOMETRY)
    if isinstance(geometry, (QByteArray, bytes)) and len(geometry):
        window.restoreGeometry(QByteArray(geometry))
    talk = getattr(window, "talk", None)
    if store.contains(LOG_SCALE):      # before presenter mode, which keeps it as the outside choice
        window.chart.set_log_scale(_bool(store.value(LOG_SCALE)))
    if talk is not None:
        theme_name = store.value(THEME)
        if theme_name in ("light", "dark"):
            talk.set_theme(theme_name)
        if store.contains(PRESENTER):
            talk.set_presenter(_bool(store.value(PRESENTER)))
    period = _number(store.value(PERIOD), int)
    if period is not None and MIN_PERIOD_MS <= period <= MAX_PERIOD_MS:
        window.set_period_ms(period)
    unit = store.value(JOB_UNIT)
    size = _number(store.value(JOB_SIZE))
    if size is not None and size >= 1 and unit in ("iterations", "CPU ms"):
        window.runs_panel.set_job(size, unit)


def recent_sources(store: QSettings) -> list[str]:
    """The store URLs followed last (newest first; what ``remember_source`` kept)."""
    value = store.value(RECENT_SOURCES)
    if isinstance(value, str):          # an ini file gives one value back as a string
        value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    return [v for v in value if isinstance(v, str) and v.strip()][:RECENT_SOURCES_KEPT]


def remember_source(store: QSettings, url_text: str) -> list[str]:
    """Put ``url_text`` first among the recent sources, redacted (a password is never kept:
    such a URL must be typed again); returns the list kept."""
    from lanemon.store.url import redact

    shown = redact(url_text.strip())
    kept = [shown, *(u for u in recent_sources(store) if u != shown)][:RECENT_SOURCES_KEPT]
    # (no sync(): writing the file now blocked the loop up to 89 ms -- the window's watchdog named
    # it on the chart at a Go; Qt writes it back soon after, and at exit)
    store.setValue(RECENT_SOURCES, kept)
    return kept
