"""The per-workspace timeline: one row per workspace, one bar per run.

Each row is a workspace; each bar is one run (lanes claimed -> released),
coloured by queue. Because the two queues share one lane per workspace, bars
in one row never overlap: "never two runs of one workspace at once" is what
you see. A job whose final save is held shows a hatched red tail, kept after
its release; failed runs are crossed, cancelled ones dotted; waiting jobs show
as a thin grey line under their row.

A followed store (``lanemon.agents.follow``) adds what one window cannot have:
runs still going on in other processes (``snap.running``, drawn to "now"),
each bar labelled with the process that ran it (``RunSpan.owner``: at most
``MAX_LABELS`` labels, the newest bar of each row first), and runs of one
workspace that overlapped another drawn in ``theme.OVERLAP_RUN`` over their
queue's colour (``RunSpan.overlap``): with store lanes there are none.

Cheap by construction: a fixed handful of single-colour ``chart_items.Bars``
(reservations, cafe, held saves, waiting, failed and cancelled marks), each drawn with one ``drawRects``,
bounds computed once per rebuild (not in Python on every repaint); 1-pixel
pen, no antialiasing; the axes are painted from cached pixmaps. Only the last ``window_s`` seconds are shown,
and at most ``MAX_ROWS`` rows (fewer when the plot is short): the workspaces
with the most recent activity, sorted by name. The title says how many of
all workspaces are shown. A row's label is its workspace name elided to
``ROW_LABEL_CHARS`` characters (``row_label``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPen
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from lanemon.lanes import parse_owner
from lanemon.ui.kit import theme
from lanemon.ui.kit.chart_items import Bars, BoundedItem, Label, cosmetic_pen, live_plot
from lanemon.ui.kit.live_label import LiveLabel
from lanemon.ui.kit.qt_start import pg

MAX_ROWS = 30
MIN_ROW_PX = 15          # a row is at least this tall (scaled by the font scale)
BAR = 0.72               # bar height, in rows
WAIT = 0.16              # waiting line height, in rows

ROW_LABEL_CHARS = 12     # a row's label: longer workspace names are elided to this many characters
MAX_LABELS = 40          # owner labels on bars (a followed store), at most

pg.setConfigOptions(antialias=False)


def row_label(ws: str) -> str:
    """A row's label: the workspace name, elided in the middle beyond ``ROW_LABEL_CHARS``
    characters, so that a long name never takes over the timeline (the tables show it whole)."""
    if len(ws) <= ROW_LABEL_CHARS:
        return ws
    head = (ROW_LABEL_CHARS - 1) // 2 + (ROW_LABEL_CHARS - 1) % 2
    return f"{ws[:head]}…{ws[len(ws) - (ROW_LABEL_CHARS - 1 - head):]}"


def _bar_style(color: str, pattern=None) -> tuple[QBrush, QPen]:
    b = QBrush(QColor(color)) if pattern is None else QBrush(QColor(color), pattern)
    return b, cosmetic_pen(QColor(color).darker(130))


def _bar_colors() -> dict[str, tuple]:
    """item name -> (colour, brush pattern) in the current palette: the queues, then held
    saves (hatched), then waiting jobs, then the marks over failed (crossed, the failed
    state's colour) and cancelled (dotted, the cancelled state's text colour) runs."""
    return {**{q: (c, None) for q, c in theme.QUEUE_COLORS.items()},
            "overlap": (theme.OVERLAP_RUN, None),
            "held": (theme.HELD_SAVE, Qt.BrushStyle.BDiagPattern), "waiting": (theme.WAITING_JOB, None),
            "failed": (theme.JOB_STATE_COLORS["failed"][1], Qt.BrushStyle.CrossPattern),
            "cancelled": (theme.JOB_STATE_COLORS["cancelled"][0], Qt.BrushStyle.Dense5Pattern)}


class _LabelsParent(BoundedItem):
    """Paints nothing: the owner labels are its children, so one move scrolls them all."""

    def __init__(self) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents, True)

    def paint(self, painter, _option, _widget=None) -> None:
        return None


class _Rects:
    __slots__ = ("x0", "x1", "y0", "y1")

    def __init__(self) -> None:
        self.x0: list[float] = []
        self.x1: list[float] = []
        self.y0: list[float] = []
        self.y1: list[float] = []

    def add(self, x0: float, x1: float, y0: float, y1: float) -> None:
        self.x0.append(x0)
        self.x1.append(x1)
        self.y0.append(y0)
        self.y1.append(y1)

    def apply(self, item: Bars) -> None:
        if not self.x0:
            item.setVisible(False)
            return
        item.set_rects(self.x0, self.x1, self.y0, self.y1)
        item.setVisible(True)


class LanesTimeline(QWidget):
    def __init__(self, window_s: float = 20.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.window_s = float(window_s)
        self.rows: tuple[str, ...] = ()
        self.row_labels: tuple[str, ...] = ()   # the rows' labels on the left axis
        self.counts: dict[str, int] = {}         # item name -> rectangles it drew (``draw``)
        self._origin = 0.0
        self._shift_px = 0       # whole pixels the bars were moved left since ``draw``
        self.total_workspaces = 0
        self.title = LiveLabel("Timeline")
        self.plot = live_plot("seconds ago")
        item = self.plot.getPlotItem()
        item.showGrid(x=False, y=False)   # a grid costs more to paint than the bars
        item.getViewBox().invertY(True)
        self.plot.setXRange(-self.window_s, 0, padding=0)
        self.plot.setYRange(-0.5, 0.5, padding=0)
        item.getAxis("left").setTicks([[], []])   # no rows yet: no labels (not -0.4 … 0.4)
        self.items = {name: Bars(*_bar_style(*style)) for name, style in _bar_colors().items()}
        for z, it in enumerate(self.items.values()):
            it.setZValue(z)
            self.plot.addItem(it, ignoreBounds=True)
        # owner labels (a followed store) ride on one parent item that scrolls with the bars
        self._labels_parent = _LabelsParent()
        self._labels_parent.setZValue(len(self.items) + 1)
        self.plot.addItem(self._labels_parent, ignoreBounds=True)
        self._labels: list[Label] = []
        self.labels: tuple[str, ...] = ()     # the owner labels shown (``draw``)
        self.store_mode = False               # a followed store: the legend says "overlap"
        self.empty = pg.TextItem(f"no activity in the last {window_s:.0f} s — add a job (Alt+A)", color=theme.MUTED,
                                 anchor=(0.5, 0.5))
        self.empty.setPos(-self.window_s / 2, 0)
        self.plot.addItem(self.empty)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        self.apply_fonts()

    # --- fonts -----------------------------------------------------------------------------
    def apply_fonts(self) -> None:
        """Follow ``theme``: the font scale and the palette (background, axes, bars, texts)."""
        self._apply_colors()
        f = theme.style_axes(self.plot, self.font())
        self.empty.setFont(f)
        title = QFont(self.font())
        title.setPointSizeF(theme.pt(12))
        self.title.setFont(title)
        self._set_title()

    def _apply_colors(self) -> None:
        self.plot.setBackground(theme.BG)
        for name in ("left", "bottom"):       # as the heartbeat chart's axes
            ax = self.plot.getPlotItem().getAxis(name)
            ax.setPen(pg.mkPen(theme.MUTED if theme.is_dark() else theme.FG, width=1))
            ax.setTextPen(pg.mkPen(theme.FG))
            ax.label.setDefaultTextColor(QColor(theme.FG))
        for name, style in _bar_colors().items():
            self.items[name].set_style(*_bar_style(*style))
        self.empty.setColor(theme.MUTED)
        for lab in self._labels:   # made again in the new colours at the next draw
            scene = lab.scene()
            if scene is not None:
                scene.removeItem(lab)
        self._labels = []

    def _set_title(self) -> None:
        # the queues' colours are in the queue tables' titles (■ Reservations, ■ Cafe delivery)
        legend = (f"<span style='color:{theme.HELD_SAVE}'>▨</span>&nbsp;held"
                   f"&nbsp;&nbsp;<span style='color:{theme.JOB_STATE_COLORS['failed'][1]}'>▦</span>"
                   f"&nbsp;failed"
                   f"&nbsp;&nbsp;<span style='color:{theme.JOB_STATE_COLORS['cancelled'][0]}'>▒</span>"
                   f"&nbsp;cancelled"
                   f"&nbsp;&nbsp;<span style='color:{theme.WAITING_JOB}'>▁</span>&nbsp;waiting"
                   + (f"&nbsp;&nbsp;<span style='color:{theme.OVERLAP_RUN}'>■</span>&nbsp;overlap"
                      if self.store_mode else ""))
        self.plot.getPlotItem().getAxis("bottom").setLabel(legend)   # short: the plot is narrow
        shown = (f"{len(self.rows)} of {self.total_workspaces} workspaces (latest activity)"
                 if self.total_workspaces > len(self.rows) else
                 f"{len(self.rows)} workspace{'s' * (len(self.rows) != 1)}")
        self.title.set_parts([("Timeline", None, True),
                              (f" · s ago, last {self.window_s:.0f} s · {shown}", theme.MUTED, False)])

    def set_store_mode(self, on: bool) -> None:
        """A followed store is drawn (or no longer): the legend names the overlaps."""
        if on != self.store_mode:
            self.store_mode = on
            self._set_title()

    def max_rows(self) -> int:
        h = self.plot.getViewBox().height()
        if h <= 0:
            return MAX_ROWS
        return int(max(3, min(MAX_ROWS, h // (MIN_ROW_PX * theme.font_scale()))))

    # --- drawing ---------------------------------------------------------------------------
    def draw(self, snap, now: float, held_since: dict[int, float],
             held_spans: dict[int, tuple[float, float]] | None = None) -> bool:
        """Rebuild the bars from ``snap`` (seen at ``now``); True while anything is in view.

        Bars are placed relative to ``now`` (the origin); ``scroll(later)``
        then only moves the items left. Running bars, held saves and waiting
        lines reach far to the right: the view clips them at "now". A finished
        run keeps its story: the part its final save was held (``held_spans``:
        job id -> (held from, released at)) stays hatched, and a failed or
        cancelled run is marked over its queue's colour. ``counts`` says how
        many rectangles each item drew.
        """
        held_spans = held_spans or {}
        w = self.window_s
        horizon = now - w
        self._origin = now
        self._shift_px = 0
        max_rows = self.max_rows()
        sched = snap.scheduled
        waiting = [j for qv in snap.queues.values() for j in qv.waiting]
        going = snap.running
        if len(sched) >= max_rows:
            # as many held lanes as rows (a burst: thousands): the rows are the first held
            # lanes' workspaces, exactly what the sort below keeps (it is stable, held lanes
            # are scored first and highest, no finished run scores over now), without a
            # pass over every lane, running run and workspace's history, and a sort
            head = sched[:max_rows]
            running = {lane.workspace: lane for lane in head}
            chosen = list(running)
        else:
            score: dict[str, float] = {}
            running = {}
            for lane in sched:
                score[lane.workspace] = now + 1.0
                running[lane.workspace] = lane
            for j in waiting:
                if j.workspace not in score:
                    score[j.workspace] = now
            for ws in going:
                score[ws] = now + 1.0
            for ws, spans in snap.history.items():
                if spans and ws not in score:
                    end = spans[-1].ended_at
                    if end > horizon:
                        score[ws] = end
            chosen = sorted(score, key=score.__getitem__, reverse=True)[:max_rows]
        rows = tuple(sorted(chosen))
        self.total_workspaces = len(snap.workspaces)
        if rows != self.rows:
            self.rows = rows
            ax = self.plot.getPlotItem().getAxis("left")
            self.row_labels = tuple(row_label(ws) for ws in rows)
            ax.setTicks([list(enumerate(self.row_labels)), []])
            self.plot.setYRange(-0.5, max(0.5, len(rows) - 0.5), padding=0)
        self._set_title_if_changed()
        self.empty.setVisible(not rows)
        row_of = {ws: i for i, ws in enumerate(rows)}
        minw = w / 500.0        # a zero-time run stays visible as a sliver
        left = -2.0 * w         # nothing needs to start further left
        far = 100.0 * w         # "still going": clipped at the right edge
        rects = {k: _Rects() for k in self.items}
        marks = {"failed": rects["failed"], "cancelled": rects["cancelled"]}
        h = BAR / 2
        owners: list[tuple[float, float, float, str]] = []   # (end, x0, row, owner) of labelled bars
        overlap = rects["overlap"]
        for ws, i in row_of.items():
            for sp in (*snap.history.get(ws, ()), *going.get(ws, ())):
                if sp.ended_at <= horizon:
                    continue
                r = rects.get(sp.queue)
                if r is None:
                    continue
                x0 = max(sp.started_at - now, left)
                x1 = min(max(sp.ended_at - now, x0 + minw), far)
                r.add(x0, x1, i - h, i + h)
                if sp.overlap:
                    overlap.add(x0, x1, i - h * 0.55, i + h * 0.55)
                if sp.owner:
                    owners.append((sp.ended_at, x0, i, sp.owner))
                mark = marks.get(sp.state)
                if mark is not None:
                    mark.add(x0, x1, i - h, i + h)
                held = held_spans.get(sp.job_id)
                if held is not None:
                    hx0 = max(held[0] - now, left)
                    rects["held"].add(hx0, max(held[1] - now, hx0 + minw), i - h, i + h)
            lane = running.get(ws)
            if lane is not None:
                owner = parse_owner(lane.owner)
                jid = owner.job_id
                r = rects.get(owner.queue)
                if r is not None:
                    r.add(max(lane.claimed_at - now, left), far, i - h, i + h)
                t_held = held_since.get(jid)
                if t_held is not None:
                    rects["held"].add(max(t_held - now, left), far, i - h, i + h)
        wr = rects["waiting"]
        for j in waiting:
            i = row_of.get(j.workspace)
            if i is not None:
                wr.add(max(j.created_at - now, left), far, i + h, i + h + WAIT)
        for k, item in self.items.items():
            rects[k].apply(item)
            item.setPos(0.0, 0.0)
        self._place_labels(owners, -w)
        self._labels_parent.setPos(0.0, 0.0)
        self.counts = {k: len(r.x0) for k, r in rects.items()}
        return bool(rows)

    def _place_labels(self, owners: list[tuple[float, float, float, str]], left: float) -> None:
        """Label the bars of ``owners`` with their process, newest first, at most ``MAX_LABELS``
        (and one per row and process: a run after run of one agent is said once)."""
        chosen, seen = [], set()
        for _end, x0, row, owner in sorted(owners, reverse=True):
            if (row, owner) in seen:
                continue
            seen.add((row, owner))
            chosen.append((max(x0, left), row, owner))
            if len(chosen) == MAX_LABELS:
                break
        labels = self._labels
        while len(labels) < len(chosen):
            lab = Label("", color=theme.FG, fill=QColor(theme.BG), anchor=(0.0, 0.5))
            lab.setFont(self.font())
            lab.setParentItem(self._labels_parent)
            labels.append(lab)
        for lab, (x, row, owner) in zip(labels, chosen):
            lab.set_text(owner)
            lab.setPos(x, row)
            lab.setVisible(True)
        for lab in labels[len(chosen):]:
            lab.setVisible(False)
        self.labels = tuple(owner for _, _, owner in chosen)

    def scroll(self, now: float) -> bool:
        """Time passed since ``draw``: move the bars left (no bar is rebuilt).

        They move by whole pixels only: at 20 s over a few hundred pixels, time
        moves the bars less than a pixel per 33 ms tick, and a repaint that would
        show the same pixels is skipped. True when they moved."""
        vb = self.plot.getViewBox()
        px_per_s = vb.width() / self.window_s if vb.width() > 0 else 0.0
        if px_per_s <= 0:
            return False
        shift_px = int((now - self._origin) * px_per_s)
        if shift_px == self._shift_px:
            return False
        self._shift_px = shift_px
        dx = -shift_px / px_per_s
        for item in self.items.values():
            item.setPos(dx, 0.0)
        self._labels_parent.setPos(dx, 0.0)
        return True

    def _set_title_if_changed(self) -> None:
        key = (len(self.rows), self.total_workspaces)
        if getattr(self, "_title_key", None) != key:
            self._title_key = key
            self._set_title()
