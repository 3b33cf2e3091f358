"""The counters view: counter claims versus locks, live, and the three compared.

Data flow (the view decides nothing about counters):

- a control calls the domain: ``Simulation(form.config(), speed=...)``,
  ``start()`` (a task on the running qasync loop), ``stop()``,
  ``set_speed()``, ``expire_claim()``, ``abandon()``, ``compare_async()``.
  A ``ValueError`` from the domain, or a run / compare that fails, is shown
  in the view's message line -- never swallowed;
- every domain event only marks the view dirty (one attribute write);
- a 33 ms timer (≤ 30 fps) runs while the view is visible and something is
  to be drawn: it reads one ``snapshot()`` and repaints what changed in the
  grid; the staff strip, the tallies and the headline follow at most
  ``TEXT_FPS`` times a second (split over two ticks), and at once after a
  control was used. It stops itself when nothing changed and no TTL
  countdown is on screen, after bringing the text up to the last snapshot.

Config changes (strategy, staff, counters, ...) reset the run -- a
``Simulation`` runs once -- and restart it if it was running. The speed
applies live (0 pauses).

Customers turned away by the full queue (``SimConfig.queue_limit``) show in
the tallies ("turned away", in the warning colour once > 0) and, after a
compare, as served figures in the warning colour whose tooltip says how many.

``install_counters_view(window)`` adds the tab and a shutdown hook that stops
a running simulation and a compare in flight: the hook returns once the run's
tasks have finished and the compare's worker thread has ended (it stops within
one iteration of its virtual-time loop), so closing the window leaves nothing
computing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QApplication,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from lanemon.counters import CounterState, Simulation, compare_async
from lanemon.ui.kit import theme
from lanemon.ui.counters.controls import (
    COMPARE_CUSTOMERS,
    CompareTable,
    ConfigForm,
    MessageLine,
    TalliesPanel,
)
from lanemon.ui.counters.grid import CountersGrid, StaffStrip, cells_from, chips_from, counter_label
from lanemon.ui.kit.live_label import LiveLabel

log = logging.getLogger(__name__)

FRAME_MS = 33  # ≤ 30 fps: the grid (its claim countdowns move on every frame)
TEXT_FPS = 5   # the staff strip, the tallies and the headline: at most this often, and at
               # once after a control was used (figures that change 30 times a second cannot
               # be read; each of these costs ~0.2-0.6 ms to repaint)


class CountersView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sim: Simulation | None = None
        self._unsubscribe = None
        self._task: asyncio.Task | None = None
        self._compare_task: asyncio.Task | None = None
        self._dirty = True
        self._countdown = False
        self._text_at = 0.0          # when the text parts last showed a snapshot
        self._text_stale = False     # they show an older snapshot than the grid
        self._text_urgent = True     # a control was used: show them on the next tick
        self._figures_due = False    # the staff strip was shown: the tallies and headline next
        self._cells_kept: dict = {}  # counter id -> (view, cell): unchanged counters keep their cell
        self.frames = 0             # repaints done (for tests and the bench)
        self.frame_ms_max = 0.0     # slowest refresh so far (snapshot + repaint request)
        self.last_snapshot = None

        # --- controls ------------------------------------------------------------
        self.form = ConfigForm()
        self.start_btn = QPushButton("&Start")
        self.stop_btn = QPushButton("St&op")
        self.reset_btn = QPushButton("&Reset")
        self.compare_btn = QPushButton("&Compare all three")
        self.expire_btn = QPushButton("E&xpire a claim")
        self.abandon_btn = QPushButton("&Walk away")
        self.start_btn.setProperty("run", True)
        self.start_btn.setStyleSheet(theme.run_button_style("sliced"))
        self.stop_btn.setProperty("run", True)
        self.stop_btn.setStyleSheet(theme.run_button_style("whole"))
        self.start_btn.setToolTip("start the simulation (a stopped or finished one starts afresh)")
        self.stop_btn.setToolTip("stop the simulation; the board stays on screen")
        self.reset_btn.setToolTip("a new simulation with these settings, not started")
        self.compare_btn.setToolTip("the same seeded workload under short lock, long lock and claim "
                                    "(virtual time, in a worker thread)")
        self.expire_btn.setToolTip("end a live claim now (the selected counter, else the freshest claim): "
                                   "its owner's finalize will be refused")
        self.abandon_btn.setToolTip("the selected staff member (else S1) walks away halfway through "
                                    "the next guide")
        self.message = MessageLine()

        controls = QGroupBox("Simulation")
        cl = QVBoxLayout(controls)
        cl.setSpacing(5)
        cl.addWidget(self.form)
        row = QHBoxLayout()
        for b in (self.start_btn, self.stop_btn, self.reset_btn):
            row.addWidget(b)
        cl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(self.expire_btn)
        row.addWidget(self.abandon_btn)
        cl.addLayout(row)
        cl.addWidget(self.compare_btn)
        cl.addWidget(self.message)
        cl.addStretch(1)
        self._controls = controls

        # --- board -----------------------------------------------------------------
        self.grid = CountersGrid()
        self.staff = StaffStrip()
        self.headline = LiveLabel()      # strategy, state, time, lock; at most TEXT_FPS a second
        board = QVBoxLayout()
        board.setSpacing(4)
        board.addWidget(self.headline)
        board.addWidget(self.staff)
        board.addWidget(self.grid, 1)

        # --- numbers ---------------------------------------------------------------
        self.tallies = TalliesPanel()
        self.compare = CompareTable()
        # Both boxes have a tight bottom edge (1 px instead of the style's 9) and sit 2 px
        # apart: that pays for the tallies' "turned away" row at 1280x800 without taking
        # a row from the compare table (the right column has no spare pixel there).
        tallies_box = QGroupBox("Tallies")
        box = QVBoxLayout(tallies_box)
        box.addWidget(self.tallies)
        _tight_bottom(box)
        compare_box = QGroupBox("Compare all three")
        box = QVBoxLayout(compare_box)
        box.addWidget(self.compare)
        _tight_bottom(box)
        right = QVBoxLayout()
        right.setSpacing(2)
        right.addWidget(tallies_box)
        right.addWidget(compare_box, 1)
        self._right = QWidget()
        self._right.setLayout(right)
        right.setContentsMargins(0, 0, 0, 0)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(8)
        layout.addWidget(controls, 0)
        layout.addLayout(board, 1)
        layout.addWidget(self._right, 0)

        # --- wiring ------------------------------------------------------------------
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_MS)
        self.frame_timer.timeout.connect(self.frame_tick)
        self.start_btn.clicked.connect(self.start)
        self.stop_btn.clicked.connect(self.stop)
        self.reset_btn.clicked.connect(self.reset)
        self.compare_btn.clicked.connect(self.compare_all)
        self.expire_btn.clicked.connect(self.expire_claim)
        self.abandon_btn.clicked.connect(self.abandon)
        self.form.config_changed.connect(self._config_changed)
        self.form.speed_changed.connect(self.set_speed)
        self.apply_fonts()
        self.reset()

    # --- presenter mode --------------------------------------------------------------------
    def apply_fonts(self) -> None:
        s = theme.font_scale()
        self._controls.setFixedWidth(int(335 * s))
        self._right.setFixedWidth(int(405 * s))
        self.grid.apply_fonts()
        self.staff.apply_fonts()
        self.tallies.apply_fonts()
        head = QFont(self.font())
        head.setPointSizeF(theme.pt(theme.BASE_POINT_SIZE + 1))
        self.headline.setFont(head)
        self.message.apply_fonts()
        self.compare.apply_fonts()
        self.mark_dirty()

    # --- controls -> domain ------------------------------------------------------------------
    def show_message(self, text: str, error: bool = False) -> None:
        self.message.error = error
        self.message.setText(text)

    @property
    def running(self) -> bool:
        return self.sim is not None and self.sim.state == "running"

    def reset(self) -> bool:
        """A new simulation with the form's settings (not started). False if refused."""
        try:
            config = self.form.config()
            sim = Simulation(config, speed=self.form.speed.value())
        except ValueError as exc:
            self.show_message(f"Not started: {exc}", error=True)
            return False
        self._drop_sim()
        self.sim = sim
        self._unsubscribe = sim.subscribe(self._on_event)
        self.grid.selected = None
        self.staff.selected = None
        self.show_message(f"Ready: {config.label}, {config.staff} staff, {config.counters} counters. "
                          "Start with Alt+S.")
        self.mark_dirty()
        return True

    def start(self) -> bool:
        if self.running:
            return True
        if self.sim is None or self.sim.state != "ready":
            if not self.reset():
                return False
        try:
            task = self.sim.start()
        except Exception as exc:  # noqa: BLE001 -- shown, not swallowed
            self.show_message(f"Could not start: {exc}", error=True)
            return False
        self._task = task
        task.add_done_callback(self._run_done)
        self.show_message(f"Running: {self.sim.config.label}.")
        self.mark_dirty()
        return True

    def stop(self) -> None:
        if self.sim is not None and self.running:
            self.sim.stop()
            self.show_message("Stopped. Start runs afresh; Reset clears the board.")
        self.mark_dirty()

    def set_speed(self, speed: float) -> None:
        if self.sim is None:
            return
        try:
            self.sim.set_speed(speed)
        except ValueError as exc:
            self.show_message(str(exc), error=True)
        self.mark_dirty()

    def _config_changed(self) -> None:
        was_running = self.running
        if self.reset() and was_running:
            self.start()

    def expire_claim(self) -> bool:
        if self.sim is None:
            return False
        snap = self.sim.snapshot()
        target = self.grid.selected
        if target is None or snap.counters[target].state != CounterState.CLAIMED:
            claimed = [v for v in snap.counters if v.state == CounterState.CLAIMED]
            target = max(claimed, key=lambda v: v.ttl_left or 0.0).id if claimed else target
        if target is None:
            self.show_message("No counter is claimed right now (claims exist under the claim strategy).",
                              error=True)
            return False
        if self.sim.expire_claim(target):
            self.show_message(f"Claim on counter {counter_label(target)} expired: its owner's finalize "
                              "will be refused.")
            self.mark_dirty()            # a control was used: grid and text on the next tick
            return True
        self.show_message(f"Counter {counter_label(target)} has no live claim.", error=True)
        return False

    def abandon(self) -> str | None:
        if self.sim is None:
            return None
        name = self.staff.selected or "S1"
        try:
            self.sim.abandon(name)
        except KeyError:
            self.show_message(f"No staff member {name}.", error=True)
            return None
        self.show_message(f"{name} will walk away halfway through the next guide "
                          f"({self.sim.config.abandon_time:g} s).")
        self.mark_dirty()
        return name

    def compare_all(self) -> asyncio.Task | None:
        if self._compare_task is not None and not self._compare_task.done():
            self.show_message("A comparison is running already.", error=True)
            return self._compare_task
        try:
            config = self.form.config()
            if config.customers is None:
                config = config.replace(customers=COMPARE_CUSTOMERS)
        except ValueError as exc:
            self.show_message(f"Cannot compare: {exc}", error=True)
            return None
        self.compare_btn.setEnabled(False)
        self.compare_btn.setText("Comparing…")
        self._compare_task = asyncio.get_running_loop().create_task(self._compare(config))
        return self._compare_task

    async def _compare(self, config) -> None:
        started = time.perf_counter()
        try:
            results = await compare_async(config)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 -- shown, not swallowed
            log.exception("compare failed")
            self.show_message(f"Compare failed: {type(exc).__name__}: {exc}", error=True)
            return
        finally:
            self.compare_btn.setEnabled(True)
            self.compare_btn.setText("&Compare all three")
        self.compare.set_results(results, config)
        self.show_message(f"Compared in {time.perf_counter() - started:.2f} s (virtual time).")

    async def shutdown(self) -> None:
        """Stop the simulation and a compare in flight (the window's shutdown hook); returns
        when both have ended, the compare's worker thread included."""
        self.frame_timer.stop()
        task = self._task
        self._drop_sim()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        ct = self._compare_task
        if ct is not None and not ct.done():
            ct.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ct

    def _drop_sim(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.sim is not None:
            self.sim.stop()
        self.sim = None
        self._task = None

    def _run_done(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("counter simulation failed", exc_info=exc)
            self.show_message(f"The simulation failed: {type(exc).__name__}: {exc}", error=True)
        elif task is self._task:
            t = task.result()
            self.show_message(f"Finished: {t.served:,} served in {t.elapsed:.1f} s, "
                              f"{t.double_assignments:,} double assignments.")
        self.mark_dirty()

    # --- domain events -> one repaint per tick --------------------------------------------------
    def _on_event(self, _event) -> None:
        if self._dirty:
            return
        self._dirty = True
        if not self.frame_timer.isActive() and self.isVisible():
            self.frame_timer.start()

    def mark_dirty(self) -> None:
        self._dirty = True
        self._text_urgent = True
        if self.isVisible() and not self.frame_timer.isActive():
            self.frame_timer.start()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self.mark_dirty()

    def hideEvent(self, event) -> None:  # noqa: N802
        self.frame_timer.stop()
        super().hideEvent(event)

    def frame_tick(self) -> None:
        """One tick of ``frame_timer``: refresh if something changed or a countdown runs; else
        bring the text parts up to the last snapshot (if a tick skipped them) and stop.

        The text parts, when due, are split over two ticks (the staff strip, then the
        tallies and the headline), so no tick repaints all of them; after a control was
        used they are shown at once."""
        sim = self.sim
        live = sim is not None and sim.state == "running" and sim.clock.speed > 0
        if not self._dirty and not (self._countdown and live):
            if self._text_stale and self.last_snapshot is not None:
                self._show_text(self.last_snapshot, "all")
            self.frame_timer.stop()
            return
        self._dirty = False
        if self._text_urgent:
            text = "all"
        elif self._figures_due:
            text = "figures"
        elif time.perf_counter() - self._text_at >= 1.0 / TEXT_FPS:
            text = "staff"
        else:
            text = None
        self.refresh(text)

    def refresh(self, text: str | None = "all") -> None:
        """Read one snapshot and show it: the grid, and the text parts named by ``text``:
        ``"all"``, ``"staff"`` (the staff strip), ``"figures"`` (the tallies and the
        headline) or ``None``; ``frame_tick`` asks for them at most ``TEXT_FPS`` times
        a second."""
        t0 = time.perf_counter()
        sim = self.sim
        if sim is None:
            return
        snap = sim.snapshot()
        self.last_snapshot = snap
        cells = cells_from(snap, self._cells_kept)
        self._countdown = any(c.ttl_fraction is not None for c in cells)
        self.grid.set_cells(cells)
        if text is not None:
            self._show_text(snap, text)
        else:
            self._text_stale = True
        self.frames += 1
        self.frame_ms_max = max(self.frame_ms_max, (time.perf_counter() - t0) * 1000)

    def _show_text(self, snap, which: str) -> None:
        if which in ("all", "staff"):
            self.staff.set_chips(chips_from(snap))
            self._text_at = time.perf_counter()
            self._figures_due = which == "staff"
            self._text_stale = which == "staff"
        if which in ("all", "figures"):
            self.tallies.set_tallies(snap.tallies)
            self.headline.set_parts(self._headline(snap))
            self._figures_due = False
            self._text_stale = False
        self._text_urgent = False

    def _headline(self, snap) -> list[tuple[str, str, bool]]:
        fg, muted = theme.FG, theme.MUTED
        waiting = sum(1 for s in snap.staff if s.state == "waiting_lock")
        speed = "paused" if snap.speed == 0 else f"{snap.speed:g}×"
        parts = [(snap.label, fg, True),
                 (f"  ·  {snap.state}  ·  t = {snap.time:.1f} s  ·  {speed}  ·  lock: ", muted, False),
                 (snap.lock_holder or "free", fg, snap.lock_holder is not None)]
        if waiting:
            parts.append((f"  {waiting} waiting", theme.REF_LONG, True))
        return parts


def _tight_bottom(layout) -> None:
    """The application style's layout margins, but 1 px at the bottom."""
    style, pm = QApplication.style(), QStyle.PixelMetric
    layout.setContentsMargins(style.pixelMetric(pm.PM_LayoutLeftMargin), style.pixelMetric(pm.PM_LayoutTopMargin),
                              style.pixelMetric(pm.PM_LayoutRightMargin), 1)


def install_counters_view(window) -> CountersView:
    """Add the Counters tab to ``window`` (a ``MainWindow``) and its shutdown hook."""
    view = CountersView()
    window.add_view("counters", "Counters", view)
    window.add_shutdown_hook(view.shutdown)
    window.counters_view = view
    return view
