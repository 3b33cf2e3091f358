"""The counters view: counter claims versus locks, live, and the three compared.

Data flow (the view decides nothing about counters):

- a control calls the domain: ``Simulation(form.config(), speed=...)`` (with
  ``ARRIVAL_CHUNK`` / ``ARRIVAL_BUDGET_S``: a run behind real time, such as 9,999
  arrivals/s at 9x, admits its overdue arrivals in chunks and the frame runs between
  them; Reset drops the old run, nothing keeps it),
  ``start()`` (a task on the running qasync loop), ``stop()``,
  ``set_speed()``, ``expire_claim()``, ``abandon()``, ``compare_async()``.
  A ``ValueError`` from the domain, or a run / compare that fails, is shown
  in the view's message line -- never swallowed;
- every domain event only marks the view dirty (``LiveView.mark_dirty``);
- the ``LiveView`` frame tick (33 ms, ≤ 30 fps) runs while the view is
  visible and something is to be drawn: it reads one ``snapshot()`` and
  repaints what changed in the grid (``frame_motion``); the staff strip, the
  tallies and the headline follow at most ``TEXT_FPS`` times a second (two
  steps: the staff strip, then the tallies and the headline), and at once
  after a control was used. It stops itself when nothing changed and no TTL
  countdown is on screen, after bringing the text up to the last snapshot.

Config changes (strategy, staff, counters, ...) reset the run -- a
``Simulation`` runs once -- and restart it if it was running. The speed
applies live (0 pauses).

Customers turned away by the full queue (``SimConfig.queue_limit``) show in
the tallies ("turned away", in the warning colour once > 0) and, after a
compare, as served figures in the warning colour whose tooltip says how many.

**Store mode** (``set_source(follower)``, a ``lanemon.agents.board_follow.BoardFollower``;
``set_source(None)``: this window's simulation again, the default): the grid shows the
store's counters (red when double assigned, each saying who seated or claims it), the
staff strip one chip per agent (its strategy, the counters it holds, the store lock), the
headline the store and the lock holder, and two lines under it say what the counters
scenario shows with the store-wide figures live (``STORE_SCENARIO``, ``store_figures``).
The follower reads the store when its change feed says the board changed; a frame
redraws only when it read something new or a claim's countdown runs. A running
simulation is replaced by a new one, not started; its controls are disabled and its
tallies and compare hidden while the store is shown. The view owns the follower: it
starts it, and closes it when another source is set or the window closes.

**Replay mode** (``show_replay(snapshot, ...)``, until ``end_replay()``; the window's
replay, ``lanemon.ui.replay``, calls them): the grid, the staff strip, the headline and
the tallies draw the snapshot they are handed (a recording's, at the replay's position)
instead of the simulation's; the counter and the staff members of a double assignment
being explained are ringed (``theme.RACE_HIGHLIGHT``). A running simulation is stopped
on entering; the simulation's controls (which hold the live settings, not the
recording's) are hidden and the source picker disabled until the replay ends, then the
view shows its own simulation (or the store it followed) again.

``sim_changed`` (signal) is emitted with each new ``Simulation`` the view makes
(``reset``): a recording attaches to it (``lanemon.ui.replay.record``).

``install_counters_view(window)`` adds the tab; when the window closes, the
view's ``shutdown`` stops a running simulation and a compare in flight: it
returns once the run's
tasks have finished and the compare's worker thread has ended (it stops within
one iteration of its virtual-time loop), so closing the window leaves nothing
computing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from PySide6.QtCore import Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QApplication,
    QBoxLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from lanemon.counters import CounterState, Simulation, compare_async
from lanemon.ui.counters.controls import (
    COMPARE_CUSTOMERS,
    CompareTable,
    ConfigForm,
    MessageLine,
    TalliesPanel,
)
from lanemon.ui.counters.grid import (
    CountersGrid,
    StaffStrip,
    cells_from,
    chips_from,
    counter_label,
    store_cells,
    store_chips,
)
from lanemon.ui.kit import theme
from lanemon.ui.kit.live_label import LiveLabel, figure_parts
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.reflow import Reflow
from lanemon.ui.kit.source_picker import SourcePicker

log = logging.getLogger(__name__)

TEXT_FPS = 5   # the staff strip, the tallies and the headline: at most this often, and at
               # once after a control was used (figures that change 30 times a second cannot
               # be read; each of these costs ~0.2-0.6 ms to repaint)


ARRIVAL_CHUNK = 200       # a run behind real time admits at most this many arrivals per loop turn ...
ARRIVAL_BUDGET_S = 0.004  # ... and ends a turn's chunk after this long (a frame is 16.7 ms; the
                          # staff, the services and the frame share the rest)

BOARD_AT = 220   # px at font scale 1: the board's least width beside the two fixed columns

#: what the counters scenario shows, said under the headline in store mode
#: how long a store may take to answer its first board read before the picker says it failed
FOLLOW_TIMEOUT_S = 15.0

STORE_SCENARIO = ("Counters across processes: short lock double-assigns (red: two agents chose one "
                  "free counter), long lock serialises (no double), claim: no double and more "
                  "seated per second than long.")


def store_figures(state) -> list[tuple[str, str, str | None]]:
    """The store-wide figures of a board (``BoardState``) as (name, value, colour) triples:
    double assignments in red once there are any."""
    c = state.counts
    return [("seated", f"{state.seated:,}", None),
            ("double assignments", f"{c.double_assignments:,}", theme.REF_LONG if c.double_assignments else None),
            ("seated/s", f"{state.seated_per_s:.1f}", None),
            ("claims", f"{c.claims:,}", None),
            ("refused", f"{c.claim_refused:,}", None),
            ("expired", f"{c.expired:,}", None)]

class CountersView(LiveView):
    """The Counters tab (see the module docstring). ``grid_frames`` counts the grid's
    repaints (a snapshot read each); ``last_snapshot`` is the snapshot shown last."""

    TEXT_FPS = TEXT_FPS
    sim_changed = Signal(object)   # a new Simulation (reset): a recording attaches to it

    def __init__(self, parent: QWidget | None = None, settings=None) -> None:
        super().__init__(parent)
        self.replaying = False      # replay mode: draws the snapshots show_replay hands it
        self._replayed = None       # the replay's snapshot to draw (None: no counters in it)
        self._ringed: tuple = ((), ())   # (counter ids, staff names) ringed with it
        self.sim: Simulation | None = None
        self._unsubscribe = None
        self._task: asyncio.Task | None = None
        self._compare_task: asyncio.Task | None = None
        self._countdown = False
        self._cells_kept: dict = {}  # counter id -> (view, cell): unchanged counters keep their cell
        self.grid_frames = 0        # grid repaints done (for tests and the bench)
        self.last_snapshot = None
        self.source = None          # a BoardFollower (store mode), or None: this window's simulation
        self._source_unsubscribe = None
        self.last_store_state = None   # the store's board shown last (store mode)
        self._store_kept: dict = {}    # counter id -> (view, seated by, cell)

        # --- controls ------------------------------------------------------------
        self.form = ConfigForm()
        self.start_btn = QPushButton("&Start")
        self.stop_btn = QPushButton("St&op")
        self.reset_btn = QPushButton("&Reset")
        self.compare_btn = QPushButton("&Compare all three")
        self.expire_btn = QPushButton("E&xpire a claim")
        self.abandon_btn = QPushButton("&Walk away")
        self.start_btn.setProperty("run", True)
        self.stop_btn.setProperty("run", True)
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
        self.scenario = MessageLine()    # store mode: what the scenario shows ...
        self.scenario.setText(STORE_SCENARIO)
        self.figures = LiveLabel()       # ... and the store-wide figures, live
        self.scenario.hide()
        self.figures.hide()
        # where the board comes from: this window's simulation or a store's (kit.source_picker,
        # across the top of the tab as in the Lanes & queues tab)
        # (every letter of "Data source" and "Go" is taken in this tab: Alt+B, then Enter)
        self.source_picker = SourcePicker(settings, label="&Board from", go="Go")
        self.source_picker.chosen.connect(self.choose_source)
        board = QVBoxLayout()
        board.setSpacing(4)
        board.addWidget(self.headline)
        board.addWidget(self.scenario)
        board.addWidget(self.figures)
        board.addWidget(self.staff)
        board.addWidget(self.grid, 1)
        self._board = board

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

        top = QHBoxLayout()
        top.setSpacing(8)
        top.addWidget(controls, 0)
        top.addLayout(board, 1)
        layout = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(top, 1)
        layout.addWidget(self._right, 0)
        self._columns = layout
        # the source picker across the top, over simulation, board and numbers
        outer = QVBoxLayout(self)
        outer.setContentsMargins(8, 8, 8, 8)
        outer.setSpacing(6)
        outer.addWidget(self.source_picker)
        outer.addLayout(layout, 1)
        # simulation | board | numbers side by side when the board keeps BOARD_AT px, else the
        # numbers go below the simulation and its board (which stay side by side)
        self.reflow = Reflow(self, layout, self._wide_at)

        # --- wiring ------------------------------------------------------------------
        self.start_btn.clicked.connect(self.start)
        self.stop_btn.clicked.connect(self.stop)
        self.reset_btn.clicked.connect(self.reset)
        self.compare_btn.clicked.connect(self.compare_all)
        self.expire_btn.clicked.connect(self.expire_claim)
        self.abandon_btn.clicked.connect(self.abandon)
        self.form.config_changed.connect(self._config_changed)
        self.form.refused.connect(lambda text: self.show_message(text, error=True))
        self.form.speed_changed.connect(self.set_speed)
        self.apply_fonts()
        self.reset()

    # --- presenter mode --------------------------------------------------------------------
    def _wide_at(self) -> int:
        """The least width at which the three columns fit side by side."""
        layout = self.layout()
        m = layout.contentsMargins()
        board = max(int(BOARD_AT * theme.font_scale()), self._board.minimumSize().width())
        return (self._controls.width() + self._right.width() + board
                + 2 * self._columns.spacing() + m.left() + m.right())

    def fonts_changed(self) -> None:
        s = theme.font_scale()
        self.start_btn.setStyleSheet(theme.run_button_style("sliced"))   # this theme's colours
        self.stop_btn.setStyleSheet(theme.run_button_style("whole"))
        self._controls.setFixedWidth(int(335 * s))
        self._right.setFixedWidth(int(405 * s))
        self.reflow.apply()
        self.grid.apply_fonts()
        self.staff.apply_fonts()
        self.tallies.apply_fonts()
        head = QFont(self.font())
        head.setPointSizeF(theme.pt(theme.BASE_POINT_SIZE + 1))
        self.headline.setFont(head)
        self.message.apply_fonts()
        self.scenario.apply_fonts()
        self.compare.apply_fonts()

    # --- controls -> domain ------------------------------------------------------------------
    def show_message(self, text: str, error: bool = False) -> None:
        self.message.error = error
        self.message.setText(text)

    # --- the source: this window's simulation or a store ------------------------------------
    def set_source(self, follower) -> bool:
        """Show a store's counters (``follower``: a ``BoardFollower``, which this view then owns:
        it is started now and closed when another source is set or the window closes), or
        this window's simulation again (``None``). See the module docstring. Once the view
        is shut (the window closing) it is refused: False, and the follower stays the caller's."""
        old = self.source
        if self.is_shut:
            return False
        if follower is old:
            return True
        if self._source_unsubscribe is not None:
            self._source_unsubscribe()
            self._source_unsubscribe = None
        if old is not None:
            self.spawn(old.aclose())
        store = follower is not None
        if store and self._task is not None and not self._task.done():
            self.reset()    # the running simulation stops (a new one waits, not started)
        if store:
            follower.start()
            self._source_unsubscribe = follower.subscribe(self._on_source)
        self.source = follower
        self.last_store_state = None
        self._store_kept = {}
        self._countdown = False
        self.grid.selected = None
        self._controls.setEnabled(not store)
        self._right.setVisible(not store)
        self.scenario.setVisible(store)
        self.figures.setVisible(store)
        if store:
            self.show_message("Store mode: pick this window as the source to run the simulation again.")
        else:
            self.show_message("Showing this window's simulation.")
        self.mark_dirty(urgent=True)
        return True

    def _on_source(self) -> None:
        self.mark_dirty()

    def choose_source(self, url: str) -> asyncio.Task | None:
        """The picker asked for ``url`` (``""``: this window's simulation): the store's board
        is shown once its first read worked; a URL refused or a store that cannot be read is
        said beside the picker and the tab keeps its source."""
        if not url:
            if self.set_source(None):
                self.source_picker.set_source(None)
                self.source_picker.say("This window's own simulation.")
            return None
        return self.spawn(self.follow(url))

    async def follow(self, url: str, timeout_s: float = FOLLOW_TIMEOUT_S) -> bool:
        """Follow the board of the store ``url`` (see ``choose_source``): True once shown."""
        from lanemon.agents.board_follow import BoardFollower
        from lanemon.store.url import StoreError

        picker = self.source_picker
        try:
            follower = BoardFollower(url)
        except StoreError as exc:
            picker.say(f"Not followed: {exc}", error=True)
            return False
        picker.say("opening…")
        wake = asyncio.Event()
        unsubscribe = follower.subscribe(wake.set)    # (after each read, failed ones too)
        follower.start()
        try:
            # until the first good read, or the first failure (the follower says why in its state)
            deadline = time.monotonic() + timeout_s
            while follower.state().read_at == 0 and follower.state().error is None \
                    and time.monotonic() < deadline:
                wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(wake.wait(), 0.25)
        finally:
            unsubscribe()
        state = follower.state()
        if state.read_at == 0 or state.error is not None:
            await follower.aclose()
            picker.say(f"Not followed: {state.error or 'no answer from the store'}", error=True)
            return False
        if not self.set_source(follower):
            await follower.aclose()
            return False
        picker.set_source(url)
        picker.say(f"Following {follower.url}: the store's counter board, from its change feed.")
        return True

    @property
    def running(self) -> bool:
        return self.sim is not None and self.sim.state == "running"

    def reset(self) -> bool:
        """A new simulation with the form's settings (not started). False if refused."""
        try:
            config = self.form.config()
            sim = Simulation(config, speed=self.form.speed.value(),
                             arrival_chunk=ARRIVAL_CHUNK, arrival_budget=ARRIVAL_BUDGET_S)
        except ValueError as exc:
            self.show_message(f"Not started: {exc}", error=True)
            return False
        self._drop_sim()
        self.sim = sim
        self._unsubscribe = sim.subscribe(self._on_event)
        self.sim_changed.emit(sim)
        self.grid.selected = None
        self.staff.selected = None
        self.show_message(f"Ready: {config.label}, {config.staff} staff, {config.counters} counters. "
                          "Start with Alt+S.")
        self.mark_dirty(urgent=True)
        return True

    def start(self) -> bool:
        """Run the form's settings: a ready simulation made from other settings is replaced,
        and settings the model refuses start nothing (the message says why)."""
        if self.running:
            return True
        try:
            config = self.form.config()
        except ValueError as exc:
            self.show_message(f"Not started: {exc}", error=True)
            return False
        if self.sim is None or self.sim.state != "ready" or self.sim.config != config:
            if not self.reset():
                return False
        try:
            task = self.sim.start()
        except Exception as exc:
            self.show_message(f"Could not start: {exc}", error=True)
            return False
        self._task = task
        task.add_done_callback(self._run_done)
        self.show_message(f"Running: {self.sim.config.label}.")
        self.mark_dirty(urgent=True)
        return True

    def stop(self) -> None:
        if self.sim is not None and self.running:
            self.sim.stop()
            self.show_message("Stopped. Start runs afresh; Reset clears the board.")
        self.mark_dirty(urgent=True)

    def set_speed(self, speed: float) -> None:
        if self.sim is None:
            return
        try:
            self.sim.set_speed(speed)
        except ValueError as exc:
            self.show_message(str(exc), error=True)
        self.mark_dirty(urgent=True)

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
            self.mark_dirty(urgent=True)   # a control was used: grid and text on the next tick
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
        self.mark_dirty(urgent=True)
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
        task = self.spawn(self._compare(config))
        if task is None:
            self.show_message("Cannot compare: the window is closing.", error=True)
            return None
        self.compare_btn.setEnabled(False)
        self.compare_btn.setText("Comparing…")
        self._compare_task = task
        return task

    async def _compare(self, config) -> None:
        started = time.perf_counter()
        try:
            results = await compare_async(config)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("compare failed")
            self.show_message(f"Compare failed: {type(exc).__name__}: {exc}", error=True)
            return
        finally:
            self.compare_btn.setEnabled(True)
            self.compare_btn.setText("&Compare all three")
        self.compare.set_results(results, config)
        self.show_message(f"Compared in {time.perf_counter() - started:.2f} s (virtual time).")

    async def close_domain(self) -> None:
        """After the view's tasks (a compare in flight: cancelled, its worker thread ended;
        ``LiveView.shutdown``): close the store follower, if any; stop the simulation and
        wait until its run has ended."""
        source, self.source = self.source, None
        if self._source_unsubscribe is not None:
            self._source_unsubscribe()
            self._source_unsubscribe = None
        if source is not None:
            await source.aclose()
        task = self._task
        self._drop_sim()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

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
        self.mark_dirty(urgent=True)

    # --- replay mode ---------------------------------------------------------------------------
    def show_replay(self, snapshot, counters=(), staff=()) -> None:
        """Draw ``snapshot`` (a ``lanemon.counters.Snapshot`` rebuilt from a recording; None:
        the recording has no counters) instead of the live board, with ``counters`` (ids) and
        ``staff`` (names) ringed. The first call enters replay mode (see the module docstring)."""
        if not self.replaying:
            self.replaying = True
            if self.running:
                self.sim.stop()
            self._controls.setVisible(False)   # (its settings are the live ones, not the recording's)
            self.source_picker.setEnabled(False)
            self.show_message("Replaying a recording: the controls come back when the replay "
                              "is left (Esc in the replay bar).")
        self._replayed = snapshot
        self._ringed = (tuple(counters), tuple(staff))    # drawn with the snapshot's cells and chips
        self.mark_dirty(urgent=True)

    def end_replay(self) -> None:
        """Leave replay mode: the live board (simulation or store) and the controls again."""
        if not self.replaying:
            return
        self.replaying = False
        self._replayed = None
        self._ringed = ((), ())
        self.grid.set_highlighted(())
        self.staff.set_highlighted(())
        self._controls.setVisible(True)
        self.source_picker.setEnabled(True)
        self._cells_kept = {}
        self._store_kept = {}
        self.show_message("Back to this window's live board.")
        self.mark_dirty(urgent=True)

    # --- domain events -> one repaint per tick --------------------------------------------------
    def _on_event(self, _event) -> None:
        if not self.replaying:
            self.mark_dirty()

    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        """Every tick in which something changed or a claim's countdown runs: read one
        snapshot and work out what changed in the grid (its repaint is asked of Qt in the
        loop's next turn: ``frame_present``); the text parts are then behind.
        In store mode: the follower's state, when it read something new or a countdown runs.
        In replay mode: the snapshot handed in, when a new one was (nothing moves between)."""
        if self.replaying:
            if not changed:
                return False
            snap = self._replayed
            self.last_snapshot = snap
            self.grid.set_cells(cells_from(snap, self._cells_kept) if snap is not None else [])
            self.grid.set_highlighted(self._ringed[0])
            self._countdown = False
            self.grid_frames += 1
            self.mark_stale()
            return False
        if self.source is not None:
            return self._store_motion(changed)
        sim = self.sim
        if sim is None:
            return False
        live = sim.state == "running" and sim.clock.speed > 0
        if not changed and not (self._countdown and live):
            return False
        snap = sim.snapshot()
        self.last_snapshot = snap
        cells = cells_from(snap, self._cells_kept)
        self._countdown = any(c.ttl_fraction is not None for c in cells)
        self.grid.plan_cells(cells)       # its repaint asked for in the next turn (frame_present)
        self.plan_present()
        self.grid_frames += 1
        self.mark_stale()
        return True

    def frame_present(self) -> None:
        self.grid.present()

    def _store_motion(self, changed: bool) -> bool:
        if not changed and not self._countdown:
            return False
        state = self.source.state()
        self.last_store_state = state
        cells = store_cells(state, self._store_kept)
        self._countdown = any(c.ttl_fraction is not None for c in cells)
        self.grid.plan_cells(cells)
        self.plan_present()
        self.grid_frames += 1
        self.mark_stale()
        return True

    def refresh_steps(self, urgent: bool):
        """The text parts from the last snapshot: after a control was used, all at once;
        else in two steps, the staff strip, then the tallies and the headline (each costs
        ~0.2-0.6 ms to repaint), so no tick repaints all of them."""
        if self.source is not None and not self.replaying:
            return (self._show_store,)
        if urgent:
            return (self._show_all,)
        return (self._show_staff, self._show_figures)

    def _show_store(self) -> None:
        state = self.last_store_state
        if state is None:
            return
        self.staff.set_chips(store_chips(state))
        self.headline.set_parts(self._store_headline(state))
        self.figures.set_parts(figure_parts(store_figures(state), theme.MUTED, "  ·  "))

    def _store_headline(self, state) -> list[tuple[str, str, bool]]:
        fg, muted = theme.FG, theme.MUTED
        staff = [a for a in state.agents if a.role == "staff"]
        strategies = sorted({a.strategy for a in staff if a.strategy})
        who = f"{len(staff)} staff agents" + (f" ({', '.join(strategies)})" if strategies else "")
        parts = [("store", fg, True), (f"  ·  {state.url}  ·  ", muted, False)]
        if state.agents:
            parts.append((who + "  ·  ", muted, False))
        parts += [("lock: ", muted, False), (state.lock_holder or "free", fg, state.lock_holder is not None)]
        if state.error:
            parts.append((f"  ·  {state.error}", theme.REF_LONG, True))
        elif not state.version:
            parts.append(("  ·  reading…", muted, False))
        return parts

    def _show_all(self) -> None:
        self._show_staff()
        self._show_figures()

    def _show_staff(self) -> None:
        if self.last_snapshot is not None:
            self.staff.set_chips(chips_from(self.last_snapshot))
        elif self.replaying:
            self.staff.set_chips([])
        if self.replaying:
            self.staff.set_highlighted(self._ringed[1])

    def _show_figures(self) -> None:
        snap = self.last_snapshot
        if snap is not None:
            self.tallies.set_tallies(snap.tallies)
            self.headline.set_parts(self._headline(snap))
        elif self.replaying:
            self.headline.set_parts([("This recording has no counters.", theme.MUTED, False)])

    def _headline(self, snap) -> list[tuple[str, str, bool]]:
        fg, muted = theme.FG, theme.MUTED
        waiting = sum(1 for s in snap.staff if s.state == "waiting_lock")
        speed = "paused" if snap.speed == 0 else f"{snap.speed:g}×"
        parts = [*((("REPLAY  ", theme.REPLAY_CURSOR, True),) if self.replaying else ()),
                 (snap.label, fg, True),
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
    """Add the Counters tab to ``window`` (a ``MainWindow``) (the window shuts the view down when it closes)."""
    view = CountersView()
    window.add_view("counters", "Counters", view)
    return view
