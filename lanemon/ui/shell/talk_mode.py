"""Talk mode: presenter mode, full screen, keyboard shortcuts, the shortcut overlay.

``install(window)`` adds the actions to the window (and to its menu bar:
File, Run, View, Help, reusing a menu of the same title if one exists) and
returns the ``TalkMode`` that owns them. The window stays thin: it only keeps
``window.talk``.

Shortcuts (window context, so they never fire into another window or a modal
dialog; a focused text or number field keeps its digits and Space, because Qt
lets a focused input claim a key before a shortcut does, and the run actions
check the focus once more):

    1 / 2 / 3        start a whole / sliced / worker run (the runs panel's job)
    Space            pause / resume the chart (the heartbeat keeps recording); P while
                     a talk is loaded (``set_talk_keys``: Space is then the talk's next step)
    F5               presenter mode: 1.5x type, high-contrast dark theme, the
                     log lag axis (leaving it brings back the axis chosen
                     outside presenter mode)
    L                the lag axis: logarithmic / linear (the chart's "log" box)
    F11              full screen
    Ctrl+E           export the report (or say what it still needs)
    Ctrl+Shift+S     save a screenshot of the window (PNG, no dialog: to
                     $LANEMON_SCREENSHOT_DIR, else Pictures, else the current
                     folder; the status bar says where)
    F1 or ?          this list, over the window (Esc, F1 or a click closes it)
    Ctrl+Q           quit

With ``LANEMON_TRACE`` set, one line per event goes to stdout ("lanemon:
shown", "lanemon: run #1 sliced done", "lanemon: screenshot PATH"), for
scripts that drive the real window (``tests/test_real_window.py``).
"""

from __future__ import annotations

import datetime
import os

from PySide6.QtCore import QByteArray, QObject, QStandardPaths, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFrame,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPlainTextEdit,
    QSplitter,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from lanemon.files import cannot_write
from lanemon.ui.kit import theme
from lanemon.ui.kit.key_layer import KeyLayer
from lanemon.ui.kit.paint_hold import paint_hold
from lanemon.ui.shell import exports

PRESENTER_SCALE = 1.5
PRESENTER_CHART_SHARE = 0.44     # of the window's height, chart versus the views below
TALK_CHART_SHARE = 0.52          # the same while a talk is loaded (its caption sits on the chart)
SCREENSHOT_DIR_ENV = "LANEMON_SCREENSHOT_DIR"
TRACE_ENV = "LANEMON_TRACE"


def trace(message: str) -> None:
    """One line on stdout when ``LANEMON_TRACE`` is set (for scripted drivers)."""
    if os.environ.get(TRACE_ENV):
        print(f"lanemon: {message}", flush=True)


def typing_into(widget: QWidget | None) -> bool:
    """Does ``widget`` (the focus widget) take typed text, digits and spaces?"""
    if widget is None:
        return False
    if isinstance(widget, (QLineEdit, QAbstractSpinBox, QTextEdit, QPlainTextEdit)):
        return not getattr(widget, "isReadOnly", lambda: False)()
    if isinstance(widget, QComboBox):
        return widget.isEditable()
    return False


def _menu(window: QMainWindow, title: str) -> QMenu:
    """The menu bar's menu called ``title`` (ignoring "&"), made if missing."""
    bar = window.menuBar()
    plain = title.replace("&", "")
    for action in bar.actions():
        menu = action.menu()
        if menu is not None and action.text().replace("&", "") == plain:
            return menu
    return bar.addMenu(title)


class ShortcutOverlay(KeyLayer):
    """A translucent layer over the whole window listing the shortcuts in large type; it has
    the keyboard while shown (``KeyLayer``): Esc, F1 or ? close it, other keys do nothing."""

    def __init__(self, rows: list[tuple[str, str]], parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("shortcutOverlay")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._rows = rows
        self._fit = 1.0          # the type's share of its size, so that every row fits (``fit_height``)
        self.panel = QFrame(self)
        self.panel.setObjectName("shortcutPanel")
        self.text = QLabel(self.panel)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        inner = QVBoxLayout(self.panel)
        inner.addWidget(self.text)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        outer.addWidget(self.panel, 0, Qt.AlignmentFlag.AlignHCenter)
        outer.addStretch(1)
        self.hide()
        self.apply_fonts()

    def apply_fonts(self) -> None:
        s = theme.font_scale()
        pad = int(18 * s)
        self.setStyleSheet(
            f"#shortcutOverlay {{ background: {theme.SHORTCUT_SHADE}; }}"
            f"#shortcutPanel {{ background: {theme.SHORTCUT_PANEL}; border: 2px solid {theme.SHORTCUT_BORDER};"
            f" border-radius: {int(12 * s)}px; padding: {pad}px {int(pad * 1.6)}px; }}"
            f"#shortcutPanel QLabel {{ color: {theme.SHORTCUT_TEXT}; background: transparent; }}")
        self._set_text()

    def _set_text(self) -> None:
        font = self.text.font()
        font.setPointSizeF(theme.pt(15) * self._fit)
        self.text.setFont(font)
        self.text.setText(self._html())

    def fit_height(self) -> None:
        """Smaller type (down to about half) until the list fits the window's height: more rows
        (a talk's keys) than fit at presenter mode's size on a 768-pixel screen."""
        room = self.parentWidget().height() - 8
        self._fit = 1.0
        self._set_text()
        while self.panel.sizeHint().height() > room and self._fit > 0.5:
            self._fit *= 0.92
            self._set_text()

    def _html(self) -> str:
        s = theme.font_scale() * self._fit
        gap = int(28 * s)
        rows = "".join(
            f"<tr><td align=right style='color:{theme.SHORTCUT_KEY}; font-family:\"DejaVu Sans Mono\";"
            " font-weight:bold;"
            f" padding: {int(3 * s)}px {gap}px {int(3 * s)}px 0'>{keys}</td><td>{what}</td></tr>"
            for keys, what in self._rows)
        return (f"<div style='font-size:{theme.pt(20):.0f}pt; font-weight:bold'>Shortcuts</div>"
                f"<table cellspacing=0 style='margin-top:{int(10 * s)}px'>{rows}</table>"
                f"<div style='color:{theme.SHORTCUT_HINT}; margin-top:{int(12 * s)}px'>"
                "Esc, F1 or a click closes this</div>")

    def set_rows(self, rows: list[tuple[str, str]]) -> None:
        """The (keys, what) listed."""
        self._rows = rows
        self._set_text()

    def open(self) -> None:
        self.setGeometry(self.parentWidget().rect())
        self.fit_height()
        self.take_keyboard()

    def close_overlay(self) -> None:
        if self.isVisible():
            self.give_keyboard_back()

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_F1, Qt.Key.Key_Question):
            self.close_overlay()
        event.accept()      # every other key does nothing while the list is shown

    def mousePressEvent(self, event) -> None:
        self.close_overlay()
        event.accept()


class TalkMode(QObject):
    """The talk-mode actions of one window and the state they toggle."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.presenter = False
        self.theme = "light"                  # the palette outside presenter mode
        self._normal_geometry: QByteArray | None = None
        self._was_maximized = False
        self._about = None
        self._split_sizes: list[int] | None = None
        self._log_outside: bool | None = None   # the chart's axis outside presenter mode, while in it
        self._traced: set[int] = set()
        self._talk_loaded = False
        self._shown = False
        self._blocking: str | None = None    # the "blocking the loop" notice the status bar was given
        self.last_screenshot: str | None = None

        def action(text, keys, slot, *, checkable=False, tip=""):
            a = QAction(text, window)
            if keys:
                a.setShortcuts([QKeySequence(k) for k in keys])
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            a.setCheckable(checkable)
            if tip:
                a.setToolTip(tip)
                a.setStatusTip(tip)
            a.triggered.connect(slot)
            window.addAction(a)       # shortcuts work with the menu bar hidden too
            return a

        panel = window.runs_panel
        self.actions = {
            "whole": action("Whole run", ["1"], lambda: self._run(panel.run_whole),
                            tip="the job on the loop, in one piece (blocks the window)"),
            "sliced": action("Sliced run", ["2"], lambda: self._run(panel.run_sliced),
                             tip="the job in slices, yielding to the loop"),
            "worker": action("Worker run", ["3"], lambda: self._run(panel.run_worker),
                             tip="the job in a worker of the chosen kind"),
            "pause": action("Pause chart", ["Space"], self.toggle_pause, checkable=True,
                            tip="freeze the chart; the heartbeat keeps recording"),
            "export": action("Export report…", ["Ctrl+E"], self.export_report,
                             tip="the report (JSON) of the latest whole, sliced and worker runs"),
            "screenshot": action("Save screenshot", ["Ctrl+Shift+S"], self.save_screenshot,
                                 tip="a PNG of the window, saved without a dialog"),
            "quit": action("Quit", ["Ctrl+Q"], window.close),
            "presenter": action("Presenter mode", ["F5"], self.toggle_presenter, checkable=True,
                                tip="large type and a high-contrast dark theme"),
            "dark": action("Dark theme", [], lambda on: self.set_theme("dark" if on else "light"),
                           checkable=True),
            "fullscreen": action("Full screen", ["F11"], self.toggle_full_screen, checkable=True),
            "log": action("Log lag axis", ["L"], window.chart.set_log_scale, checkable=True,
                          tip="a logarithmic lag axis: runs of a few ms stay visible next to a run of seconds"),
            "shortcuts": action("Shortcuts", ["F1", "?"], self.toggle_overlay),
            "about": action("About lanemon", [], self.show_about),
        }
        a = self.actions
        for title, names in (("&File", ["export", "screenshot", None, "quit"]),
                             ("R&un", ["whole", "sliced", "worker"]),
                             ("&View", ["presenter", "dark", "fullscreen", None, "pause", "log"]),
                             ("&Help", ["shortcuts", "about"])):
            menu = _menu(window, title)
            for name in names:
                if name is None:
                    menu.addSeparator()
                else:
                    menu.addAction(a[name])

        self.overlay = ShortcutOverlay(self.shortcut_rows(), window)
        # the chart takes the focus at start (and on a click): digits are shortcuts, not typing
        window.chart.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        window.chart.setFocus(Qt.FocusReason.OtherFocusReason)
        window.resized.connect(self._window_resized)
        window.shown.connect(self._window_shown)
        window.window_state_changed.connect(self._window_state_changed)
        window.controller.changed.connect(self._trace_runs)
        window.controller.notice.connect(self._note_blocking)
        window.controller.changed.connect(self._clear_stale_banner)
        window.chart.log_scale_changed.connect(a["log"].setChecked)

    # --- state --------------------------------------------------------------------------
    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(keys, what) for the overlay, from the actions themselves."""
        a = self.actions
        what = [("whole", "whole run: blocks the loop"), ("sliced", "sliced run"),
                ("worker", "worker run"), ("pause", "pause / resume the chart"),
                ("presenter", "presenter mode"), ("log", "log / linear lag axis"),
                ("fullscreen", "full screen"),
                ("export", "export the report"), ("screenshot", "save a screenshot"),
                ("shortcuts", "this list"), ("quit", "quit")]
        rows = []
        for name, text in what:
            keys = " or ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in a[name].shortcuts())
            rows.append((keys, text))
        # the window's keys that are not these actions' (the runs panel's Esc, the talk player's Enter)
        rows[4:4] = [("Esc", "cancel the run in flight"),
                     ("Enter", "press the focused button")]
        return rows

    def file_menu(self) -> QMenu:
        """The menu bar's File menu (others add their file items to it)."""
        return _menu(self.window, "&File")

    def set_talk_keys(self, rows: list[tuple[str, str]] | None) -> None:
        """A talk is loaded (``rows``: its keys, added to the shortcut list) or none is
        (``None``): while one is, Space belongs to the talk and pausing the chart is P."""
        self.actions["pause"].setShortcuts([QKeySequence("P" if rows else "Space")])
        self.overlay.set_rows(self.shortcut_rows() + list(rows or []))
        self._talk_loaded = rows is not None
        split = self.window.centralWidget()
        if self.presenter and self._split_sizes is not None and isinstance(split, QSplitter):
            self._share_split(split)     # the caption's room, in presenter mode now

    def _share_split(self, split: QSplitter) -> None:
        total = sum(split.sizes())
        share = int(total * (TALK_CHART_SHARE if self._talk_loaded else PRESENTER_CHART_SHARE))
        split.setSizes([share, total - share])

    def _apply_look(self) -> None:
        theme.set_palette("dark" if self.presenter else self.theme)
        self.window.set_font_scale(PRESENTER_SCALE if self.presenter else 1.0)
        self._fit_split()
        self.overlay.apply_fonts()
        if self._about is not None:
            theme.restyle(self._about)     # a child of the window: it had the window's sheet
            self._about.apply_fonts()

    def _fit_split(self) -> None:
        split = self.window.centralWidget()
        if isinstance(split, QSplitter) and split.count() == 2:
            # large type needs a little more room below the chart; the old split comes back after
            if self.presenter and self._split_sizes is None and sum(split.sizes()) > 0:
                self._split_sizes = split.sizes()
                self._share_split(split)
            elif not self.presenter and self._split_sizes is not None:
                split.setSizes(self._split_sizes)
                self._split_sizes = None

    def set_presenter(self, on: bool) -> None:
        """Presenter mode: 1.5x type, larger chart text, the high-contrast dark palette and
        the log lag axis (L still switches it); leaving it brings back the axis the chart
        had before."""
        on = bool(on)
        self.actions["presenter"].setChecked(on)
        self.actions["dark"].setEnabled(not on)
        if on == self.presenter and theme.font_scale() == (PRESENTER_SCALE if on else 1.0):
            return
        chart = self.window.chart
        if on and self._log_outside is None:
            self._log_outside = chart.log_scale
            chart.set_log_scale(True)
        elif not on and self._log_outside is not None:
            chart.set_log_scale(self._log_outside)
            self._log_outside = None
        self.presenter = on
        # shaded, labelled, left out of the header's max up to its paint; painted once, after
        # the new layout, a loop turn later (paint_hold)
        with chart.own_stall("presenter mode") as stall, paint_hold(self.window, after=stall.end):
            self._apply_look()
            self._say("Presenter mode on (F5 leaves it)" if on else "Presenter mode off")

    @property
    def log_outside(self) -> bool:
        """The chart's lag axis outside presenter mode (``True``: logarithmic): the chart's own
        while out of it; while in it, the axis it had before, which leaving brings back (the
        one the settings keep)."""
        return self.window.chart.log_scale if self._log_outside is None else self._log_outside

    def toggle_presenter(self) -> None:
        self.set_presenter(not self.presenter)

    def set_theme(self, name: str) -> None:
        """The palette outside presenter mode: "light" (default) or "dark"."""
        if name not in ("light", "dark"):
            raise ValueError(f"unknown theme {name!r}")
        self.theme = name
        self.actions["dark"].setChecked(name == "dark")
        if not self.presenter:
            with self.window.chart.own_stall("theme change") as stall, paint_hold(self.window, after=stall.end):
                self._apply_look()

    def set_full_screen(self, on: bool) -> None:
        w = self.window
        self.actions["fullscreen"].setChecked(bool(on))
        if bool(on) == w.isFullScreen():
            return
        if on:
            self._normal_geometry = w.saveGeometry()
            self._was_maximized = w.isMaximized()
            w.showFullScreen()
        elif self._was_maximized:
            w.showMaximized()
        else:
            w.showNormal()

    def toggle_full_screen(self) -> None:
        self.set_full_screen(not self.window.isFullScreen())

    def normal_geometry(self) -> QByteArray:
        """The geometry to keep: the one before full screen, if the window is full screen."""
        if self.window.isFullScreen() and self._normal_geometry is not None:
            return self._normal_geometry
        return self.window.saveGeometry()

    # --- actions ------------------------------------------------------------------------
    def _say(self, text: str, ms: int = 6000) -> None:
        self.window.statusBar().showMessage(text, ms)

    def _run(self, start) -> None:
        if typing_into(QApplication.focusWidget()):
            return          # a digit typed into a field is the field's
        start()

    def toggle_pause(self) -> None:
        paused = self.window.chart.toggle_paused()
        self.actions["pause"].setChecked(paused)
        self._say("Chart paused: the heartbeat keeps recording (Space resumes)" if paused
                  else "Chart running")

    def export_report(self) -> None:
        """The runs panel's export (a file dialog), or the message saying what is missing."""
        w = self.window
        if "runs" in w.views:
            w.show_view("runs")
        try:
            w.controller.report()
        except ValueError as exc:
            self._say(str(exc), 10000)
        w.runs_panel.export_report()

    def screenshot_path(self) -> str:
        folder = os.environ.get(SCREENSHOT_DIR_ENV) or ""
        if not folder:
            pictures = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.PicturesLocation)
            folder = pictures if pictures and os.path.isdir(pictures) else os.getcwd()
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = os.path.join(folder, f"lanemon-{stamp}.png")
        n = 2
        while os.path.exists(path):
            path = os.path.join(folder, f"lanemon-{stamp}-{n}.png")
            n += 1
        return path

    def save_screenshot(self, path: str | None = None) -> str | None:
        """A PNG of the window as it is; returns the path (``None`` if it could not be written)."""
        path = path or self.screenshot_path()
        try:
            with self.window.chart.own_stall("screenshot"):   # the grab and the PNG written: named
                exports.save_png(self.window, path)
        except OSError as exc:
            self._say(f"Screenshot not saved: {cannot_write(path, exc)}", 10000)
            return None
        self.last_screenshot = path
        self._say(f"Screenshot saved to {path}", 10000)
        trace(f"screenshot {path}")
        return path

    def toggle_overlay(self) -> None:
        if self.overlay.isVisible():
            self.overlay.close_overlay()
        else:
            self.overlay.open()

    def show_about(self):
        from lanemon.ui.shell.about import AboutDialog

        if self._about is None:
            self._about = AboutDialog(self.window.controller, self.window)
        self._about.refresh()
        theme.restyle(self._about)
        self._about.apply_fonts()
        self._about.show()
        self._about.raise_()
        self._about.activateWindow()
        return self._about

    # --- events ---------------------------------------------------------------------------
    # (the window's signals, not an event filter: see MainWindow's resized)
    def _window_resized(self) -> None:
        if self.overlay.isVisible():
            self.overlay.setGeometry(self.window.rect())
            self.overlay.fit_height()

    def _window_shown(self) -> None:
        if not self._shown:
            self._shown = True
            self._fit_split()        # presenter mode restored before the window had a size
            trace("shown")

    def _window_state_changed(self) -> None:
        self.actions["fullscreen"].setChecked(self.window.isFullScreen())

    def _note_blocking(self, text: str) -> None:
        """The controller's notice: is it the whole run's announcement (its ``banner``)?"""
        if text and text == self.window.controller.banner:
            self._blocking = text

    def _clear_stale_banner(self) -> None:
        """The whole run's "blocking the loop…" notice leaves the status bar when that run
        has ended (not 8 s later); any other message stays, whatever its words."""
        if self._blocking is None or self.window.controller.banner:
            return
        bar = self.window.statusBar()
        if bar.currentMessage() == self._blocking:
            bar.clearMessage()
        self._blocking = None

    def _trace_runs(self) -> None:
        if not os.environ.get(TRACE_ENV):
            return
        for rec in self.window.controller.records:
            if rec.status != "running" and rec.id not in self._traced:
                self._traced.add(rec.id)
                trace(f"run #{rec.id} {rec.kind} {rec.status}")


def install(window: QMainWindow) -> TalkMode:
    """Add talk mode to ``window`` (needs ``runs_panel``, ``chart``, ``controller``, ``set_font_scale``)."""
    return TalkMode(window)


__all__ = ["PRESENTER_SCALE", "ShortcutOverlay", "TalkMode", "install", "trace", "typing_into"]
