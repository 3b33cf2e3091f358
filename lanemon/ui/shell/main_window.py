"""The main window: the heartbeat chart on top, tabbed views below.

Hooks for later views and presenter mode:

- ``add_view(key, title, view)`` adds a tab (e.g. "lanes", "counters"); a
  view is a ``LiveView`` (``lanemon/ui/kit/live_view.py``), anything else is
  refused; ``show_view(key)`` selects it; ``views`` maps keys to views.
- on close, every view's ``shutdown()`` is awaited (its tasks cancelled and
  awaited, its domain closed), in the order the views were added, after the
  run controller's; ``add_shutdown_hook(coro_fn)``: another async callable
  awaited after them, before the worker processes are stopped.
- ``set_period_ms(ms)``: the heartbeat's period (``ValueError`` outside
  1..100 ms); the chart's period box follows (it also sets the period when
  the user edits it).
- ``set_font_scale(scale)`` re-applies the theme and calls ``apply_fonts()``
  on the chart and on every view.
- ``close_requested`` (signal) is emitted by ``closeEvent``; ``app.main``
  turns it into an asyncio Event.
- ``resized``, ``shown`` and ``window_state_changed`` (signals): after the
  window's own resize, show and window-state change. What follows the window
  connects to them rather than filter its events: an event filter on the window
  is a Python call for every event it gets, a paint request ~30 times a second
  included (two filters cost ~0.05-0.09 ms of each chart frame, measured
  2026-12-02).
- ``warn(text)``: a fault the user should know of and that lasts (settings
  that cannot be kept): a warning on the right of the status bar until the
  window closes.
- ``export_chart_to(path)``: write the chart's PNG and say the outcome (written,
  or why not) in the Runs tab's banner; returns whether it was written.
- ``replay`` (``lanemon/ui/replay/mode.py``): File -> Record, File -> Open recording...
  and the replay shown in the window's own views.
- ``MainWindow(views_later=True)`` (what ``app.main`` makes): the chart, the Runs
  tab, the menus and the status bar only; ``install_views()`` adds the other tabs
  (``app.main`` calls it after the first paint) and ``after_views(callback)`` waits
  for them.
- ``talk`` (``lanemon/ui/shell/talk_mode.py``): menus, shortcuts, presenter mode,
  full screen, the shortcut overlay and About; ``app.main`` restores and saves
  the settings (``lanemon/ui/shell/settings.py``).
- ``talk_player`` (``lanemon/ui/talk/player.py``): a talk script's steps, caption and keys.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QMainWindow,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QWidget,
)

from lanemon.files import cannot_write
from lanemon.ui.heartbeat.chart import HeartbeatChart
from lanemon.ui.heartbeat.own_watchdog import OwnWatchdog
from lanemon.ui.heartbeat.timer import DEFAULT_PERIOD_MS, Heartbeat
from lanemon.ui.kit import theme
from lanemon.ui.kit.live_label import LiveLabel
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.paint_hold import before_release
from lanemon.ui.kit.status_bar import StatusBar
from lanemon.ui.runs.controller import RunController
from lanemon.ui.runs.panel import RunsPanel
from lanemon.ui.shell import exports

if TYPE_CHECKING:
    from lanemon.lanes import Scheduler

DEFAULT_SIZE = (1280, 800)
FRAME_ALLOWANCE = (16, 40)   # px a window manager's frame and title bar may add around the window
HIDDEN_RESTYLE_GAP_MS = 120   # between restyling one hidden tab page and the next after a look change
STORE_SHOWN_CHARS = 48      # of a store's URL the status bar keeps room for
STATUS_GAP_PX = 24          # the empty room between a status message and the lag figures


def opening_geometry(available: QRect) -> QRect:
    """The window's first geometry on a screen whose available area is ``available``:
    ``DEFAULT_SIZE`` where it fits, else as large as fits with room left for a frame and a
    title bar; centred in the available area. Guaranteed inside ``available``."""
    w = max(1, min(DEFAULT_SIZE[0], available.width() - FRAME_ALLOWANCE[0]))
    h = max(1, min(DEFAULT_SIZE[1], available.height() - FRAME_ALLOWANCE[1]))
    x = available.x() + (available.width() - w) // 2
    y = available.y() + (available.height() - h) // 2
    return QRect(x, y, w, h)


class MainWindow(QMainWindow):
    close_requested = Signal()
    resized = Signal()
    shown = Signal()
    window_state_changed = Signal()

    def __init__(self, period_ms: int = DEFAULT_PERIOD_MS, parent: QWidget | None = None, *,
                 lanes_scheduler: Scheduler | None = None, probe_address: str | None = None,
                 views_later: bool = False) -> None:
        """``lanes_scheduler``: the Lanes & queues tab's scheduler (default: a new one on the
        in-memory engine; ``app.main`` passes one on the store given with ``--store``).
        ``probe_address``: where the Programs tab listens for probes (``None``: 127.0.0.1:47200).
        ``views_later``: only the chart, the Runs tab, the menus and the status bar now; the
        other tabs when the caller calls ``install_views`` (see there)."""
        super().__init__(parent)
        self.setStyleSheet(theme.frame_stylesheet())   # once: it never changes (theme.apply_frame)
        self.setWindowTitle("lanemon — event-loop lag")
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            self.fit_to_screen(screen.availableGeometry())
        else:
            self.resize(*DEFAULT_SIZE)
        self.heartbeat = Heartbeat(period_ms, parent=self)
        self.controller = RunController(self.heartbeat, self)
        self.chart = HeartbeatChart(self.heartbeat, self.controller)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(False)
        # a page hidden when the look changed takes the new look when shown (theme.apply)
        self.tabs.currentChanged.connect(lambda _index: self._restyle_current_page())
        # ... or before, in the idle time after the change: one page per shot, each its own tick
        self._restyle_timer = QTimer(self)
        self._restyle_timer.setSingleShot(True)
        self._restyle_timer.setInterval(HIDDEN_RESTYLE_GAP_MS)
        self._restyle_timer.timeout.connect(self._restyle_a_hidden_page)
        self.views: dict[str, LiveView] = {}
        self._pages: dict[str, QWidget] = {}   # key -> the tab page (a scroll area around the view)
        self._fonts_behind: set[str] = set()   # views hidden at a look change: fonts when brought up to date
        self._shutdown_hooks: list[Callable[[], Awaitable[None]]] = []
        self._started = False
        self._shut = False

        # passing messages are elided with the whole text as tooltip, not cut at the lag figures
        self.setStatusBar(StatusBar())
        self.runs_panel = RunsPanel(self.controller)
        self.runs_panel.export_chart_requested.connect(self._export_chart)
        # the Runs tab's messages (exports written or not, refused runs) also go to the status
        # bar, which is inside the screen whatever the tab shows or where its page is scrolled
        self.runs_panel.noticed.connect(lambda text: self.statusBar().showMessage(text, 15000))
        self.add_view("runs", "Runs", self.runs_panel)
        self.runs_panel.serve_esc_in(self)               # Esc cancels from every tab, as 1/2/3 start
        # the other tabs: install_views (now, or after the first paint with views_later)
        self._lanes_scheduler = lanes_scheduler
        self._probe_address = probe_address
        self._views_installed = False
        self._after_views: list[Callable[[], object]] = []
        self.placement_panel = self.programs_view = self.processes_view = self.scenarios = None
        if not views_later:
            self.install_views()
        # the window's own watchdog: a stall of this loop is named on the chart (from start())
        self.own_watchdog = OwnWatchdog(self.heartbeat, parent=self)
        self.own_watchdog.blocked.connect(self.chart.add_own_block)
        self.chart.period.valueChanged.connect(lambda _ms: self.own_watchdog.period_changed())

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.chart)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 5)
        split.setSizes([370, 390])
        split.setChildrenCollapsible(False)
        self.setCentralWidget(split)

        # changes 4 times a second: a LiveLabel, so the window is not laid out again each time,
        # opaque in the bar's own background (the theme's PANEL_BG), so the bar and the window
        # under it are not repainted each time (~0.33 ms a change, transparent)
        self.lag_label = LiveLabel("", fill="PANEL_BG")
        self.lag_label.reserve("lag 0000.00 ms   ·   period 100 ms  ")
        # a message is drawn up to 2 px left of the first permanent widget and cut there: an
        # empty margin left of the lag figures keeps a long message from running into them
        lag_box = QWidget()
        lag_row = QHBoxLayout(lag_box)
        lag_row.setContentsMargins(STATUS_GAP_PX, 0, 0, 0)
        lag_row.addWidget(self.lag_label)
        self.statusBar().addPermanentWidget(lag_box)
        # a lasting warning (settings not kept, store not opened): left of the lag figures, as
        # wide as the bar allows, elided with the whole text as its tooltip; a passing message
        # hides it while shown (a normal status-bar widget)
        self.store_label: LiveLabel | None = None   # which store (``show_store``), if any
        self._store_text = ""
        self.warning = LiveLabel("", fill=False)
        self.warning.setVisible(False)
        self.statusBar().addWidget(self.warning, 1)
        self.controller.notice.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self._status_timer = QTimer(self)
        self._status_timer.setInterval(250)
        self._status_timer.timeout.connect(self._update_status)
        self._update_status()
        # talk mode: menus, shortcuts, presenter mode, full screen, the shortcut overlay, About
        from lanemon.ui.shell.talk_mode import install as install_talk_mode
        self.talk = install_talk_mode(self)
        # talk scripts: File -> Open talk..., the caption over the chart, the clicker's keys
        from lanemon.ui.talk.player import install as install_talk_player
        self.talk_player = install_talk_player(self)
        # File -> Record and File -> Open recording..., the replay in the chart's place
        from lanemon.ui.replay.mode import install as install_replay
        self.replay = install_replay(self)
        for region in self._regions():     # before the first show: nothing to restyle yet
            theme.restyle(region)
        theme.apply_frame(self, (self.tabs,))

    def install_views(self) -> bool:
        """Add the tabs after Runs (Placement, Lanes & queues, Counters, Programs, Processes
        and the scenarios) and, if the window has started, its background work (the worker
        start-up measurement and pool, the probe listener). Done once: False when the views
        are there already or the window is shutting down (nothing is added then).

        ``MainWindow(views_later=True)`` leaves this to its caller (``app.main`` calls it
        after the first paint, so the window shows without waiting for them); their modules
        are imported here, not before."""
        if self._views_installed or self._shut:
            return False
        self._views_installed = True
        from lanemon.ui.counters.view import install_counters_view
        from lanemon.ui.lanes.view import install_lanes_view
        from lanemon.ui.processes.scenarios import install_scenarios
        from lanemon.ui.processes.view import install_processes_view
        from lanemon.ui.programs.view import install_programs_view
        from lanemon.ui.runs.placement import PlacementPanel

        before = set(self.views)
        self.placement_panel = PlacementPanel(self.controller)
        self.add_view("placement", "Placement", self.placement_panel)
        # views of the other domains (each install_* adds its tab and shutdown hook):
        install_lanes_view(self, self._lanes_scheduler)
        install_counters_view(self)
        # asyncio programs heard through lanemon.probe (listening from start(); the view closes it)
        self.programs_view = install_programs_view(self, self._probe_address)
        # agent processes started from here, the store's sessions, the worker processes
        self.processes_view = install_processes_view(self)
        # the four scenarios: a box in the Processes tab, their description on the tabs showing them
        self.scenarios = install_scenarios(self)
        if self.isVisible():        # made after the look was set: each takes it when brought up to date
            self._fonts_behind.update(set(self.views) - before)
            self._restyle_timer.start()
        if self._started:
            self._start_background()
        waiting, self._after_views = self._after_views, []
        for callback in waiting:
            callback()
        return True

    @property
    def views_installed(self) -> bool:
        return self._views_installed

    @property
    def shutting_down(self) -> bool:
        """Has ``shutdown`` begun? (Then nothing that it stops is to be started again.)"""
        return self._shut

    def after_views(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once every tab is there: now if it is, else at the end of
        ``install_views`` (what needs a view, e.g. a talk or a recording opened at start)."""
        if self._views_installed:
            callback()
        else:
            self._after_views.append(callback)

    def fit_to_screen(self, available: QRect) -> None:
        """Place the window (not full screen or maximised) within ``available`` (a screen's
        ``availableGeometry``): see ``opening_geometry``."""
        self.setGeometry(opening_geometry(available))

    # --- hooks -----------------------------------------------------------------------------
    def add_view(self, key: str, title: str, widget: LiveView) -> int:
        """Add a tab below the chart; returns its index. Refused (``TypeError``) unless
        ``widget`` is a ``LiveView``; (``ValueError``) if ``key`` is taken.

        The tab's page scrolls the view when it needs more room than the window has
        (large type on a small projector), instead of making the window outgrow the screen.
        """
        if not isinstance(widget, LiveView):
            raise TypeError(f"a view is a LiveView, not {type(widget).__name__}")
        if key in self.views:
            raise ValueError(f"a view named {key!r} exists already")
        self.views[key] = widget
        widget.set_own_stall(self.chart.own_stall)    # (what it does on the loop is named there)
        page = QScrollArea()
        page.setFrameShape(QFrame.Shape.NoFrame)
        page.setWidgetResizable(True)
        page.setWidget(widget)
        widget.setAutoFillBackground(False)
        page.viewport().setAutoFillBackground(False)
        page.setAutoFillBackground(False)
        self._pages[key] = page
        # the region sheet goes on the view, not on its scroll area: a new sheet on the scroll
        # area re-laid the view out inside setStyleSheet, once per restyled child (3-5 passes
        # per presenter toggle); under the view the layout waits for the one pass after it
        theme.restyle(widget)
        return self.tabs.addTab(page, title)

    def show_view(self, key: str) -> None:
        self.tabs.setCurrentWidget(self._pages[key])

    def shown_view(self) -> str | None:
        """The key of the tab shown (``None``: none)."""
        page = self.tabs.currentWidget()
        return next((key for key, p in self._pages.items() if p is page), None)

    def add_shutdown_hook(self, hook: Callable[[], Awaitable[None]]) -> None:
        self._shutdown_hooks.append(hook)

    def set_period_ms(self, period_ms: int) -> None:
        self.heartbeat.set_period_ms(period_ms)
        self.own_watchdog.period_changed()
        box = self.chart.period
        box.blockSignals(True)          # it shows the period; the heartbeat has it already
        try:
            box.setValue(self.heartbeat.period_ms)
        finally:
            box.blockSignals(False)

    def _regions(self) -> list[QWidget]:
        """The parts of the window that take ``theme.stylesheet()``: the menu bar, the chart, the tab bar,
        the status bar and the current tab's view (the others: ``_restyle_a_hidden_page``)."""
        regions = [self.menuBar(), self.tabs.tabBar(), self.statusBar()]
        # the chart or the replay bar in its place, whichever shows (the other: bring_up_to_date)
        regions += [w for w in self._chart_places() if w.isVisibleTo(self)] or [self.chart]
        shown = self.shown_view()
        if shown is not None:
            regions.append(self.views[shown])
        return regions

    def _chart_places(self) -> list[QWidget]:
        """The chart and what can take its place (the replay bar)."""
        replay = getattr(self, "replay", None)
        return [self.chart] + ([replay.panel] if replay is not None else [])

    def bring_up_to_date(self, place: QWidget) -> None:
        """Give the chart or the replay bar, about to be shown, the look a change made while it
        was hidden (its sheet, then its fonts); nothing if it has it."""
        if theme.restyle(place):
            place.apply_fonts()

    def _restyle_current_page(self) -> None:
        page = self.tabs.currentWidget()
        for key, candidate in self._pages.items():
            if candidate is page:
                self._bring_up_to_date(key)

    def _bring_up_to_date(self, key: str) -> bool:
        """Give tab ``key`` the current look if a look change left it behind: its view's
        sheet (``theme.restyle``) and fonts (``apply_fonts``); returns whether
        there was anything to do."""
        changed = theme.restyle(self.views[key])
        if key in self._fonts_behind:
            self._fonts_behind.discard(key)
            self.views[key].apply_fonts()
            changed = True
        return changed

    def _restyle_a_hidden_page(self) -> None:
        """Bring one tab left in the old look up to date (each is ~10-35 ms of loop time);
        the next one a ``HIDDEN_RESTYLE_GAP_MS`` later, so the loop ticks in between."""
        for key in self._pages:
            if self._bring_up_to_date(key):
                self._restyle_timer.start()
                return

    def set_font_scale(self, scale: float) -> None:
        """The font scale and the current palette on the window: the visible parts (the
        chart, the bars, the current tab's view: its sheet and fonts) now (the chart's and the
        replay bar's fonts, inside a ``paint_hold``, at its release, in the paint's turn); each hidden tab (its
        view's sheet and fonts) in the idle time after (one per ``HIDDEN_RESTYLE_GAP_MS``)
        or when it is shown, if sooner: restyling is the slow part, and a hidden view draws
        nothing until shown."""
        app = QApplication.instance()
        theme.apply(app, scale, self, (self.tabs,), self._regions())
        self._style_warning()
        for place in self._chart_places():
            if place.isVisibleTo(self):          # in the paint's turn when a paint_hold is on
                before_release(self, place.apply_fonts)
        current = self.tabs.currentWidget()
        for key, view in self.views.items():
            if self._pages[key] is current:
                view.apply_fonts()
            else:
                self._fonts_behind.add(key)
        self._restyle_timer.start()

    # --- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the heartbeat, the chart, and -- once the views are installed (now, or when
        ``install_views`` runs) -- the background measurements and the probe listener."""
        if self._started:
            return
        self._started = True
        self.heartbeat.start()
        self.own_watchdog.start()
        self.chart.start()
        self._status_timer.start()
        if self._views_installed:
            self._start_background()

    def _start_background(self) -> None:
        self.controller.start_measurements()
        self.programs_view.start_listening()

    async def shutdown(self) -> None:
        """Cancel runs and measurements, shut every view down, run the shutdown hooks (the
        agents this window started are stopped there), stop timers (worker processes:
        ``app.main``). Every step runs even when one before it raised (a view whose store
        went away must not leave the agents running); the first error is raised at the end."""
        if self._shut:
            return
        self._shut = True
        self._status_timer.stop()
        self.chart.stop()
        errors: list[Exception] = []
        for step in (self.controller.shutdown, *(view.shutdown for view in self.views.values()),
                     *self._shutdown_hooks):
            try:
                await step()
            except Exception as exc:      # (a cancellation is not one: it ends the shutdown)
                errors.append(exc)
        self.own_watchdog.stop()
        self.heartbeat.stop()
        if errors:
            raise errors[0]

    def closeEvent(self, event) -> None:
        event.accept()
        self.close_requested.emit()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.resized.emit()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.shown.emit()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.WindowStateChange:
            self.window_state_changed.emit()

    # --- small things ----------------------------------------------------------------------------
    def _update_status(self) -> None:
        lag = self.heartbeat.last_lag_ms
        self.lag_label.setText(f"lag {lag:6.2f} ms   ·   period {self.heartbeat.period_ms} ms  ")

    def warn(self, text: str) -> None:
        self.warning.setText(text)
        self._style_warning()
        self.warning.setVisible(True)

    def _style_warning(self) -> None:
        text = self.warning.text()
        if text:
            self.warning.set_parts([(text, theme.WARN, True)])
        if self.store_label is not None:
            self.store_label.set_parts([("store ", theme.MUTED, False), (self._store_text, None, False)])

    def show_store(self, url_text: str) -> None:
        """Say, left of the lag figures and in the title, which store the Lanes & queues tab
        keeps its lanes and records in (``url_text``: a redacted URL)."""
        if self.store_label is None:
            self.store_label = LiveLabel("", fill=False)
            # (an index counts the normal widgets too: after the one, the warning, left of the lag)
            self.statusBar().insertPermanentWidget(1, self.store_label)
        self._store_text = url_text
        self.store_label.reserve(f"store {url_text[:STORE_SHOWN_CHARS]}")  # (longer: elided, whole in the tooltip)
        self.setWindowTitle(f"lanemon — event-loop lag — store {url_text}")
        self._style_warning()

    def export_chart_png(self, path: str) -> None:
        with self.chart.own_stall("chart export"):    # the grab and the PNG written: named on the chart
            exports.save_png(self.chart, path)

    def export_chart_to(self, path: str) -> bool:
        try:
            self.export_chart_png(path)
        except OSError as exc:
            self.runs_panel.show_notice(f"Chart not written: {cannot_write(path, exc)}", error=True)
            return False
        self.runs_panel.show_notice(f"Chart written to {path}", error=False)
        return True

    def _export_chart(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getSaveFileName(self, "Export chart", "lanemon-heartbeat.png", "PNG (*.png)")
        if path:
            self.export_chart_to(path)
