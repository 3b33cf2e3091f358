"""The heartbeat chart's plot area: a plain widget painted from a scrolling backing image.

Time runs along x as "seconds ago", in pixel columns anchored to time
(column ``k`` holds ``k * dt <= t < (k + 1) * dt``, as ``column_max``): the
newest column ``k_now`` is the rightmost pixel, column ``k`` is at
``x = k - k_now + width - 1``. From one frame to the next the picture only
shifts by the columns that became new, so ``ScrollPlot`` keeps what it
painted in a ring of pixel columns (a ``QImage`` the plot's size; column
``k`` is the ring's ``k mod width``) and per frame paints into it only:

- the columns new in view,
- the columns from the held column before the first one whose maximum changed
  (the curve's last segment and its fill change with it),
- the columns where a shaded span (a run, a phase, an own stall) appeared,
  went, or moved an edge (a running run's right edge follows now).

Each painted column gets everything that scrolls, in this order: the
background, the spans of phases and own stalls, the horizontal grid, the
runs' spans, the fill and the curve (``lag_trace``: computed column by
column from the curve's points). Every column is painted the same way
whether one column or the whole ring is painted, and nothing is drawn outside
the columns painted (integer rectangles cut to them by hand: no clip, which
costs more), so the ring after any number of frames holds the same pixels
as a full repaint of the same state (``tests/test_ui_chart_scroll.py``). A
frame's few columns with no span in them are written straight into the
ring's pixels, with no painter: each pixel is the background-and-grid
column's, the same column under the fill (both painted once by Qt with the
fill's own calls), or the curve's opaque colour. The
whole ring is repainted only when the y scale, the size, the look (theme),
the columns' width (window) or the data's identity changes (``invalidate``).

What does not scroll is drawn over the ring on each paint: the vertical
"seconds ago" grid (fixed on screen, as the axis's ticks) and the dashed
reference lines (16.7 and 50 ms: fixed on screen too, so their dashes do not
crawl), both drawn once into an image over transparency and copied where
repainted (opaque colours: the same pixels as drawing the lines there), the labels
(texts on plates, from cached pixmaps; placed by the chart) and an optional overlay (the probed programs' lines).

On screen, most of the picture does not change as it shifts: above the
curve's highest point every column is the same background and grid, or the
same inside of a span. So a frame asks Qt to repaint only (``update_region``,
``last_repaint``):

- "skyline": the rows under the curve's highest point, before and now, in
  blocks of ``BLOCK`` columns anchored to time, whose tops are kept as columns
  are painted (a frame reads ~40 of them, not every column; a block's
  rectangle reaches from where its columns are to where they were), neighbours
  sharing a rectangle while that adds fewer than ``MERGE_PX`` pixels (a tall
  stall's ramp repaints about its own width, the low rest a few wide
  rectangles); the columns between where each span's edge was
  and is; where each moving label was and is (nothing for one that stayed
  where it was, showing the same). The rest keeps its pixels.
- "scroll", when that skyline would cover more than a quarter of the area (a
  tall stall's ramp in view): the screen's pixels are moved
  (``QWidget.scroll``) and only the columns painted into the ring this frame
  and what stays in place (vertical grid, reference lines, their labels,
  labels not moving with the picture) are repainted.
- "whole": after a full repaint of the ring, or while an overlay is drawn.

``show_frame`` paints the ring and works that out; ``present()`` asks Qt for it
(the scroll included). The chart calls them in two turns of the loop
(``kit.turns``), so a heartbeat tick due meanwhile waits for one of them, not
both and the paint after them.

The widget is opaque (``WA_OpaquePaintEvent``): repainting it repaints
nothing beneath, and it lies over the plot's ``QGraphicsView``, whose axes
are repainted only when they change.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np
from PySide6.QtCore import QLine, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QWidget

from lanemon.ui.heartbeat.lag_trace import SMALL, LagTrace, column_spans_list
from lanemon.ui.kit import theme

PAD = 3            # pixels of plate around a label's text
BLOCK = 32         # columns per block of the repainted skyline (merged into few rectangles: MERGE_PX)
MERGE_PX = 2048    # neighbouring blocks share a rectangle while that repaints fewer extra pixels
STRIP = 64         # columns of the background-and-grid image a frame's new columns are copied from
STEP = 8           # a block's top rounded up to this many rows (neighbours merge more often)
_WHOLE = object()   # a frame's plan (ScrollPlot.present): repaint all
_NO_PEN = Qt.PenStyle.NoPen   # (a PySide enum member read per paint is a Python-level lookup)


class Curve(Protocol):
    """What the plot area reads of the curve, only for the columns it paints: the held
    columns (a point each: the column's maximum lag, view coordinates)."""

    def around(self, a: int, b: int, lo: int, hi: int) -> tuple[list[int], list[float]]:
        """The held columns among ``lo..hi`` from the last one before ``a`` to the first one
        after ``b``, every held one between, and their maxima (ascending lists)."""

    def before(self, c: int, lo: int) -> int | None:
        """The last held column before ``c``, not before ``lo`` (``None``: none)."""


class SpanStyle:
    """How a span is shaded: a translucent ``fill``, its edges in ``edge``; ``under_grid``
    (phases and the window's own stalls) under the grid lines, else (runs) over them."""

    __slots__ = ("edge", "fill", "under_grid")

    def __init__(self, fill: QColor, edge: QColor, under_grid: bool) -> None:
        self.fill = QColor(fill)
        self.edge = QColor(edge)
        self.under_grid = bool(under_grid)

    def brush(self) -> QBrush:
        """The fill as a brush."""
        return QBrush(self.fill)


class Span:
    """A shaded stretch of time, ``t0`` to ``t1`` (absolute seconds, the chart's clock), at
    least ``min_s`` wide on screen. The chart keeps one per run, phase or own stall in view
    and moves its ends; restyling (``style``) keeps the object."""

    __slots__ = ("key", "min_s", "style", "t0", "t1")

    def __init__(self, key, style: SpanStyle, t0: float = 0.0, t1: float = 0.0, min_s: float = 0.0) -> None:
        self.key = key
        self.style = style
        self.t0 = float(t0)
        self.t1 = float(t1)
        self.min_s = float(min_s)


class PlateLabel:
    """Text (several lines allowed) on a plate, drawn from a pixmap made when its text, font or
    colours change. ``anchor`` is the corner at ``pos``: (0, 0) top left, (0, 1) bottom left.
    Positions and sizes are in the plot area's pixels."""

    def __init__(self, text: str = "", color=None, fill: QColor | None = None,
                 anchor: tuple[float, float] = (0.0, 0.0)) -> None:
        self._text = str(text)
        self._color = QColor(theme.FG if color is None else color)
        self._fill = QColor(fill) if fill is not None else None
        self._font = QFont()
        self._anchor = anchor
        self._pixmap: QPixmap | None = None
        self._size = self._measure()
        self._x = 0.0
        self._y = 0.0
        self._box = self._place()
        self._pixmap_version = 0
        self._visible = True

    def text(self) -> str:
        return self._text

    def set_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self._changed()

    def setFont(self, font: QFont) -> None:
        self._font = QFont(font)
        self._changed()

    def font(self) -> QFont:
        return QFont(self._font)

    def set_colors(self, color, fill: QColor | None = None) -> None:
        """The text in ``color``, the plate in ``fill`` (``None``: no plate)."""
        self._color = QColor(color)
        self._fill = QColor(fill) if fill is not None else None
        self._pixmap = None
        self._pixmap_version += 1

    def color(self) -> QColor:
        return QColor(self._color)

    def plate(self) -> QColor | None:
        """The plate's colour (``None``: no plate)."""
        return None if self._fill is None else QColor(self._fill)

    def size(self) -> tuple[float, float]:
        """Width and height in pixels, plate included."""
        return self._size

    def setPos(self, x: float, y: float) -> None:
        x, y = float(x), float(y)
        if x != self._x or y != self._y:
            self._x, self._y = x, y
            self._box = self._place()

    def pos(self) -> tuple[float, float]:
        """Where its anchor corner is (pixels of the plot area)."""
        return self._x, self._y

    def rect(self) -> QRect:
        """Where it is drawn (pixels of the plot area)."""
        return QRect(*self._box)

    def box(self) -> tuple[int, int, int, int]:
        """``rect()`` as a tuple ``(x, y, width, height)`` (kept: no Qt call to read it)."""
        return self._box

    def look(self) -> tuple:
        """Where it is and what it shows (its box and pixmap): equal from one frame to the
        next only if it needs no repaint."""
        return self._box, self._pixmap_version

    def _place(self) -> tuple[int, int, int, int]:
        w, h = self._size
        ax, ay = self._anchor
        return round(self._x - ax * w), round(self._y - ay * h), int(w), int(h)

    def isVisible(self) -> bool:
        return self._visible

    def setVisible(self, on: bool) -> None:
        self._visible = bool(on)

    def pixmap(self) -> QPixmap:
        if self._pixmap is None:
            w, h = self._size
            pm = QPixmap(max(1, int(w)), max(1, int(h)))
            pm.fill(self._fill if self._fill is not None else QColor(Qt.GlobalColor.transparent))
            p = QPainter(pm)
            p.setFont(self._font)
            p.setPen(self._color)
            p.drawText(QRect(PAD, PAD, int(w) - 2 * PAD, int(h) - 2 * PAD),
                       int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop), self._text)
            p.end()
            self._pixmap = pm
        return self._pixmap

    def _measure(self) -> tuple[float, float]:
        s = QFontMetrics(self._font).size(0, self._text) if self._text else QSize(0, 0)
        return float(s.width() + 2 * PAD), float(s.height() + 2 * PAD)

    def _changed(self) -> None:
        self._size = self._measure()
        self._box = self._place()
        self._pixmap = None
        self._pixmap_version += 1


class ScrollPlot(QWidget):
    """The plot area (see the module docstring). The chart gives it the columns' width
    (``set_columns``), the y range and grid (``set_scale``), the look (``set_look``), and per
    frame the curve, the spans and the labels (``show_frame``)."""

    resized = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self._ring: QImage | None = None
        self._ring_px: np.ndarray | None = None   # the ring's pixels (rows x columns, uint32), written in place
        self._ring_size = (0, 0)
        self._templates: tuple | None = None     # (strip, background column, filled column, pen) (_column_templates)
        #: the size in pixels as of the last resize event (what a frame reads: no Qt call)
        self.px_w, self.px_h = self.width(), self.height()
        self._column_image: QImage | None = None   # background and grid, STRIP columns (_strip)
        self._tops = array("i")              # per ring column: the highest row of the curve
        self._plain = array("b")             # ... 1: written by _write_piece (background above its top)
        self._plain_for: tuple | None = None  # the templates those columns were written with
        # per block of BLOCK columns anchored to time (absolute column // BLOCK): the highest row
        # of the curve in its columns in view; kept as columns are painted (see _note_tops)
        self._block_tops: dict[int, int] = {}
        self._block_low = 0                  # blocks before this one are gone from the dict
        self._sky: tuple | None = None       # (rounded tops, rectangles in blocks, scroll?) of _skyline
        self._sky_key: tuple | None = None   # (first block, last block, _block_version) it was made for
        self._block_version = 0              # counts changes of the blocks' rounded tops
        self._blocks_ok = False              # does _block_tops describe the ring (after a full paint)?
        self._painted_screen: list[tuple[int, int]] = []   # the screen columns painted this frame
        #: how the last frame's picture reached the screen: "whole", "skyline" or "scroll"
        self.last_repaint = ""
        self._dt = 1.0
        self._k: int | None = None           # the newest column shown (absolute)
        self._top, self._bottom = 60.0, 0.0  # the y range, view coordinates
        self._grid_views: list[float] = []   # horizontal grid lines, view coordinates
        self._ref_views: list[tuple[float, QColor]] = []
        self._grid_rows: list[int] = []
        self._ref_lines: list[tuple[QImage, int]] = []   # a reference line's row image, its row
        self._label_rects: list[tuple[PlateLabel, tuple]] = []   # the moving labels, as drawn last frame (look)
        self._overlay_seen = False           # was an overlay drawn last frame?
        self._asked: list | None = None      # what the last frame asked to repaint (update_region)
        # what the last frame has yet to ask Qt to repaint (present): None (nothing), _WHOLE,
        # (shift, rectangles) for a scroll, or a list of (x, y, width, height)
        self._plan: object = None
        self._paints = 0                     # paint events so far
        self._paints_at_frame = 0            # ... as of the last frame's show_frame
        self._vgrid_s: list[float] = []      # vertical grid lines, seconds ago
        self._vlines: list[int] = []         # the vertical grid lines' x
        self._vline_rects: list[QRect] = []  # ... as full-height one-pixel rectangles (Qt clips them)
        # the vertical grid and the reference lines, over transparency, the area's size
        # (_fixed_lines; made again when the size, scale or look changes)
        self._lines_image: QImage | None = None
        self._bg = QColor(theme.BG)          # (set_look sets the chart's)
        self._grid = QColor(theme.GRID)
        self._trace = LagTrace()             # paints the fill and curve of a piece, pixel coordinates
        self._curve: Curve | None = None      # the last frame's (show_frame)
        self._painted_spans: dict = {}       # key -> (first column, last column, style)
        self._labels: list[PlateLabel] = []
        self._fixed_labels: list[PlateLabel] = []
        self._full = True                    # the whole ring needs painting
        self.overlay: Callable[[QPainter], None] | None = None   # drawn over everything, each paint
        self._bare = False                   # paint the ring only (set_bare)
        #: pixel columns painted into the ring so far (what tests count; no timing)
        self.painted_columns = 0
        #: full repaints of the ring so far
        self.full_repaints = 0

    # --- what the chart sets --------------------------------------------------------
    def set_look(self, background: QColor, grid: QColor, pen: QColor, fill: QColor) -> None:
        """Colours: background, grid lines, the lag curve and the translucent fill under it."""
        self._bg, self._grid = QColor(background), QColor(grid)
        self._lines_image = None
        self._trace.setPen(QPen(QColor(pen), 0))
        self._trace.setBrush(QColor(fill))
        self.invalidate()

    def set_scale(self, bottom: float, top: float, grid: Iterable[float],
                  refs: Iterable[tuple[float, QColor]]) -> None:
        """The y range (view coordinates), the horizontal grid lines and the dashed reference
        lines (view coordinate, colour) at those heights."""
        self._bottom, self._top = float(bottom), float(top)
        self._grid_views = [float(v) for v in grid]
        self._ref_views = [(float(v), QColor(c)) for v, c in refs]
        self._rows()
        self.invalidate()

    def set_columns(self, dt: float) -> None:
        """Columns of ``dt`` seconds from now on (a new window or width): all is painted anew."""
        if dt != self._dt:
            self._dt = float(dt)
            self.invalidate()

    def set_fixed_labels(self, labels: list[PlateLabel]) -> None:
        """Labels that stay where they are as the picture scrolls (the reference lines'):
        the first ones of each frame's labels."""
        self._fixed_labels = list(labels)

    def set_time_grid(self, seconds_ago: Iterable[float]) -> None:
        """Vertical grid lines at these seconds ago (fixed on screen)."""
        self._vgrid_s = [float(s) for s in seconds_ago]
        self._vlines_now()
        self.update()

    def invalidate(self) -> None:
        """Paint the whole ring on the next frame (and the screen now)."""
        self._full = True
        self._column_image = None
        self.update()

    @property
    def update_region(self) -> list[QRect] | None:
        """The rectangles the last frame asked to repaint (tests; ``None``: none yet)."""
        if self._asked is None:
            return None
        return [r if isinstance(r, QRect) else QRect(*r) for r in self._asked]

    def set_bare(self, on: bool) -> None:
        """While ``on``, a paint copies the ring's pixels to what is repainted and draws nothing
        over them (no grid, reference lines, overlay or labels); frames go on as before. This
        is ``lanemon bench ui``'s floor for the chart's frame: what Qt itself takes to repaint
        the rectangles a frame asks for, with one image copy. Turning it off repaints all."""
        self._bare = bool(on)
        if not on:
            self.update()

    # --- geometry ----------------------------------------------------------------------
    @property
    def dt(self) -> float:
        return self._dt

    @property
    def newest_column(self) -> int | None:
        return self._k

    def x_of(self, t: float) -> float:
        """The pixel x of absolute time ``t`` (seconds), as of the last frame."""
        k = self._k if self._k is not None else 0
        return t / self._dt - k + self.px_w - 1

    def y_of(self, view):
        """The pixel y of a view coordinate (a number or a numpy array)."""
        return (self._top - view) * (self.px_h / max(1e-12, self._top - self._bottom))

    def labels(self) -> list[PlateLabel]:
        """The labels drawn now (visible ones)."""
        return [label for label in self._labels if label.isVisible()]

    def ring(self) -> QImage | None:
        """A copy of the ring in screen order (the newest column rightmost), what the
        paint shows under the vertical grid and the labels."""
        if self._ring is None or self._k is None:
            return None
        w, h = self._ring.width(), self._ring.height()
        off = (self._k - w + 1) % w
        out = QImage(w, h, self._ring.format())
        p = QPainter(out)
        p.drawImage(QPoint(0, 0), self._ring, QRect(off, 0, w - off, h))
        if off:
            p.drawImage(QPoint(w - off, 0), self._ring, QRect(0, 0, off, h))
        p.end()
        return out

    # --- a frame -----------------------------------------------------------------------
    def show_frame(self, k_now: int, curve: Curve, changed_from: int | None,
                   spans: Iterable[Span], labels: list[PlateLabel]) -> None:
        """Shift to ``k_now`` (the newest column shown), with the curve's held columns read
        from ``curve`` where they are painted (``Curve``; the columns shown are
        ``k_now - width .. k_now``), the first column whose maximum changed since the last
        frame (``None``: none did), the spans in view and the labels to draw (placed in
        pixels). Paints what changed into the ring (see the module docstring) and works out
        what to repaint on screen; ``present()`` asks Qt for it (the chart does so in the
        loop's next turn: ``kit.turns``)."""
        if self._plan is not None:
            self.present()                        # (the frame before: never lost)
        w, h = self.px_w, self.px_h
        self._labels = labels
        self._curve = curve
        if w < 2 or h < 2:
            self._k = k_now
            return
        if self._ring is None or self._ring_size != (w, h):
            self._ring = QImage(w, h, QImage.Format.Format_RGB32)
            self._ring_px = np.frombuffer(self._ring.bits(), np.uint32).reshape(h, self._ring.bytesPerLine() // 4)
            self._ring_size = (w, h)
            # per ring column: the highest row of the curve; C ints (a list kept an int object
            # per column, written at any time: they pinned a burst's memory after its Reset)
            self._tops = array("i", [h]) * w
            self._plain = array("b", [0]) * w     # per ring column: last written by _write_piece
            self._blocks_ok = False
            self._rows()
            self._vlines_now()
            self._full = True
        old_k = self._k
        old_spans = self._painted_spans
        self._k = k_now
        first = k_now - w + 1                     # the oldest column in view
        ranges: list[tuple[int, int]] = []
        full = self._full or old_k is None or k_now - old_k >= w or k_now < old_k
        if full:
            ranges.append((first, k_now))
            self.full_repaints += 1
            self._full = False
            self._block_tops = {}                 # found again from the columns painted
            self._block_low = first // BLOCK
            self._sky = None
            self._painted_spans = {sp.key: self._span_cols(sp) for sp in spans}
        else:
            if k_now > old_k:
                ranges.append((old_k + 1, k_now))
            if changed_from is not None:
                held = curve.before(changed_from, k_now - w)
                ranges.append((held if held is not None else first, k_now))
            ranges.extend(self._span_changes(spans))
        painted = self._paint_ranges(ranges, first, k_now)
        self._paints_at_frame = self._paints
        self._plan_repaint(old_spans, old_k, labels, full or painted >= w, painted > 0)
        self._blocks_ok = True

    def _plan_repaint(self, old_spans: dict, old_k: int | None,
                      labels: list[PlateLabel], full: bool, painted: bool) -> None:
        """Work out what to repaint of what changed on screen as the picture shifted (see the module
        docstring): all of it after a full repaint of the ring or with an overlay; else the
        band from the curve's highest point (this frame's or the last's) down, the columns
        between where each span's edge was and is, and where the moving labels were and are.
        The rest of the screen shows what it showed: uniform along x (background, grid, a
        span's inside), so the same after a shift.

        The band is worked out per block of ``BLOCK`` columns anchored to time
        (``_block_tops``: kept as columns are painted, so a frame reads ~40 numbers, not the
        ~1,200 columns): a block's top only rises while it is in view (a column's maximum only
        grows, the curve's last segment only gains height), so the block's rectangle from
        where its columns are now to where they were (``shift`` columns to the right) covers
        the rows its columns showed before and show now."""
        w, h = self.px_w, self.px_h
        k = self._k
        moving = [(label, label.look()) for label in labels[len(self._fixed_labels):] if label.isVisible()]
        before, self._label_rects = self._label_rects, moving
        overlay, self._overlay_seen = self._overlay_seen, self.overlay is not None
        if full or old_k is None or overlay or self._overlay_seen or not self._blocks_ok:
            self._forget_blocks(k - w + 1)
            self._asked = [(0, 0, w, h)]
            self.last_repaint = "whole"
            self._plan = _WHOLE
            return
        shift = k - old_k
        region = []
        if shift or painted:
            kb0 = (k - w + 1) // BLOCK
            self._forget_blocks(kb0 * BLOCK)
            sky = self._skyline(kb0, k // BLOCK, w, h)
            if shift > 0 and sky[2]:
                self._scroll_screen(shift, before, moving)
                return
            x = kb0 * BLOCK + w - 1 - k           # the screen x of block kb0's first column
            for i, j, top in sky[1]:
                region.append((x + i * BLOCK, top, (j - i) * BLOCK + shift, h - top))
        # (rectangles as (x, y, width, height): no QRect made per rectangle per frame)
        off_old, off_new = w - 1 - old_k, w - 1 - self._k
        new = self._painted_spans
        for key in old_spans.keys() | new.keys():
            o, n = old_spans.get(key), new.get(key)
            if o is not None and n is not None and o[2] is n[2]:
                for co, cn in ((o[0], n[0]), (o[1], n[1])):
                    xo, xn = co + off_old, cn + off_new
                    if xo != xn:
                        region.append((min(xo, xn), 0, abs(xo - xn) + 1, h))
                continue
            for cols, off in ((o, off_old), (n, off_new)):
                if cols is not None:
                    region.append((cols[0] + off, 0, cols[1] - cols[0] + 1, h))
        was = {id(label): look for label, look in before}
        for label, (box, version) in moving:           # where each label was and is: one rectangle
            old_look = was.pop(id(label), None)
            if old_look is None:
                region.append(box)
            elif old_look != (box, version):           # (a label that stays as it was needs nothing)
                old = old_look[0]
                x0, y0 = min(box[0], old[0]), min(box[1], old[1])
                region.append((x0, y0, max(box[0] + box[2], old[0] + old[2]) - x0,
                               max(box[1] + box[3], old[1] + old[3]) - y0))
        region += [look[0] for look in was.values()]   # labels no longer shown
        self._asked = region
        self.last_repaint = "skyline"
        self._plan = region

    def present(self) -> None:
        """Ask Qt to repaint what the last ``show_frame`` changed on screen (the paint follows
        in the loop's next turn); nothing if that is done already. ``show_frame`` presents
        the frame before it first, so no frame's repaint is ever lost. A scroll whose screen
        was partly painted since its frame (a paint between the frame and this call showed
        the new picture there: moving it would move it twice) repaints all instead."""
        plan, self._plan = self._plan, None
        if plan is None:
            return
        if plan is _WHOLE:
            self.update()
        elif isinstance(plan, tuple):                # a scroll: (shift, rectangles)
            if self._paints != self._paints_at_frame:
                self.update()
                return
            shift, rects = plan
            self.scroll(-shift, 0)
            for r in rects:
                self.update(r)
        else:
            update = self.update
            for x, y, rw, rh in plan:     # Qt gathers them (and clips them to the widget)
                update(x, y, rw, rh)

    def _forget_blocks(self, first: int) -> None:
        """Drop the blocks wholly before column ``first`` (scrolled out)."""
        kb0 = first // BLOCK
        tops = self._block_tops
        for kb in range(self._block_low, kb0):
            tops.pop(kb, None)
        self._block_low = max(self._block_low, kb0)

    def _skyline(self, kb0: int, kb1: int, w: int, h: int) -> tuple:
        """The blocks ``kb0..kb1``'s tops (rounded up to ``STEP`` rows), the rectangles of the
        band under them as ``(first block, end block, top)`` (relative to ``kb0``;
        neighbouring blocks share a rectangle, the higher top, while that adds fewer than
        ``MERGE_PX`` pixels: few rectangles, and a tall stall's ramp only about as wide as it
        is), and whether scrolling the screen is cheaper (``_scroll_cheaper``). Worked out
        again only when a rounded top changed or a block came or went."""
        sky = self._sky
        key = (kb0, kb1, self._block_version)
        if sky is not None and key == self._sky_key:
            return sky                       # (no rounded top changed, no block came or went)
        self._sky_key = key
        get = self._block_tops.get
        tops = [get(kb, h) // STEP * STEP for kb in range(kb0, kb1 + 1)]
        if sky is not None and sky[0] == tops:
            return sky
        blk = BLOCK
        rects = []
        n = len(tops)
        i = 0
        while i < n:
            top = tops[i]
            j = i + 1
            while j < n:
                t = tops[j]
                m = top if top < t else t
                if ((top - m) * (j - i) + (t - m)) * blk > MERGE_PX:
                    break
                top = m
                j += 1
            if top < h:
                rects.append((i, j, top))
            i = j
        self._sky = sky = (tops, rects, self._scroll_cheaper(tops, w, h, blk))
        return sky

    def _note_tops(self, a: int, b: int, first: int, last: int) -> None:
        """Columns ``a..b`` (absolute) were painted: their blocks' tops (the highest row of the
        curve among their columns in view ``first..last``) take them in. A block's top is
        never lowered here (see ``_plan_repaint``); a full paint starts them again."""
        tops, w, blk = self._tops, self.px_w, BLOCK
        block_tops = self._block_tops
        for kb in range(a // blk, b // blk + 1):
            lo, hi = max(kb * blk, first), min(kb * blk + blk - 1, last)
            ia, ib = lo % w, hi % w
            top = min(tops[ia:ib + 1]) if ia <= ib else min(min(tops[ia:]), min(tops[:ib + 1]))
            was = block_tops.get(kb)
            if was is None or top < was:
                block_tops[kb] = top
                if was is None or top // STEP != was // STEP:
                    self._block_version += 1   # (the skyline is worked out again)

    def _scroll_cheaper(self, blocks: list[int], w: int, h: int, blk: int = 32) -> bool:
        """Would the skyline repaint (``blocks``: the top row of each block of ``BLOCK`` columns,
        under which the curve was or is) cover more than a quarter of the area? Then moving
        the screen's pixels costs less."""
        return sum(h - top for top in blocks) * blk > (w * h) // 4

    def _scroll_screen(self, shift: int, before: list, moving: list) -> None:
        """Move the shown pixels ``shift`` columns left (``QWidget.scroll``: the window's
        backing store is moved, the columns that came in are repainted) and repaint what does
        not move with the picture: the columns painted into the ring this frame, the vertical
        grid lines and the reference lines (fixed on screen), the fixed labels, and the moving
        labels that moved otherwise than with the picture."""
        w, h = self.px_w, self.px_h
        rects = [QRect(xa, 0, xb - xa + 1, h) for xa, xb in self._painted_screen]
        rects += [QRect(x - shift, 0, shift + 1, h) for x in self._vlines]
        rects += [QRect(0, row, w, 1) for _image, row in self._ref_lines]
        rects += [label.rect().adjusted(-shift, 0, 0, 0) for label in self._fixed_labels if label.isVisible()]
        was = {id(label): QRect(*look[0]) for label, look in before}
        for label, (box, _version) in moving:
            r = QRect(*box)
            old = was.pop(id(label), None)
            if old is None or old.translated(-shift, 0) != r:
                rects.append(r)
                if old is not None:
                    rects.append(old.translated(-shift, 0))
        rects += [r.translated(-shift, 0) for r in was.values()]   # labels no longer shown
        self._plan = (shift, rects)
        self._asked = [QRect(w - shift, 0, shift, h), *rects]
        self.last_repaint = "scroll"

    def _span_cols(self, sp: Span) -> tuple[int, int, SpanStyle]:
        dt = self._dt
        c0 = math.floor(sp.t0 / dt)
        c1 = max(math.floor(sp.t1 / dt), math.floor((sp.t0 + sp.min_s) / dt))
        return c0, c1, sp.style

    def _span_changes(self, spans: Iterable[Span]) -> list[tuple[int, int]]:
        """The column ranges a span's change touches (its edges moved, it came or went)."""
        out = []
        now = {}
        old = self._painted_spans
        for sp in spans:
            c0, c1, style = cur = self._span_cols(sp)
            now[sp.key] = cur
            was = old.get(sp.key)
            if was == cur:
                continue
            if was is None or was[2] is not style:
                out.append((c0, c1))
                if was is not None:
                    out.append((was[0], was[1]))
                continue
            if was[0] != c0:
                out.append((min(was[0], c0), max(was[0], c0)))
            if was[1] != c1:
                out.append((min(was[1], c1), max(was[1], c1)))
        for key, was in old.items():
            if key not in now:
                out.append((was[0], was[1]))
        self._painted_spans = now
        return out

    def _paint_ranges(self, ranges: list[tuple[int, int]], first: int, last: int) -> int:
        """Paint the column ranges (absolute, inclusive) into the ring, clipped to those in view;
        returns how many columns were painted."""
        merged: list[list[int]] = []
        self._painted_screen = []
        for a, b in sorted((max(a, first), min(b, last)) for a, b in ranges):
            if a > b:
                continue
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        if not merged:
            return 0
        w = self.px_w
        self._painted_screen = [(a - last + w - 1, b - last + w - 1) for a, b in merged]
        count = 0
        p = None
        spans = list(self._painted_spans.values())
        try:
            for a, b in merged:
                # screen x of column k: k - last + w - 1; the ring's x: k mod w (maybe two pieces)
                k = a
                while k <= b:
                    ia = k % w
                    n = min(b - k + 1, w - ia)
                    ra, rb, off = ia, ia + n - 1, ia - k
                    here = [(c0 + off, c1 + off, style) for c0, c1, style in spans
                            if c1 + off >= ra and c0 + off <= rb] if spans else spans
                    if n <= SMALL and not here and self._write_piece(ra, rb, off):
                        pass                    # (a frame's few columns with no span: written)
                    else:
                        if p is None:
                            p = QPainter(self._ring)
                        self._paint_piece(p, ra, rb, off, here)
                    self.painted_columns += n
                    count += n
                    k += n
                self._note_tops(a, b, first, last)
        finally:
            if p is not None:
                p.end()
        return count

    def _write_piece(self, ra: int, rb: int, off: int) -> bool:
        """The ring's columns ``ra..rb`` with no span in them, written into its pixels with no
        painter: each pixel is the background-and-grid strip's, the same under the fill (both
        columns painted once by Qt, ``_column_templates``), or the curve's opaque colour, so
        the pixels are those ``_paint_piece`` paints. False (nothing written) if the curve's
        colour is translucent (it would blend).

        A column that was written this way before (``_plain``, with the same templates) holds
        the background above its old curve's top: only the rows from there down are written
        (a column's pixels lie a row apart in memory: an idle frame's two columns touch the
        cache lines of a few rows, not of all of them)."""
        templates = self._column_templates()
        if templates is None:
            return False
        _strip, background, filled, pen = templates
        h = self.px_h
        px = self._ring_px
        ring = self._tops
        plain = self._plain
        if self._plain_for is not templates:      # a new look or scale: no column is known plain
            self._plain_for = templates
            plain[:] = array("b", [0]) * len(plain)
        w = self.px_w
        cols, views = self._curve.around(ra - off, rb - off, self._k - w, self._k)
        if cols:
            scale, top = h / max(1e-12, self._top - self._bottom), self._top   # y_of, term by term
            cs, tops, bottoms, fills = column_spans_list([c + off for c in cols],
                                                         [(top - v) * scale for v in views], ra, rb)
        else:
            cs = tops = bottoms = fills = ()
        j = 0
        for c in range(ra, rb + 1):
            old = ring[c] if plain[c] else 0          # rows above it: the background already
            if j < len(cs) and cs[j] == c:
                t, b, f = tops[j], bottoms[j], fills[j]
                j += 1
                if f < 0:
                    f = 0
                if t < 0:
                    t = 0
                if old < f:
                    px[old:f, c] = background[old:f, 0]
                if f < h:                          # the fill: rows f .. h - 1 (LagTrace.paint's rectangles)
                    px[f:, c] = filled[f:]
                if b >= h:
                    b = h - 1
                if t <= b:                         # the curve: rows t .. b
                    px[t:b + 1, c] = pen
                ring[c] = t if t < f else f
            else:                                  # no curve in this column
                if old < h:
                    px[old:, c] = background[old:, 0]
                ring[c] = h
            plain[c] = 1
        return True

    def _column_templates(self) -> tuple | None:
        """``(strip, background column (h x 1), filled column (h), curve colour)`` for
        ``_write_piece``: the strip's first column, the same with the fill painted over it by
        ``LagTrace.fill_rect`` (a one-pixel-wide rectangle, as the fill is painted), and the
        curve's colour as a pixel; made again when the strip is. ``None`` if the curve's colour
        is translucent."""
        templates = self._templates
        if templates is not None and templates[0] is self._column_image:   # (made again with the strip)
            return templates if templates[3] is not None else None
        strip = self._strip()
        if templates is not None and templates[0] is strip:
            return templates if templates[3] is not None else None
        h = strip.height()
        column = strip.copy(0, 0, 1, h)
        background = np.frombuffer(column.constBits(), np.uint32).reshape(h, column.bytesPerLine() // 4)[:, :1].copy()
        p = QPainter(column)
        self._trace.fill_rect(p, QRect(0, 0, 1, h))
        p.end()
        filled = np.frombuffer(column.constBits(), np.uint32).reshape(h, column.bytesPerLine() // 4)[:, 0].copy()
        color = self._trace.pen().color()
        pen = np.uint32(color.rgba()) if color.alpha() == 255 else None
        self._templates = (strip, background, filled, pen)
        return self._templates if pen is not None else None

    def _paint_piece(self, p: QPainter, ra: int, rb: int, off: int, here: list) -> None:
        """Everything that scrolls, for the ring's columns ``ra..rb`` (column ``k`` is the ring's
        ``k + off`` here; ``here``: the spans that meet them, in ring columns). Nothing is drawn
        outside them, with no clip (a clip costs more than the few rectangles cut to the piece
        by hand)."""
        h = self.px_h
        n = rb - ra + 1
        self._tops[ra:rb + 1] = array("i", [h]) * n   # no curve (until painted below)
        self._plain[ra:rb + 1] = array("b", [0]) * n   # (_write_piece writes such a column whole)
        if not any(style.under_grid for _x0, _x1, style in here):
            # background and grid: a strip made once per look and scale, copied (no scaling)
            strip = self._strip()
            x = ra
            while x <= rb:
                m = min(rb - x + 1, STRIP)
                p.drawImage(QPoint(x, 0), strip, QRect(0, 0, m, h))
                x += m
        else:
            p.fillRect(QRect(ra, 0, n, h), self._bg)
            self._paint_spans(p, here, True, h, ra, rb)
            for row in self._grid_rows:
                p.fillRect(QRect(ra, row, n, 1), self._grid)
        if here:
            self._paint_spans(p, here, False, h, ra, rb)
        # the fill and the curve: from the held point before ra to the one after rb
        w = self.px_w
        cols, views = self._curve.around(ra - off, rb - off, self._k - w, self._k)
        if cols:
            scale, top = h / max(1e-12, self._top - self._bottom), self._top   # y_of, term by term
            if len(cols) <= SMALL:
                xs = [c + off for c in cols]
                ys = [(top - v) * scale for v in views]
            else:
                xs = np.asarray(cols, dtype=np.int64) + off
                ys = (top - np.asarray(views, dtype=np.float64)) * scale
            cs, tops = self._trace.paint(p, xs, ys, ra, rb, h)
            ring = self._tops
            for c, top_row in zip(cs, tops):
                ring[c] = max(top_row, 0)

    @staticmethod
    def _paint_spans(p: QPainter, spans: list, under_grid: bool, h: int, ra: int, rb: int) -> None:
        """The spans' fills and edges, cut to columns ``ra..rb``."""
        for x0, x1, style in spans:
            if style.under_grid != under_grid:
                continue
            a, b = max(x0, ra), min(x1, rb)
            p.fillRect(QRect(a, 0, b - a + 1, h), style.fill)
            if ra <= x0 <= rb:
                p.fillRect(QRect(x0, 0, 1, h), style.edge)
            if x1 != x0 and ra <= x1 <= rb:
                p.fillRect(QRect(x1, 0, 1, h), style.edge)

    def _strip(self) -> QImage:
        """``STRIP`` columns of background and horizontal grid (made when the look, scale or
        height changes)."""
        h = self.px_h
        image = self._column_image
        if image is None or image.height() != h:
            image = QImage(STRIP, max(1, h), QImage.Format.Format_RGB32)
            image.fill(self._bg)
            p = QPainter(image)
            for row in self._grid_rows:
                p.fillRect(QRect(0, row, STRIP, 1), self._grid)
            p.end()
            self._column_image = image
        return image

    def _rows(self) -> None:
        h = self.px_h
        self._column_image = None
        self._lines_image = None
        rows = [int(math.floor(self.y_of(v))) for v in self._grid_views]
        self._grid_rows = [r for r in rows if 0 <= r < h]
        w = self.px_w
        self._ref_lines = []
        for v, color in self._ref_views:
            row = int(math.floor(self.y_of(v)))
            if 0 <= row < h:
                # the dashed line drawn once into a transparent row (its dashes start at x = 0 as
                # on screen; opaque colours: the same pixels as the line drawn there each paint)
                image = QImage(max(1, w), 1, QImage.Format.Format_ARGB32_Premultiplied)
                image.fill(Qt.GlobalColor.transparent)
                p = QPainter(image)
                p.setPen(QPen(color, 0, Qt.PenStyle.DashLine))
                p.drawLine(QLine(0, 0, w - 1, 0))
                p.end()
                self._ref_lines.append((image, row))

    def _vlines_now(self) -> None:
        w = self.px_w
        self._lines_image = None
        xs = [round(w - 1 - s / self._dt) for s in self._vgrid_s]
        self._vlines = [x for x in xs if 0 <= x < w]
        self._vline_rects = [QRect(x, 0, 1, max(1, self.px_h)) for x in self._vlines]

    def _fixed_lines(self) -> QImage:
        """The vertical grid, then the reference lines, drawn once over transparency."""
        image = self._lines_image
        if image is None:
            w, h = max(1, self.px_w), max(1, self.px_h)
            image = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
            image.fill(Qt.GlobalColor.transparent)
            p = QPainter(image)
            p.setPen(_NO_PEN)
            p.setBrush(self._grid)
            p.drawRects(self._vline_rects)
            for row_image, row in self._ref_lines:
                p.drawImage(0, row, row_image)
            p.end()
            self._lines_image = image
        return image

    # --- Qt ----------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.px_w, self.px_h = self.width(), self.height()
        self._rows()
        self._vlines_now()
        self._full = True
        self.resized.emit()

    def paintEvent(self, event) -> None:
        self._paints += 1
        p = QPainter(self)
        ring, k = self._ring, self._k
        w, h = self.px_w, self.px_h
        if ring is None or k is None or self._ring_size != (w, h):
            p.fillRect(self.rect(), self._bg)
            self._paint_fixed(p, None)
            p.end()
            return
        self._paint_ring(p, ring, (k - w + 1) % w, w, 0, 0, w, h)   # (Qt clips to what is repainted)
        if not self._bare:
            self._paint_fixed(p, event.rect())
        p.end()

    @staticmethod
    def _paint_ring(p: QPainter, ring: QImage, off: int, w: int, x: int, y: int, n: int, rows: int) -> None:
        """Screen columns ``x .. x + n - 1``, rows ``y .. y + rows - 1``, from the ring (column
        ``x`` of the screen is the ring's ``(x + off) mod w``: one or two pieces)."""
        a = (x + off) % w
        first = min(n, w - a)
        p.drawImage(QPoint(x, y), ring, QRect(a, y, first, rows))
        if first < n:
            p.drawImage(QPoint(x + first, y), ring, QRect(0, y, n - first, rows))

    def _paint_fixed(self, p: QPainter, bounds: QRect | None) -> None:
        """What does not scroll, over the ring: the vertical grid, the reference lines, the
        overlay, the labels; only what meets ``bounds`` (the repainted area's bounding
        rectangle; ``None``: all)."""
        if bounds is None:
            x0, x1, y0, y1 = 0, self.px_w - 1, 0, self.px_h - 1
        else:
            x0, x1, y0, y1 = bounds.left(), bounds.right(), bounds.top(), bounds.bottom()
        # the vertical grid and the reference lines: one image of them over transparency,
        # copied where repainted (their colours are opaque: the same pixels as drawing them
        # there; a fill clipped to the lines' region cost a region intersection per paint)
        p.drawImage(QPoint(x0, y0), self._fixed_lines(), QRect(x0, y0, x1 - x0 + 1, y1 - y0 + 1))
        if self.overlay is not None:
            self.overlay(p)
        for label in self._labels:
            if label.isVisible():
                x, y, lw, lh = label.box()
                if x <= x1 and x + lw > x0 and y <= y1 and y + lh > y0:
                    p.drawPixmap(x, y, label.pixmap())

__all__ = ["PlateLabel", "ScrollPlot", "Span", "SpanStyle"]
