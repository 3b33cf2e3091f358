"""The lanes & queues view: a thin window onto ``lanemon.lanes.Scheduler``.

A ``LiveView`` (``lanemon.ui.kit.live_view``): the frame tick, the text
throttle, the steps and the view's tasks are the base's.

Data flow: a control -> a domain call (a coroutine runs as a task of the
view, ``spawn``; its error or outcome is said under the controls, never
swallowed) -> the domain emits events -> the event callback only marks the
view dirty -> on a 33 ms tick, at most ``TEXT_FPS`` times a second (at once
after a control was used), one ``Scheduler.snapshot(limit=…,
queue_lanes=False)`` (as many jobs as the tables show), shown one step per
tick (workspaces, each queue, the timeline's bars; see ``refresh_steps``) so
that no tick does all of it; the frames between two snapshots build the changed lanes'
views ahead (``Scheduler.prepare_snapshot``). Nothing is drawn while the view is hidden
(another tab) or when nothing changed; between events only the clocks move
(time held, the timeline's running bars) and only those are redrawn.

Parts: the live counters strip; the controls (``lanes_controls``); the
timeline (``lanes_timeline``); the workspaces table (a row per workspace:
lane owner, epoch, time held, stop request, last run, busy outside); the two
queue tables (running, waiting in FIFO order, recently finished; at most
as many of each as fit, the counts are complete).

The user's pick is the user's: the job and workspace fields ("Act on") change
only when the user picks a row or types; a table update that moves rows under
the current row never changes them. A burst is submitted in chunks
(``BURST_CHUNK`` jobs and ``BURST_BUDGET_S`` per loop turn at most, and never more
than ``BURST_LIVE_MAX`` live jobs: the rest go in as jobs end) with its progress
said; a second click on Burst stops it. From a burst's start until fewer
than ``gc_pace.LIVE_MIN`` jobs are live, the collector is paced (``gc_pace.paced``:
young passes every 30 ms by the loop, never a full pass). From the window a job's final
save has at most one hold; Release lets every hold of the picked job go.

Reset (Alt+R) stops a burst under way and calls ``Scheduler.reset()``: every job ends
(waiting ones cancelled, running ones stopped), the finished ones are forgotten (the
domain drops them; the view drops what it built from them on the scheduler's ``reset``
event), the tables, timeline and counters show the empty state, and the freed heap is
given back to the system (``lanemon.heap.trim``).

"Max runs at once in one workspace" comes from the domain's
``InvariantChecker`` (it follows ``started``/``finished`` events), which also
reports any broken invariant.

``install_lanes_view(window)`` creates the scheduler and adds the tab; when the
window closes, the view's ``shutdown`` cancels its tasks and ``aclose()``s the
scheduler.

The source (``kit.source_picker``, above the counters): "this window
(simulated)" -- the scheduler above, the default -- or a store URL the tab
**follows** (``follow(url)``): a ``lanemon.agents.follow.Follower`` keeps a
model of the store from its change feed, one task of the view, and every
refresh draws ``follower.snapshot()`` instead of the scheduler's: the store's
scheduled lanes (agent, epoch, lease), both queues, the timeline across all
agents (each bar labelled with its process, overlapping runs of one workspace
in red) and the refused-write ledger (a table under the workspaces, shown
only then). The counters strip says whom it follows, the agents, the overlaps
and the ledger's count; a lost store is said there (in the error colour) while
the last state stays drawn, and the tab follows again once the store is back.
In store mode Add and Burst submit jobs to the store (``SqlStore.submit``: the
agents take them); the controls that act on this window's own scheduler
(cancel, holds, failures, stop, busy outside, Reset) are disabled. A URL that is
refused (malformed, unreachable) is said beside the picker; the tab keeps its
source. The window's scheduler runs on whatever the tab shows.

**Replay mode** (``show_replay(snapshot)``, until ``end_replay()``; the window's replay,
``lanemon.ui.replay``, calls them): every refresh draws the snapshot handed in (a
recording's lanes, rebuilt at the replay's position; ``None``: the recording has none)
at its own instant (``Snapshot.at``); nothing moves between two positions. The controls
are put away (their fields hold the live values) and the source picker is disabled until
the replay ends; the window's scheduler keeps
running underneath and is shown again after.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import Callable, Sequence
from functools import partial
from operator import attrgetter

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from lanemon import gc_pace, heap
from lanemon.lanes import CpuWork, InvariantChecker, Scheduler, parse_owner
from lanemon.ui.kit import static_texts, theme
from lanemon.ui.kit.fast_delegate import FastDelegate
from lanemon.ui.kit.live_label import LiveLabel, figure_parts
from lanemon.ui.kit.live_view import LiveView
from lanemon.ui.kit.reflow import Reflow
from lanemon.ui.kit.source_picker import SourcePicker
from lanemon.ui.kit.tables import keep_within_width, set_widths
from lanemon.ui.kit.titled import titled
from lanemon.ui.lanes.controls import LanesControls, busy_text
from lanemon.ui.lanes.ledger import LedgerModel
from lanemon.ui.lanes.model import QUEUE_LABELS, JobsModel, LaneRow, WorkspacesModel, job_row
from lanemon.ui.lanes.timeline import LanesTimeline
from lanemon.work.slicing import yield_to_timers

TEXT_FPS = 4           # tables, titles and counters (at once after a control was used)
BURST_CHUNK = 200      # a burst submits at most this many jobs per loop turn ...
BURST_BUDGET_S = 0.004  # ... and stops a turn's chunk after this long (a frame is 16.7 ms);
BURST_MIN_CHUNK = 16   # the chunk halves (down to this) when the loop's pass between two
BURST_AWAY_S = 0.008   # chunks took longer than this (the tasks a chunk started run there)
BURST_LIVE_MAX = 1_000  # a burst submits while fewer jobs than this are live, the rest as they end
#: what the window's scheduler keeps of finished jobs: half the domain's defaults. A Reset
#: frees them, but the allocator's arenas they filled during a burst stay with the process
#: when a few of the window's own objects made meanwhile sit in them (README "Hours of use":
#: with the burst's cap, RSS +9-10 MB stayed after a 99,999-job burst's Reset at the defaults,
#: +4-5 MB at half)
WINDOW_BOUNDS = {"keep_finished": 5_000, "history_total": 10_000}
PREPARE_BUDGET_S = 0.001  # per frame: the next snapshot's lane views made ahead (at most ~this)
MIN_JOB_ROWS = 12      # jobs per list (running / waiting / recent) read per frame, at least
LEDGER_ROWS = 50       # ledger rows shown (the newest; the count in the title is complete)


# columns that give way first when a table is narrow (least needed first): never "busy outside"
WS_DROP_ORDER = ("last run", "stop", "epoch", "held")
QUEUE_DROP_ORDER = ("detail", "work", "time")
STACKED_BODY_AT = 300   # px at font scale 1: the timeline and queues' least height when stacked
COLUMN_AT = 560   # px at font scale 1: the least width of the timeline and queues beside each other
HELD_KEPT = 500         # held saves remembered after their release (the timeline's hatching)


class _Observer:
    """The event callback: marks the view dirty, remembers when a save started being held
    (``held_since``, while it is held) and, for the last ``HELD_KEPT`` released ones, when
    it was held and let go (``held_spans``: job id -> (start, end)), so that the timeline
    keeps a held save's hatching after its release."""

    __slots__ = ("held_since", "held_spans", "mark", "on_reset")

    def __init__(self, mark, on_reset) -> None:
        self.mark = mark
        self.on_reset = on_reset     # the scheduler was reset: what the view keeps of it goes
        self.held_since: dict[int, float] = {}
        self.held_spans: dict[int, tuple[float, float]] = {}

    def __call__(self, ev) -> None:
        self.mark()
        kind = ev.kind
        if kind == "reset":
            self.held_since.clear()
            self.held_spans.clear()
            self.on_reset()
        elif kind == "save_held":
            self.held_since.setdefault(ev.job_id, ev.at)
        elif kind == "finished" or (kind == "saved" and ev.job_id in self.held_since):
            t0 = self.held_since.pop(ev.job_id, None)
            if t0 is not None:
                spans = self.held_spans
                spans[ev.job_id] = (t0, ev.at)
                if len(spans) > HELD_KEPT:
                    del spans[next(iter(spans))]     # the oldest released hold


class _WorkspacesTable(QTableView):
    """Space (or Select) on a workspace's row toggles "busy outside".

    The table claims Space before a window shortcut (talk mode's pause) does,
    as a focused input field would; not while ``space_yielded()`` (a loaded
    talk's Space is its next step, in this table too).
    """

    toggle_row = None
    space_yielded = None    # () -> bool: Space is not the table's now (a talk's next key)

    def event(self, event) -> bool:
        if (event.type() == QEvent.Type.ShortcutOverride
                and event.key() in (Qt.Key.Key_Space, Qt.Key.Key_Select)
                and event.modifiers() == Qt.KeyboardModifier.NoModifier
                and not (self.space_yielded is not None and self.space_yielded())):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Space, Qt.Key.Key_Select) and self.toggle_row is not None \
                and self.currentIndex().isValid():
            self.toggle_row(self.currentIndex().row())
            event.accept()
            return
        super().keyPressEvent(event)


def _table(model, cls=QTableView) -> QTableView:
    t = cls()
    t.setModel(model)
    t.setItemDelegate(FastDelegate(t))   # cells drawn from cached laid-out text
    t.setAlternatingRowColors(True)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    t.verticalHeader().setVisible(False)
    t.setWordWrap(False)
    t.setCornerButtonEnabled(False)
    h = t.horizontalHeader()
    h.setHighlightSections(False)
    h.setStretchLastSection(True)
    h.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    model.set_visible_rows(partial(_rows_in_view, t))
    return t


def _rows_in_view(t: QTableView) -> tuple[int, int]:
    """First and last row ``t`` shows (partly); ``(0, -1)`` when none."""
    n = t.model().rowCount()
    h = t.viewport().height()
    if n == 0 or h <= 0:
        return 0, -1
    first = t.rowAt(0)
    last = t.rowAt(h - 1)
    return max(first, 0), (n - 1 if last < 0 else last)


class LanesView(LiveView):
    """The lanes & queues tab (see the module docstring). ``frames`` counts the
    snapshots read, ``ticks`` the clock-only ticks (the running bars and time
    columns move, nothing else changed)."""

    TEXT_FPS = TEXT_FPS

    def __init__(self, scheduler: Scheduler, parent: QWidget | None = None, *, settings=None) -> None:
        super().__init__(parent)
        self.scheduler = scheduler
        self.follower = None                 # the store followed (None: this window's scheduler)
        self._follow_task: asyncio.Task | None = None
        self._ledger_shown = None            # the LedgerView last shown
        self.checker = InvariantChecker(scheduler)
        self._observer = _Observer(self.mark_dirty, self._forget_shown)
        self._unsubscribe = scheduler.subscribe(self._observer)
        self._snap = None
        self._live = False
        self.replaying = False               # replay mode: draws the snapshots show_replay hands it
        self._replayed = None
        # rows built from the snapshot's immutable views, reused while those views
        # are the same objects (the domain keeps the views of what did not change)
        self._lane_rows: dict[str, tuple] = {}   # ws -> (lane, busy, spans, LaneRow)
        self._job_rows: dict[str, dict] = {}     # queue -> job id -> (JobView, JobRow)
        self._syncing = False
        self.ticks = 0                       # clock-only refreshes
        self._motion = (0.0, True, False)    # (now, refreshing, text_due) frame_motion left for frame_present
        self._burst: asyncio.Task | None = None
        self._resetting: asyncio.Task | None = None
        self.burst_chunks: list[int] = []    # the last burst: jobs submitted per loop turn
        self.pacer: gc_pace.Paced | None = None  # the collector paced while a burst's jobs live

        # --- parts ---------------------------------------------------------------------------
        # text that changes several times a second: LiveLabels (no window re-layout per change)
        self.counters = LiveLabel("")
        self.source_picker = SourcePicker(settings)
        self.source_picker.chosen.connect(self.choose_source)
        self.controls = LanesControls()
        self.timeline = LanesTimeline()
        self.lanes_model = WorkspacesModel(on_busy=self._set_busy, parent=self)
        self.lanes_table = _table(self.lanes_model, _WorkspacesTable)
        self.lanes_table.toggle_row = self._toggle_busy_row
        self.lanes_title = LiveLabel("Workspaces")
        self.queue_models = {q: JobsModel(self) for q in scheduler.queues}
        self.queue_tables = {q: _table(m) for q, m in self.queue_models.items()}
        self.queue_titles = {q: LiveLabel(QUEUE_LABELS.get(q, q)) for q in scheduler.queues}
        self.ledger_model = LedgerModel(self)
        self.ledger_table = _table(self.ledger_model)
        self.ledger_title = LiveLabel("Refused writes")

        c = self.controls
        c.add_button.clicked.connect(self.add_job)
        c.burst_button.clicked.connect(self.add_burst)
        c.cancel_button.clicked.connect(self.cancel_job)
        c.hold_button.clicked.connect(self.hold_save)
        c.release_button.clicked.connect(self.release_save)
        c.fail_button.clicked.connect(self.fail_next_save)
        c.stop_button.clicked.connect(self.request_stop)
        c.busy_button.clicked.connect(self.toggle_busy)
        c.reset_button.clicked.connect(self.reset)
        c.workspace_box.currentTextChanged.connect(lambda _t: self._sync_busy_button())
        c.job_box.valueChanged.connect(lambda _v: self._sync_selection())
        self.lanes_table.selectionModel().currentRowChanged.connect(self._lane_row_chosen)
        for q, t in self.queue_tables.items():
            t.selectionModel().currentRowChanged.connect(
                lambda cur, _prev, q=q: self._job_row_chosen(q, cur.row()))

        # --- layout: controls | timeline over workspaces | the two queues -------------------
        middle = QSplitter(Qt.Orientation.Vertical)
        middle.addWidget(self.timeline)
        middle.addWidget(titled(self.lanes_title, self.lanes_table))
        self.ledger_box = titled(self.ledger_title, self.ledger_table)
        middle.addWidget(self.ledger_box)
        self.ledger_box.setVisible(False)     # store mode only
        middle.setStretchFactor(0, 1)
        middle.setStretchFactor(1, 1)
        middle.setStretchFactor(2, 1)
        middle.setSizes([250, 250, 160])
        middle.setChildrenCollapsible(False)
        right = QSplitter(Qt.Orientation.Vertical)
        for q in scheduler.queues:
            right.addWidget(titled(self.queue_titles[q], self.queue_tables[q]))
        right.setChildrenCollapsible(False)
        self._queues_pane = right
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(middle)
        body.addWidget(right)
        body.setStretchFactor(0, 13)    # the workspaces table has the most columns
        body.setStretchFactor(1, 7)
        body.setSizes([640, 345])
        body.setChildrenCollapsible(False)
        self._body = body
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(self.controls)
        main.addWidget(body)
        main.setStretchFactor(0, 0)
        main.setStretchFactor(1, 10)
        main.setSizes([300, 980])
        main.setChildrenCollapsible(False)
        self.splitter = main
        # the controls beside timeline, workspaces | queues when all fit side by side, above when not
        self.reflow = Reflow(self, main, self._wide_at, self._order)
        keep_within_width(self.lanes_table, drop=tuple(WorkspacesModel.COLUMNS.index(n) for n in WS_DROP_ORDER))
        for t in self.queue_tables.values():
            keep_within_width(t, drop=tuple(JobsModel.COLUMNS.index(n) for n in QUEUE_DROP_ORDER))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)
        layout.addWidget(self.source_picker)
        layout.addWidget(self.counters)
        layout.addWidget(main, 1)

        self.apply_fonts()

    # --- life cycle ------------------------------------------------------------------------
    async def close_domain(self) -> None:
        """After the view's tasks (``shutdown``): close the scheduler. Whatever is held or
        running is prompted: holds are released, running jobs end cancelled ("window
        closed"), final records saved before lanes go."""
        follower, self.follower = self.follower, None
        if follower is not None:            # (its task was cancelled with the view's tasks)
            await follower.close()
        await self.scheduler.aclose("window closed")
        if self.pacer is not None:
            self.pacer.close()
        self._unsubscribe()
        self.checker.unsubscribe()

    def fonts_changed(self) -> None:
        """Re-apply sizes after the window's font scale changed."""
        title = QFont(self.font())
        title.setPointSizeF(theme.pt(12))
        title.setBold(True)
        for lab in (self.lanes_title, self.ledger_title, *self.queue_titles.values()):
            lab.setFont(title)
        counters = QFont(self.font())
        counters.setPointSizeF(theme.pt(11))
        self.counters.setFont(counters)
        row = int(QFontMetrics(self.font()).height() * 1.45)
        for t in (self.lanes_table, self.ledger_table, *self.queue_tables.values()):
            t.itemDelegate().clear()
            t.verticalHeader().setDefaultSectionSize(row)
            t.verticalHeader().setMinimumSectionSize(row)
        self._size_columns()
        self.timeline.apply_fonts()
        self.reflow.apply()
        if self.reflow.wide is not None:
            self._order(self.reflow.wide)

    def _order(self, wide: bool) -> None:
        """Side by side: the controls on the left. Stacked: the timeline and the queues
        first (what a talk shows), the controls below them."""
        first = self.controls if wide else self._body
        if self.splitter.indexOf(first) != 0:
            self.splitter.insertWidget(0, first)
        # stacked, the timeline and the queues keep a readable height (the tab page scrolls)
        self._body.setMinimumHeight(0 if wide else int(STACKED_BODY_AT * theme.font_scale()))

    def _wide_at(self) -> int:
        """The least width at which the three columns fit side by side."""
        return self.controls.minimumSizeHint().width() + int(COLUMN_AT * theme.font_scale())

    def _size_columns(self) -> None:
        fm = QFontMetrics(self.font())
        wid = fm.horizontalAdvance
        bold = QFont(self.font())
        bold.setBold(True)
        bwid = QFontMetrics(bold).horizontalAdvance
        pad = int(24 * theme.font_scale())
        lanes = (wid("ws-000"), bwid("reservations #0000"), wid("epoch"), wid("held 00"),
                 wid("stop from the window"), wid("#0000 succeeded"))
        set_widths(self.lanes_table, {i: w + pad for i, w in enumerate(lanes)})
        jobs = (wid("0000"), wid("ws-000"), bwid("succeeded"), wid("00.0 s"), wid("sim 2000 ms"))
        for t in self.queue_tables.values():
            set_widths(t, {i: w + pad for i, w in enumerate(jobs)})
        # the queues keep a job's number, workspace and state whole (the timeline beside them
        # gives way): the other columns drop first, and nothing of these three elides
        t = next(iter(self.queue_tables.values()))
        whole = sum(w + pad for w in jobs[:3]) + t.verticalScrollBar().sizeHint().width() + 2 * t.frameWidth()
        self._queues_pane.setMinimumWidth(whole)
        ledger = (wid("00:00:00.000"), wid("agent-00000"), wid("#0000"), wid("succeeded"),
                  wid("scheduled · ws-00"), wid("epoch held"), wid("epoch now"))
        set_widths(self.ledger_table, {i: w + pad for i, w in enumerate(ledger)})

    # --- refresh -----------------------------------------------------------------------------
    def request_refresh(self) -> None:
        """A control was used (or something changed that emits no event, e.g. a hold was
        set up): the next tick reads a snapshot, whatever the text rate."""
        self.mark_dirty(urgent=True)

    def refresh_steps(self, urgent: bool):
        """One refresh shows one snapshot, spread over ticks, **one step per tick**, so
        that no tick holds the loop for the whole refresh (a snapshot, three tables and
        the timeline cost ~4–5 ms at 200 workspaces and 1000 jobs; a step ~1 ms plus the
        paint of what it changed):

        1. read the snapshot;
        2. the workspaces table (its rows made when the table asks for them: the rows in
           view);
        3. its title and the counters strip;
        4. each queue's table and title, one queue per tick;
        5. the timeline's bars.

        Every step shows the same snapshot, so the tables never disagree with each
        other; the last is shown five ticks (~0.17 s) after the first. The next
        snapshot waits until every step of this one was shown (events that keep coming
        never starve the last steps), except after a control was used: that starts over
        with a fresh snapshot on the next tick (``LiveView``). Between refreshes only the
        clock moves (``frame_motion``). ``refresh_now()`` does every step at once."""
        if self.replaying and self._replayed is None:
            return (self._show_no_lanes,)
        return (self._read,
                partial(self._step, self._lane_rows_step),
                partial(self._step, self._show_titles),
                *(partial(self._step, partial(self._show_queue, q)) for q in self.scheduler.queues),
                *((partial(self._step, self._show_ledger),)
                  if self.follower is not None and not self.replaying else ()),
                partial(self._step, self._draw_bars))

    def _read(self) -> None:
        """Step 1: the snapshot the other steps show (as many jobs as the tables show): the
        followed store's model, or this window's scheduler."""
        limit = max(MIN_JOB_ROWS, self._visible_job_rows() + 2)
        follower = self.follower
        if self.replaying:
            self._snap = self._replayed
        elif follower is not None:
            self._snap = follower.snapshot(limit)
        else:
            self._snap = self.scheduler.snapshot(limit=limit, queue_lanes=False)

    def clock(self) -> float:
        """The clock of what the tab shows: the store's (followed) or the scheduler's."""
        if self.replaying:
            return self._replayed.at if self._replayed is not None else 0.0
        follower = self.follower
        return follower.clock() if follower is not None else self.scheduler.clock()

    def _step(self, show) -> None:
        show(self.clock())

    def frame_motion(self, changed: bool, refreshing: bool, text_due: bool) -> bool:
        """While bars run, the clock moves: the timeline's bars slide left (no bar is
        rebuilt) and, between refreshes at ``TEXT_FPS``, the time columns tick. (Not in a
        replay: its clock stands at the position shown.) On every frame of the window's own
        scheduler, part of the next snapshot's work is done ahead
        (``Scheduler.prepare_snapshot``, ``PREPARE_BUDGET_S``): in a 99,999-job burst the
        lanes claimed again between two snapshots (thousands) made one snapshot 7-25 ms."""
        if self.follower is None and not self.replaying:
            # part of the next snapshot's work, spread over the frames between two
            self.scheduler.prepare_snapshot(PREPARE_BUDGET_S)
        if not self._live or self.replaying:
            return False
        # what moves is asked of Qt in the loop's next turn (frame_present): a heartbeat tick
        # due during the work above runs before the paint
        self._motion = (self.clock(), refreshing, text_due)
        self.plan_present()
        return True

    def frame_present(self) -> None:
        """The clock's motion planned by ``frame_motion``: the time columns (between
        refreshes, at ``TEXT_FPS``) and the timeline's bars."""
        now, refreshing, text_due = self._motion
        if not refreshing:
            if text_due:
                self.text_shown()
                self.lanes_model.tick(now)
                for m in self.queue_models.values():
                    m.tick(now)
            self.ticks += 1
        self.timeline.scroll(now)

    def _draw_bars(self, now: float) -> None:
        if self.replaying:      # (held saves: the snapshot's jobs say which; no live spans)
            self._live = self.timeline.draw(self._snap, now, {}, {})
            return
        self._live = self.timeline.draw(self._snap, now, self._observer.held_since,
                                        self._observer.held_spans)

    def _visible_job_rows(self) -> int:
        t = next(iter(self.queue_tables.values()))
        row = max(1, t.verticalHeader().defaultSectionSize())
        return max(t.viewport().height(), 0) // row + 1

    def _lane_rows_step(self, now: float) -> None:
        """Step 2: the workspaces table shows ``_snap``'s workspaces. Their rows are made
        when asked for (``_LaneRows``): the table asks for the rows it shows, so a refresh
        costs the rows in view, not 10,000 (a burst over 9,999 workspaces took 1,500 rows
        per tick at 5-17 ms and made the refresh ~25 ticks long)."""
        snap = self._snap
        rows = _LaneRows(snap, self._lane_rows)
        self._syncing = True     # rows moving under the current row are not a user's pick
        try:
            self.lanes_model.set_rows(rows, snap.workspaces, now)
        finally:
            self._syncing = False
        self._sync_busy_button()

    def _show_titles(self, _now: float) -> None:
        """Step 3: the workspaces title and the counters strip, from ``_snap``."""
        snap = self._snap
        busy = sum(1 for r in snap.occupancy.values() if r)
        held = len(snap.scheduled)
        self.lanes_title.set_parts([
            ("Workspaces", None, True),
            (f" {len(snap.workspaces)} · {held} lane{'s' * (held != 1)} held"
             + (f" · {busy} busy outside" if busy else "")
             + (" · Space toggles busy" if self.follower is None else " · agent and lease in the store"),
             theme.MUTED, False)])
        self._update_counters(snap)

    def _show_queue(self, q: str, now: float) -> None:
        """Step 4: one queue's table and title from ``_snap`` (running, waiting, recent)."""
        qv = self._snap.queues.get(q)
        if qv is None:
            return
        jobs = (*qv.running, *qv.waiting, *reversed(qv.recent))
        cache = self._job_rows.setdefault(q, {})
        fresh, jrows = {}, []
        for j in jobs:
            c = cache.get(j.id)
            if c is None or c[0] is not j:
                c = (j, job_row(j))
            fresh[j.id] = c
            jrows.append(c[1])
        self._job_rows[q] = fresh
        self._syncing = True     # rows moving under the current row are not a user's pick
        try:
            self.queue_models[q].set_rows(jrows, [j.id for j in jobs], now)
        finally:
            self._syncing = False
        n = qv.counts
        more = ""
        if n["waiting"] > len(qv.waiting) or n["running"] > len(qv.running):
            more = f" (first {len(qv.waiting)} shown)"
        tail = "".join(f" · {n[k]} {k}" for k in ("failed", "cancelled") if n[k])
        self.queue_titles[q].set_parts([
            ("■ ", theme.QUEUE_COLORS.get(q, theme.FG), False),
            (QUEUE_LABELS.get(q, q).capitalize(), None, True),
            (f" {n['running']} running · {n['waiting']} waiting{more} · {n['succeeded']} ok{tail}",
             theme.MUTED, False)])
        self._sync_selection()

    def _update_counters(self, snap) -> None:
        if self.replaying:
            self._update_replay_counters(snap)
            return
        if self.follower is not None:
            self._update_store_counters(snap)
            return
        n = snap.counts
        ck = self.checker
        bad = theme.REF_LONG
        ok = theme.OK_TEXT
        m = ck.max_active
        viol = len(ck.violations)

        figures = [
            ("max runs at once per workspace", m, bad if m > 1 else ok),
            ("invariants", "held" if not viol else f"{viol} broken", ok if not viol else bad),
            ("stale releases", n.stale_releases, bad if n.stale_releases else None),
            ("writes refused", n.stale_writes, bad if n.stale_writes else None),
            ("failed saves", n.failed_saves, bad if n.failed_saves else None),
            *((("unsaved finals", n.unsaved_finals, bad),) if n.unsaved_finals else ()),
            *((("availability errors", n.available_errors, bad),) if n.available_errors else ()),
            ("holds", len(snap.holds), theme.HELD_SAVE if snap.holds else None),
            ("jobs", f"{n.jobs_finished}/{n.jobs_submitted}", None),
        ]
        parts = figure_parts(figures, theme.MUTED, " · ")
        if tuple(parts) != self.counters.parts:
            self.counters.set_parts(parts)
            self.counters.setToolTip("\n".join(ck.violations[:10]) or
                                     "max runs at once: the most runs of one workspace seen at the "
                                     "same time since the window opened (InvariantChecker)")

    def _update_replay_counters(self, snap) -> None:
        """The top line in a replay: the recording's own figures at the position shown."""
        n = snap.counts
        bad = theme.REF_LONG
        figures = [
            ("stale releases", n.stale_releases, bad if n.stale_releases else None),
            ("writes refused", n.stale_writes, bad if n.stale_writes else None),
            ("failed saves", n.failed_saves, bad if n.failed_saves else None),
            ("holds", len(snap.holds), theme.HELD_SAVE if snap.holds else None),
            ("jobs", f"{n.jobs_finished}/{n.jobs_submitted}", None),
        ]
        self.counters.set_parts([("REPLAY  ", theme.REPLAY_CURSOR, True),
                                 *figure_parts(figures, theme.MUTED, " · ")])
        self.counters.setToolTip("a recording, at the replay's position (the window's own scheduler "
                                 "runs on underneath)")

    def _show_no_lanes(self) -> None:
        """A replay of a recording without lanes: empty tables and a line that says so."""
        self._snap = None
        self.lanes_model.set_rows([], [], 0.0)
        for m in self.queue_models.values():
            m.set_rows([], [], 0.0)
        self.counters.set_parts([("REPLAY", theme.REPLAY_CURSOR, True),
                                 ("  ·  this recording has no lanes and queues", theme.MUTED, False)])

    # --- replay mode --------------------------------------------------------------------------------
    def show_replay(self, snapshot) -> None:
        """Draw ``snapshot`` (a ``lanemon.lanes.snapshot.Snapshot`` rebuilt from a recording;
        None: the recording has no lanes) instead of the live lanes; the first call enters
        replay mode (see the module docstring)."""
        if not self.replaying:
            self.replaying = True
            self._lane_rows.clear()
            self._job_rows.clear()
            self._snap = None
            self.controls.setVisible(False)     # (its fields are the live ones, not the recording's)
            self.source_picker.setEnabled(False)
            self.ledger_box.setVisible(False)
        self._replayed = snapshot
        self.request_refresh()

    def end_replay(self) -> None:
        """Leave replay mode: the live lanes (this window's scheduler or the store followed)."""
        if not self.replaying:
            return
        self.replaying = False
        self._replayed = None
        self.controls.setVisible(True)
        self.source_picker.setEnabled(True)
        self._switched(store=self.follower is not None)

    def _update_store_counters(self, snap) -> None:
        """The top line in store mode: whom it follows (or that the store is lost), the
        agents, the most runs of one workspace at once, the overlaps, the ledger's count."""
        f = self.follower
        bad, ok, muted = theme.REF_LONG, theme.OK_TEXT, theme.MUTED
        n = snap.counts
        m = snap.max_at_once
        state = ("following", f"{f.url.engine} store", ok) if f.connected else \
            ("store lost", f"{f.problem or 'not connected'} · trying again", bad)
        figures = [
            (state[0], state[1], state[2]),
            ("agents", len(snap.agents), None),
            ("max runs at once per workspace", m, bad if m > 1 else ok),
            ("overlapping runs", snap.overlaps, theme.OVERLAP_RUN if snap.overlaps else ok),
            ("refused writes (ledger)", n.stale_writes, bad if n.stale_writes else None),
            ("lanes held", len(snap.scheduled), None),
            ("jobs", f"{n.jobs_finished}/{n.jobs_submitted}", None),
        ]
        parts = figure_parts(figures, muted, " · ")
        if tuple(parts) != self.counters.parts:
            self.counters.set_parts(parts)
            self.counters.setToolTip(f"store: {f.url.redacted()}\n"
                                     "agents: " + (", ".join(snap.agents) or "none") + "\n"
                                     "overlapping runs: runs of one workspace that ran at the same time "
                                     "as another (kept runs; none with store lanes)")

    def _show_ledger(self, now: float) -> None:
        """Store mode's extra step: the refused-write ledger (newest first) and its title."""
        follower = self.follower
        if follower is None:                # (the source changed under this refresh)
            return
        view = follower.ledger()
        if view is self._ledger_shown:
            return
        self._ledger_shown = view
        rows = list(view.rows[:LEDGER_ROWS])
        self.ledger_model.set_rows(rows, [e.id for e in rows], now)
        writers = " · ".join(f"{w} {k}" for w, k in view.by_writer[:4])
        self.ledger_title.set_parts([
            ("Refused writes", None, True),
            (f" {view.total} in the ledger" + (f" · {writers}" if writers else "")
             + " · the store's fence refused them (epoch held is not the lane's)", theme.MUTED, False)])

    # --- the source: this window's scheduler or a followed store ------------------------------------
    def choose_source(self, url: str) -> asyncio.Task | None:
        """The picker asked for ``url`` (``""``: this window's simulation)."""
        if not url:
            return self._spawn(self.use_window())
        if self.follower is not None and url == self.follower.url.text:
            return None
        return self._spawn(self.follow(url))

    async def follow(self, url: str) -> bool:
        """Follow the store ``url``: True once following; False (said beside the picker) when
        the URL is refused or the store cannot be read -- the tab keeps its source."""
        from lanemon.store.url import StoreError

        picker = self.source_picker
        picker.say("opening…")
        # the follower's first import, its first read of the store (a SQLite store's, whole, at
        # once) and the tab drawn anew run on the loop: named on the chart, not an unlabelled spike
        with self.own_stall("following a store"):
            try:
                from lanemon.agents.follow import Follower

                follower = Follower(url, on_change=self.mark_dirty)
                await follower.connect()
            except StoreError as exc:
                picker.say(f"Not followed: {exc}", error=True)
                return False
            await self._stop_following()
            self.follower = follower
            self._follow_task = self.spawn(follower.run())
            picker.set_source(url)
            picker.say(f"Following {follower.url.redacted()}: agents' lanes, queues and runs, from its change feed.")
            self._switched(store=True)
        return True

    async def use_window(self) -> None:
        """Back to this window's own scheduler."""
        await self._stop_following()
        self.source_picker.set_source(None)
        self.source_picker.say("This window's own simulation.")
        self._switched(store=False)

    async def _stop_following(self) -> None:
        task, self._follow_task = self._follow_task, None
        follower, self.follower = self.follower, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if follower is not None:
            await follower.close()

    def _switched(self, store: bool) -> None:
        """Everything drawn again from the new source; the controls that act on this window's
        scheduler are enabled only without a store."""
        self._lane_rows.clear()
        self._job_rows.clear()
        self._snap = None
        self._ledger_shown = None
        self.ledger_box.setVisible(store)
        self.timeline.set_store_mode(store)
        if not store:
            self.ledger_model.set_rows([], [], 0.0)
        c = self.controls
        for w in (c.cancel_button, c.hold_button, c.release_button, c.fail_button, c.stop_button,
                  c.busy_button, c.reset_button, c.job_box, c.placement_box):
            w.setEnabled(not store)
        if not store:   # placement is for CPU work only (as the controls set it)
            c.placement_box.setEnabled(c.kind_box.currentText() == "CPU")
        c.say("Store mode: Add and Burst submit jobs to the store (its agents take them); the other "
              "controls act on this window's own simulation." if store else "")
        self.request_refresh()

    # --- selection <-> the chosen job / workspace -------------------------------------------------
    def _sync_selection(self) -> None:
        jid = self.controls.job_box.value()
        self._syncing = True
        try:
            for q, t in self.queue_tables.items():
                row = self.queue_models[q].row_of(jid) if jid else -1
                sel = t.selectionModel()
                if row >= 0:
                    if t.currentIndex().row() != row or not sel.hasSelection():
                        t.selectRow(row)
                elif sel.hasSelection():
                    t.clearSelection()
                    sel.clearCurrentIndex()
        finally:
            self._syncing = False

    def _job_row_chosen(self, queue: str, row: int) -> None:
        if self._syncing or row < 0:
            return
        jid = self.queue_models[queue].job_id(row)
        if jid is not None:
            self.controls.set_job(jid)
            self.controls.set_workspace(self.queue_models[queue].row_data(row).workspace)

    def _lane_row_chosen(self, cur, _prev) -> None:
        if self._syncing:
            return
        ws = self.lanes_model.workspace(cur.row())
        if ws is not None:
            self.controls.set_workspace(ws)
            owner = self.lanes_model.row_data(cur.row())
            if owner.job_id is not None:
                self.controls.set_job(owner.job_id)

    def _sync_busy_button(self) -> None:
        b = self.controls.busy_button
        ws = self.controls.workspace_box.currentText().strip()
        if self.follower is not None:
            busy = bool(ws) and self._snap is not None and bool(self._snap.occupancy.get(ws))
        else:
            busy = bool(ws) and self.scheduler.occupancy.is_busy(ws)
        if b.isChecked() != busy:
            b.setChecked(busy)
        if b.text() != busy_text(busy):
            b.setText(busy_text(busy))

    # --- controls -> domain calls -----------------------------------------------------------------
    def _say(self, text: str, error: bool = False) -> None:
        self.controls.say(text, error)

    def _spawn(self, coro, done=None) -> asyncio.Task | None:
        """Run a domain coroutine as a task of the view; its outcome or error is said."""
        def said(t: asyncio.Task) -> None:
            if t.cancelled():
                return
            exc = t.exception()
            if exc is not None:
                self._say(f"Error: {type(exc).__name__}: {exc}", error=True)
            elif done is not None:
                done(t.result())

        task = self.spawn(coro, said)
        if task is None:
            self._say("The window is closing.", error=True)
        return task

    def _checked(self, *getters):
        try:
            return [g() for g in getters]
        except ValueError as exc:
            self._say(str(exc), error=True)
            return None

    def add_job(self) -> asyncio.Task | None:
        c = self.controls
        got = self._checked(c.workspace, c.work)
        if got is None:
            return None
        ws, work = got
        q = c.queue()
        if self.follower is not None:
            return self._spawn(self.follower.submit([_spec(ws, q, work)]),
                               lambda ids: self._say(f"Job #{ids[0]} ({work.describe()}) submitted to the store "
                                                     f"in {QUEUE_LABELS.get(q, q)} for {ws}: an agent takes it."))
        return self._spawn(self.scheduler.submit(q, ws, work),
                           lambda jid: self._say(f"Job #{jid} ({work.describe()}) queued in "
                                                 f"{QUEUE_LABELS.get(q, q)} for {ws}."))

    def add_burst(self) -> asyncio.Task | None:
        """Submit N jobs over ws-01 … ws-M **in chunks**: at most ``BURST_CHUNK`` jobs and
        about ``BURST_BUDGET_S`` per loop turn, then the loop's due timers (the frame, the
        heartbeat) run before the next chunk; the notice shows the progress. The chunk
        adapts to the time measured between chunks (the loop's pass, where the tasks the
        chunk started take their first steps): over ``BURST_AWAY_S`` it halves (to
        ``BURST_MIN_CHUNK`` at least), else it grows by a quarter up to ``BURST_CHUNK``.

        A chunk never takes the scheduler's live jobs (this burst's and any other) over
        ``BURST_LIVE_MAX``: past it the burst waits for jobs to end
        (``Scheduler.wait_live_below``, no polling) and says so. The memory a burst
        takes is that of ``BURST_LIVE_MAX`` live jobs, not of all N; the allocator's
        arenas a 99,999-job peak took stayed with the process after a Reset (README
        "Hours of use"). Clicking Burst while a burst is under way stops it: the jobs
        queued so far stay."""
        if self._burst is not None and not self._burst.done():
            self._burst.cancel()
            return None
        c = self.controls
        got = self._checked(c.work)
        if got is None:
            return None
        work = got[0]
        wss = c.burst_workspaces()
        q = c.queue()
        if self.follower is not None:
            self._burst = self._spawn(
                self.follower.submit([_spec(ws, q, work) for ws in wss]),
                lambda ids: self._say(f"Burst: {len(ids):,} jobs (#{ids[0]}–#{ids[-1]}) submitted to the store "
                                      f"over {wss.distinct:,} workspaces in {QUEUE_LABELS.get(q, q)}."))
            return self._burst
        self._burst = self._spawn(
            self._burst_in_chunks(q, wss, work),
            lambda ids: self._say(f"Burst: {len(ids):,} jobs (#{ids[0]}–#{ids[-1]}) over "
                                  f"{wss.distinct:,} workspaces in {QUEUE_LABELS.get(q, q)}."))
        return self._burst

    async def _burst_in_chunks(self, q: str, wss: Sequence[str], work) -> array:
        """The burst's job IDs, in order, as an ``array("q")``: one buffer, not 99,999 int
        objects kept alive by the task's result amid the jobs' objects (each would keep its
        allocator's arena from going back to the system after a Reset)."""
        chunks = self.burst_chunks = []
        ids = array("q")
        n = len(wss)
        submit = self.scheduler.submit
        clock = time.perf_counter
        sched = self.scheduler
        if n >= gc_pace.LIVE_MIN and (self.pacer is None or not self.pacer.active):
            # what the burst's jobs make while they run (history, records) stays out of the
            # collector's full passes too, until the jobs drain (README "Hours of use")
            self.pacer = gc_pace.paced(lambda: sched.live_jobs)
        try:
            # what a burst makes lives for seconds: frozen chunk by chunk, out of the collector's
            # full passes (each walked it all with the loop stopped: 130-190 ms at 99,999 jobs)
            size = BURST_CHUNK
            with gc_pace.bulk() as bulk:
                while len(ids) < n:
                    want = min(size, n - len(ids), BURST_LIVE_MAX)
                    if sched.live_jobs + want > BURST_LIVE_MAX:
                        self._say(f"Burst: {len(ids):,} of {n:,} jobs queued; the rest go in as jobs "
                                  f"end (at most {BURST_LIVE_MAX:,} live at once)… (Burst again stops it)")
                        await sched.wait_live_below(BURST_LIVE_MAX - want + 1)
                    t0 = clock()
                    end = min(n, len(ids) + size, len(ids) + BURST_LIVE_MAX - sched.live_jobs)
                    done = len(ids)
                    while len(ids) < end:
                        ids.append(await submit(q, wss[len(ids)], work))
                        if clock() - t0 > BURST_BUDGET_S:
                            break
                    chunks.append(len(ids) - done)
                    bulk.chunk_done()
                    if len(ids) < n:
                        self._say(f"Burst: {len(ids):,} of {n:,} jobs queued… (Burst again stops it)")
                        t_away = clock()
                        await yield_to_timers()
                        if clock() - t_away > BURST_AWAY_S:
                            size = max(BURST_MIN_CHUNK, size // 2)
                        else:
                            size = min(BURST_CHUNK, size + size // 4 + 1)
        except asyncio.CancelledError:
            self._say(f"Burst stopped: {len(ids):,} of {n:,} jobs queued (they stay queued).",
                      error=True)
            raise
        return ids

    def reset(self) -> asyncio.Task | None:
        """Reset (the button): a burst under way stops, then ``Scheduler.reset()`` ends every
        job (waiting ones cancelled, running ones stopped) and forgets the finished ones; the
        tab shows the empty state (its rows, the timeline's bars and held saves go with the
        scheduler's ``reset`` event) and the freed heap goes back to the system
        (every laid-out text cache emptied: ``static_texts.forget_all``;
        ``lanemon.heap.drop_caches``, ``lanemon.heap.trim``). Refused (said under the
        controls): while following a store (Reset acts on this window's own scheduler) and
        while a reset is under way."""
        if self.follower is not None:
            self._say("Reset acts on this window's own simulation: back to it first.", error=True)
            return None
        if self.scheduler.resetting or (self._resetting is not None and not self._resetting.done()):
            self._say("A reset is already under way.", error=True)
            return None
        live = self.scheduler.live_jobs
        self._say(f"Resetting: ending {live:,} live job{'s' * (live != 1)}…" if live else "Resetting…")
        self._resetting = self._spawn(
            self._reset(),
            lambda n: self._say(f"Reset: {n:,} live job{'s' * (n != 1)} ended, the finished ones "
                                "forgotten; the tab starts empty."))
        return self._resetting

    async def _reset(self) -> int:
        burst, self._burst = self._burst, None
        if burst is not None and not burst.done():
            burst.cancel()
            await asyncio.gather(burst, return_exceptions=True)
        n = await self.scheduler.reset("reset from the window")
        if self.pacer is not None:       # (no job is live: it would end itself at its next step)
            self.pacer.close()
            self.pacer = None
        self.burst_chunks = []
        static_texts.forget_all()        # (the texts laid out during the burst: its arenas)
        heap.drop_caches()               # (the source text of modules imported since start-up)
        heap.trim()
        self.request_refresh()
        return n

    def _forget_shown(self) -> None:
        """The scheduler was reset: drop the rows made from its views and the last snapshot
        (the next refresh draws the empty state)."""
        self._lane_rows.clear()
        self._job_rows.clear()
        for t in (self.lanes_table, *self.queue_tables.values()):
            t.itemDelegate().clear()     # the cells' laid-out texts (job numbers, workspaces)
        if not self.replaying:
            self._snap = None
        self.request_refresh()

    def cancel_job(self) -> asyncio.Task | None:
        got = self._checked(self.controls.job_id)
        if got is None:
            return None
        jid = got[0]
        words = {"cancelled": "cancelled: it will not run",
                 "stop_requested": "running: a stop was requested through its lane",
                 "finished": "already finished: nothing to cancel",
                 "elsewhere": "another process's job on this store: cancel it there",
                 "unknown": "no such job"}

        def said(outcome: str) -> None:
            self._say(f"Job #{jid}: {words.get(outcome, outcome)}.",
                      error=outcome in ("unknown", "finished", "elsewhere") or outcome.startswith("failed"))

        return self._spawn(self.scheduler.cancel(jid), said)

    def _live_job(self, jid: int):
        job = self.scheduler.job(jid)
        if job is None:
            self._say(f"No job #{jid} (it may have left the recent list).", error=True)
            return None
        if job.phase == "done":
            self._say(f"Job #{jid} already finished ({job.state}): its final save is behind it.",
                      error=True)
            return None
        return job

    def hold_save(self) -> None:
        """Hold the picked job's final save: **one hold per job** from the window; a second
        click while that hold is active says so and adds none (one Release lets it go)."""
        got = self._checked(self.controls.job_id)
        if got is None or self._live_job(got[0]) is None:
            return
        jid = got[0]
        if self.scheduler.holds_for(jid):
            self._say(f"Job #{jid}'s final save is already held (one hold per job): Release "
                      f"(Alt+E) lets it go.", error=True)
            return
        self.scheduler.hold_save(id=jid, terminal=True)
        self.request_refresh()
        self._say(f"Holding job #{jid}'s final save: when it ends, its workspace stays claimed "
                  f"until you release it (Alt+E).")

    def release_save(self) -> None:
        """Release every hold on the picked job, holding its save or still armed (none
        picked: every hold); the count said is the count released."""
        jid = self.controls.job_box.value()
        n = self.scheduler.release_holds(jid or None, armed=bool(jid))
        self.request_refresh()
        if n:
            self._say(f"Released {n} hold{'s' * (n != 1)}"
                      + (f" on job #{jid}: its final save goes on." if jid else " (every hold)."))
        else:
            self._say(f"No hold on job #{jid}." if jid else "No hold to release.", error=True)

    def fail_next_save(self) -> None:
        got = self._checked(self.controls.job_id)
        if got is None or self._live_job(got[0]) is None:
            return
        jid = got[0]
        self.scheduler.fail_next_save(id=jid, error="injected save failure (from the window)")
        self.request_refresh()
        self._say(f"The next save of job #{jid} will fail: the job ends failed, its lanes are "
                  f"still released.")

    def request_stop(self) -> None:
        got = self._checked(self.controls.workspace)
        if got is None:
            return
        ws = got[0]
        if self.scheduler.request_stop(ws, "stop from the window"):
            self._say(f"Stop requested in {ws}: the owner stops at its next checkpoint.")
        else:
            self._say(f"Nothing runs in {ws}: no stop to request.", error=True)

    def toggle_busy(self) -> None:
        got = self._checked(self.controls.workspace)
        if got is None:
            self._sync_busy_button()
            return
        ws = got[0]
        self._set_busy(ws, not self.scheduler.occupancy.is_busy(ws))

    def yield_space_while(self, predicate: Callable[[], object]) -> None:
        """While ``predicate()`` is true, Space in the workspaces table is not the table's
        (it toggles no busy; a window shortcut gets it); otherwise the table claims it."""
        self.lanes_table.space_yielded = predicate

    def _toggle_busy_row(self, row: int) -> None:
        r = self.lanes_model.row_data(row)
        self._set_busy(r.workspace, not r.busy)

    def _set_busy(self, ws: str, busy: bool) -> None:
        if self.follower is not None:
            self._say("Busy outside acts on this window's own simulation: back to it first.", error=True)
            return
        if busy:
            self.scheduler.mark_busy(ws, "outside")
            self._say(f"{ws} is busy outside: none of its jobs starts until it is cleared.")
        else:
            self.scheduler.clear_busy(ws, "outside")
            self._say(f"{ws} is free again: its next job may start.")
        self._sync_busy_button()


class _LaneRows(Sequence):
    """The workspaces table's rows of one snapshot, each made when asked for (and kept in
    ``cache``, ws -> (lane, busy, spans, row, holder), while its parts are the same
    objects: an unchanged workspace's row is the same object from snapshot to snapshot,
    which is what the model compares)."""

    __slots__ = ("_snap", "_cache", "_owners")

    def __init__(self, snap, cache: dict) -> None:
        self._snap = snap
        self._cache = cache
        self._owners: dict | None = None

    def __len__(self) -> int:
        return len(self._snap.workspaces)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        snap = self._snap
        ws = snap.workspaces[i]
        owners = self._owners
        if owners is None:
            sched = snap.scheduled
            owners = self._owners = dict(zip(map(_workspace_of, sched), sched))
        lane = owners.get(ws)
        spans = snap.history.get(ws)
        busy = snap.occupancy.get(ws, ())
        holder = snap.holders.get(ws)
        cache = self._cache
        c = cache.get(ws)
        if c is not None and c[0] is lane and c[1] is busy and c[2] is spans and c[4] == holder:
            return c[3]
        last = spans[-1] if spans else None
        if lane is not None:
            owner = parse_owner(lane.owner)
            row = LaneRow(ws, owner.queue, owner.job_id, lane.epoch, lane.claimed_at, lane.stop_reason,
                          lane.stop_requested,
                          f"#{last.job_id} {last.state}" if last else "",
                          last.state if last else None, busy,
                          holder.agent if holder else None, holder.lease_until if holder else None)
        else:
            row = LaneRow(ws, None, None, None, None, None, False,
                          f"#{last.job_id} {last.state}" if last else "",
                          last.state if last else None, busy)
        cache[ws] = (lane, busy, spans, row, holder)
        return row


_workspace_of = attrgetter("workspace")


def _spec(ws: str, queue: str, work):
    """The store's job for the controls' work: simulated seconds (and failure) or CPU ms."""
    from lanemon.store.sql.backend import JobSpec

    if isinstance(work, CpuWork):
        return JobSpec(workspace=ws, queue=queue, cpu_ms=work.cpu_ms)
    return JobSpec(workspace=ws, queue=queue, seconds=work.duration, fail=bool(work.fail))


def install_lanes_view(window, scheduler: Scheduler | None = None) -> LanesView:
    """Create the scheduler (``WINDOW_BOUNDS``) and the view; add the tab (the window shuts the
    view down when it closes)."""
    view = LanesView(scheduler or Scheduler(clock=time.monotonic, **WINDOW_BOUNDS))
    window.add_view("lanes", "La&nes && queues", view)

    def talk_loaded() -> bool:   # (read at the key: the window may add its talk player later)
        player = getattr(window, "talk_player", None)
        return player is not None and player.loaded

    view.yield_space_while(talk_loaded)   # a loaded talk's Space is "next step", here too
    return view
