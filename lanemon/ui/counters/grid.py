"""The counters grid and the staff strip: two custom-painted widgets.

Each widget draws everything in one ``paintEvent`` from a small, plain model
built from a ``lanemon.counters.Snapshot`` (``cells_from`` / ``chips_from``):
no child widget per counter, no domain rule here -- the state, the conflict
flag and the TTL left all come from the snapshot as they are.

Cell kinds and colours: ``free`` (neutral), ``claimed`` (amber: owner and a
TTL countdown bar), ``assigned`` (blue: customer), ``double`` (red: every
customer seated on it -- the board's ``conflict`` flag). Counters are shown
numbered from 1 (counter ``id + 1``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from lanemon.counters import CounterState
from lanemon.ui.kit import theme
from lanemon.ui.kit.static_texts import StaticTexts

FREE, CLAIMED, ASSIGNED, DOUBLE = "free", "claimed", "assigned", "double"


def cell_colors() -> dict[str, tuple[str, str, str]]:
    """kind -> (fill, border, text), for the current ``theme`` palette (read at apply time)."""
    return {
        FREE: (theme.PANEL_BG, theme.BORDER, theme.MUTED),
        CLAIMED: theme.COUNTER_CLAIMED,
        ASSIGNED: theme.COUNTER_ASSIGNED,
        DOUBLE: theme.COUNTER_DOUBLE,
    }


CHIP_GAP_PX = 8     # between a staff chip's name and what it does, at font scale 1

# staff states (lanemon.counters.simulation) -> label
STAFF_LABELS = {
    "idle": "idle",
    "waiting_lock": "waits for lock",
    "choosing": "choosing",
    "guiding": "guiding",
    "away": "walked away",
    "waiting_counter": "no counter",
    "done": "done",
}


def staff_colors() -> dict[str, tuple[str, str]]:
    """staff state -> (fill, text) for the current palette."""
    quiet = (theme.PANEL_BG, theme.MUTED)
    return {"idle": quiet, **theme.STAFF_STATE_COLORS, "done": quiet}


def counter_label(counter_id: int) -> str:
    """How the window names a counter (1-based)."""
    return str(counter_id + 1)


@dataclass(frozen=True, slots=True)
class Cell:
    id: int
    kind: str            # free / claimed / assigned / double
    main: str            # customer(s), or "free"
    sub: str             # owner, TTL left, ...
    ttl_fraction: float | None   # 1.0 = a fresh claim, 0.0 = running out
    customers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Chip:
    name: str
    state: str
    text: str
    holds_lock: bool


def cells_from(snapshot, kept: dict | None = None) -> list[Cell]:
    """One ``Cell`` per counter view. With ``kept`` (a dict this function fills: counter id
    -> (view, cell)), a view that is the very object seen last time (the board hands back
    the views of counters that did not change) gives the same cell, not a new one."""
    ttl = snapshot.config.ttl
    if kept is None:
        return [cell_of(v, ttl) for v in snapshot.counters]
    cells = []
    for v in snapshot.counters:
        hit = kept.get(v.id)
        if hit is None or hit[0] is not v:
            hit = kept[v.id] = (v, cell_of(v, ttl))
        cells.append(hit[1])
    return cells


def cell_of(v, ttl: float) -> Cell:
    """What the grid shows for one counter view (``ttl``: the claim TTL, for the countdown bar)."""
    if v.conflict:
        names = v.customers
        main = " + ".join(names) if len(names) == 2 else f"{names[0]} +{len(names) - 1}"
        return Cell(v.id, DOUBLE, main, f"DOUBLE ×{len(names)}", None, names)
    if v.state == CounterState.ASSIGNED:
        return Cell(v.id, ASSIGNED, v.customer or "", f"by {v.owner}", None, v.customers)
    if v.state == CounterState.CLAIMED:
        left = v.ttl_left or 0.0
        frac = max(0.0, min(1.0, left / ttl)) if ttl > 0 else 0.0
        return Cell(v.id, CLAIMED, f"{v.owner} → {v.customer}", f"TTL {left:.1f} s", frac, v.customers)
    sub = f"{v.expired_owner}'s claim expired" if v.expired_owner else ""
    return Cell(v.id, FREE, "free", sub, None, v.customers)


def agent_of(staff: str) -> str:
    """The agent a staff member or customer of a staff agent belongs to (``agent/S1`` -> ``agent``)."""
    return staff.split("/", 1)[0]


def store_cells(state, kept: dict | None = None) -> list[Cell]:
    """One ``Cell`` per counter of a store's board (``lanemon.agents.board_follow.BoardState``),
    short enough for small cells: a double says how many are seated on it and which agents
    seated them (how many agents, past two); a seated customer is named without its agent
    (``desk-1/C3`` -> ``C3``) and says who seated it; a claim says its owner and the TTL left.
    With ``kept`` (filled here: counter id -> (view, seated by, cell)) an unchanged counter
    keeps its cell."""
    cells = []
    for v, by, ttl in zip(state.counters, state.seated_by, state.claim_ttls):
        hit = kept.get(v.id) if kept is not None else None
        if hit is not None and hit[0] == v and hit[1] == by:
            cells.append(hit[2])
            continue
        cell = cell_of(v, ttl or 1.0)
        if cell.kind == DOUBLE:
            agents = list(dict.fromkeys(agent_of(s) for s in by))
            who = " + ".join(agents) if len(agents) <= 2 else f"{len(agents)} agents"
            cell = Cell(v.id, DOUBLE, f"×{len(v.customers)}", f"DOUBLE · {who}", None, v.customers)
        elif cell.kind == ASSIGNED:
            cell = Cell(v.id, ASSIGNED, _short(v.customer or ""), f"by {v.owner}", None, v.customers)
        elif cell.kind == CLAIMED:
            cell = Cell(v.id, CLAIMED, f"{v.owner} → {_short(v.customer or '')}", cell.sub, cell.ttl_fraction,
                        v.customers)
        if kept is not None:
            kept[v.id] = (v, by, cell)
        cells.append(cell)
    return cells


def _short(customer: str) -> str:
    return customer.rsplit("/", 1)[-1]


def store_chips(state) -> list[Chip]:
    """One chip per agent on a store's board: the staff agents the store lists (sessions whose
    info says role "staff") and every agent
    seen on the board or holding the store lock; "guiding" while it has a claim or a customer
    seated (text: its strategy where the store says it, and how many counters it holds)."""
    strategy = {a.name: a.strategy for a in state.agents if a.role == "staff"}   # (not windows, tests)
    held: dict[str, int] = {}
    for v, by in zip(state.counters, state.seated_by):
        names = {agent_of(s) for s in by}
        if v.state == CounterState.CLAIMED and v.owner:
            names.add(agent_of(v.owner))
        for name in names:
            held[name] = held.get(name, 0) + 1
    lock_agent = agent_of(state.lock_holder) if state.lock_holder else None
    names = sorted(set(strategy) | set(held) | ({lock_agent} if lock_agent else set()))
    chips = []
    for name in names:
        n = held.get(name, 0)
        how = strategy.get(name)
        text = (f"{how} · " if how else "") + f"{n} counter{'s' if n != 1 else ''}"
        chips.append(Chip(name, "guiding" if n else "idle", text, name == lock_agent))
    return chips


def chips_from(snapshot) -> list[Chip]:
    chips = []
    for s in snapshot.staff:
        label = STAFF_LABELS.get(s.state, s.state)
        if s.state == "guiding" and s.customer:
            where = f" → {counter_label(s.counter)}" if s.counter is not None else ""
            label = f"guides {s.customer}{where}"
        elif s.state == "away" and s.customer:
            label = f"away ({s.customer})"
        chips.append(Chip(s.name, s.state, label, s.name == snapshot.lock_holder))
    return chips


def _changed(old: list, new: list) -> list[int] | None:
    """Indices of the items that differ between two models of the same length (an item kept
    as the same object is the same); None when the lengths differ (lay out everything again)."""
    if len(old) != len(new):
        return None
    return [i for i, (a, b) in enumerate(zip(old, new)) if a is not b and a != b]


def _bar_box(r: QRectF) -> tuple[float, float, float, float]:
    """(x, y, width, height) of a cell's countdown bar at full length (``r``: the cell)."""
    bar_h = max(4.0, r.height() * 0.09)
    return r.x() + 3, r.bottom() - bar_h - 2, r.width() - 6, bar_h


_STEPS = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0), Qt.Key.Key_Up: (0, -1),
          Qt.Key.Key_Down: (0, 1), Qt.Key.Key_Home: (-1, None), Qt.Key.Key_End: (1, None)}


def moved(index: int | None, n: int, cols: int, key) -> int | None:
    """Where a picking key moves a selection among ``n`` items laid out ``cols`` to a row
    (arrows by one item or one row, Home / End to the first / last): the new index, or
    ``None`` for a key that is not one of these (or no items). With nothing selected any
    of them picks the first item."""
    step = _STEPS.get(key)
    if step is None or n <= 0:
        return None
    if index is None:
        return 0
    dx, dy = step
    if dy is None:
        return 0 if dx < 0 else n - 1
    return min(n - 1, max(0, index + dx + dy * max(1, cols)))


def paint_focus(widget: QWidget, p: QPainter) -> None:
    """The keyboard focus, drawn around ``widget``'s edge (dashed, the theme's text colour)."""
    if widget.hasFocus():
        p.setPen(QPen(QColor(theme.FG), 2, Qt.PenStyle.DashLine))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(widget.rect()).adjusted(1, 1, -1, -1))


class _KeyPicks:
    """The keyboard's click for a painted widget of items (``selected``: the picked one or
    ``None``): arrows, Home and End move the pick from item to item (the first key picks the
    first; ``moved``), Enter unpicks (as a second click); the focus drawn (``paint_focus``).
    A subclass says its items in order and how many to a row (``_pickable``) and tells a
    pick as a click does (``_picked``)."""

    selected = None

    def _pickable(self) -> tuple[list, int]:
        raise NotImplementedError

    def _picked(self, item) -> None:
        raise NotImplementedError

    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.selected is not None:
            self.selected = None
            self.update()
            return
        items, cols = self._pickable()
        at = items.index(self.selected) if self.selected in items else None
        i = moved(at, len(items), cols, key)
        if i is None:
            super().keyPressEvent(event)
            return
        self.selected = items[i]
        self.update()
        self._picked(self.selected)

    def focusInEvent(self, event) -> None:
        super().focusInEvent(event)
        self._focus_edges()

    def focusOutEvent(self, event) -> None:
        super().focusOutEvent(event)
        self._focus_edges()

    def _focus_edges(self) -> None:
        """Repaint the strips ``paint_focus`` draws on (focus came or went)."""
        r = self.rect()
        for strip in (QRect(0, 0, r.width(), 3), QRect(0, r.height() - 3, r.width(), 3),
                      QRect(0, 0, 3, r.height()), QRect(r.width() - 3, 0, 3, r.height())):
            self.update(strip)


def grid_shape(n: int, width: float, height: float, aspect: float = 1.7) -> tuple[int, int]:
    """(columns, rows) giving the largest cells of about ``aspect`` width:height."""
    best, best_size = (max(1, n), 1), -1.0
    for cols in range(1, max(1, n) + 1):
        rows = math.ceil(n / cols)
        size = min(width / cols / aspect, height / rows)
        if size > best_size + 1e-9:
            best, best_size = (cols, rows), size
    return best


class CountersGrid(_KeyPicks, QWidget):
    """All counters in one ``paintEvent``. Click a counter to select it."""

    counter_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cells: list[Cell] = []
        self.selected: int | None = None
        self.highlighted: frozenset[int] = frozenset()   # ringed in RACE_HIGHLIGHT (a replay's race)
        self.paints = 0            # paintEvents so far, and their cost (ms)
        self.paint_ms = 0.0
        self.paint_ms_max = 0.0
        self._shape = (1, 1)
        self._rects: list[QRectF] = []
        self._dirty_rects: list[QRect] = []
        self._planned: list[QRect] | None = []   # what plan_cells left to present (None: all)
        self._extents: list[QRect] | None = None  # _extents_now
        self._fonts = (QFont(), QFont(), QFont())
        self._texts = StaticTexts(self._fonts, limit=4000)
        self._take_colors()
        self.setMinimumSize(240, 120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)   # arrows pick a counter (keyPressEvent)

    def set_cells(self, cells: list[Cell]) -> None:
        """Take a new model; repaint only the cells that changed (all of them on a relayout)."""
        self.plan_cells(cells)
        self.present()

    def plan_cells(self, cells: list[Cell]) -> None:
        """``set_cells`` without asking Qt for the repaint yet: the model taken, what to repaint
        worked out (the cells that changed, their texts laid out); ``present()`` asks for it.
        (A live view plans in its per-frame work and presents in the loop's next turn: a
        heartbeat tick due meanwhile runs before the paint.) A cell whose countdown bar alone
        moved (same texts) repaints its bar's strip, not the whole cell. A plan not yet
        presented is presented first."""
        self.present()
        extents = self._extents_now()            # (the old cells')
        old, self.cells = self.cells, cells
        changed = _changed(old, cells)
        if changed is None:
            self._layout()
            self._planned = None
            return
        rects = []
        for i in changed:
            if i < len(self._dirty_rects):
                a, b = old[i], cells[i]
                if (a.ttl_fraction is not None and b.ttl_fraction is not None and a.sub == b.sub
                        and a.main == b.main and a.kind == b.kind and a.customers == b.customers):
                    rects.append(self._bar_rect(i))   # a countdown's bar alone moved
                    continue
                rects.append(extents[i])
                extents[i] = self._extent(b)
                rects.append(extents[i])
        self._planned = rects

    def present(self) -> None:
        """Ask Qt to repaint what the last ``plan_cells`` changed (nothing if done already)."""
        planned, self._planned = self._planned, []
        if planned is None:
            self.update()
            return
        for r in planned:
            self.update(r)

    def _bar_rect(self, i: int) -> QRect:
        """Where cell ``i``'s countdown bar may paint (at any length), in whole pixels."""
        return QRectF(*_bar_box(self._rects[i])).toAlignedRect().adjusted(-1, -1, 1, 1)

    def _extents_now(self) -> list[QRect]:
        """Each cell's ``_extent``, kept from one model to the next (``plan_cells`` updates
        those of the cells that changed; a layout forgets them): a paint tests 64 kept
        rectangles, not 64 cells' texts."""
        extents = self._extents
        if extents is None or len(extents) != len(self.cells):
            extents = self._extents = [self._extent(c) for c in self.cells]
        return extents

    def _extent(self, c: Cell) -> QRect:
        """Where a cell paints: its rect, or its whole row when a text is wider than the cell
        (that text is drawn over the neighbours, so they are repainted with it)."""
        box = self._dirty_rects[c.id]
        limit = self._rects[c.id].width()
        if self._texts.get(1, c.main)[1] > limit or (c.sub and self._texts.get(2, c.sub)[1] > limit):
            return QRect(0, box.y(), self.width(), box.height())
        return box

    def cell(self, counter_id: int) -> Cell:
        return self.cells[counter_id]

    def set_highlighted(self, counters) -> None:
        """Ring these counters (ids) in ``theme.RACE_HIGHLIGHT``, over their own colours
        (a replay explaining a double assignment); an empty set rings none."""
        counters = frozenset(counters)
        if counters != self.highlighted:
            self.highlighted = counters
            self.update()

    def apply_fonts(self) -> None:
        """Follow ``theme`` (font scale and palette)."""
        self._take_colors()
        self._layout()
        self.update()

    def _take_colors(self) -> None:
        self._bg = QColor(theme.BG)
        self._ttl_bar = QColor(theme.CLAIM_TTL_BAR)
        self._colors = {k: tuple(QColor(c) for c in v) for k, v in cell_colors().items()}

    def resizeEvent(self, event) -> None:
        self._layout()
        super().resizeEvent(event)

    def _layout(self) -> None:
        n = len(self.cells)
        w, h = self.width(), self.height()
        gap = 4.0
        cols, rows = grid_shape(max(1, n), w, h)
        self._shape = (cols, rows)
        cw = (w - gap * (cols - 1)) / cols
        ch = (h - gap * (rows - 1)) / rows
        self._rects = [QRectF((i % cols) * (cw + gap), (i // cols) * (ch + gap), cw - 1, ch - 1)
                       for i in range(n)]
        # what to repaint when one cell changes (its rect, the selection ring, rounding)
        self._dirty_rects = [r.toAlignedRect().adjusted(-2, -2, 2, 2) for r in self._rects]
        self._extents = None
        # type follows the cell size (readable on a projector), bounded by the theme's scale
        big = max(7.0, min(ch * 0.30, cw * 0.16, 20.0 * theme.font_scale()))
        num, main, sub = QFont("DejaVu Sans"), QFont("DejaVu Sans"), QFont("DejaVu Sans")
        num.setPixelSize(max(8, int(big * 0.75)))
        num.setBold(True)
        main.setPixelSize(max(8, int(big)))
        main.setBold(True)
        sub.setPixelSize(max(8, int(big * 0.7)))
        self._fonts = (num, main, sub)
        self._texts.set_fonts(self._fonts)

    def paintEvent(self, event) -> None:
        t0 = time.perf_counter()
        p = QPainter(self)
        p.fillRect(event.rect(), self._bg)
        rects = self._rects
        by_kind: dict[str, list[Cell]] = {}
        region = event.region()
        everything = event.rect().contains(self.rect())   # QRegion.contains(QRect) means overlaps
        extents = self._extents_now()
        for cell, extent in zip(self.cells, extents):   # only the cells in the exposed region
            if everything or region.intersects(extent):
                by_kind.setdefault(cell.kind, []).append(cell)
        fonts, text, draw = self._fonts, self._texts.get, p.drawStaticText
        for kind, cells in by_kind.items():
            fill, border, ink = self._colors[kind]
            p.setPen(border)
            p.setBrush(fill)
            p.drawRects([rects[c.id] for c in cells])
            if kind == CLAIMED:
                for c in cells:
                    if c.ttl_fraction is not None:
                        x, y, w, h = _bar_box(rects[c.id])
                        p.fillRect(QRectF(x, y, w * c.ttl_fraction, h), self._ttl_bar)
            p.setPen(ink)
            p.setFont(fonts[0])
            for c in cells:
                r = rects[c.id]
                pad = max(3.0, r.height() * 0.06)
                draw(QPointF(r.x() + pad + 1, r.y() + pad - 2), text(0, counter_label(c.id))[0])
            p.setFont(fonts[1])
            for c in cells:
                r = rects[c.id]
                st, w, h = text(1, c.main)
                draw(QPointF(r.x() + (r.width() - w) / 2, r.y() + r.height() * 0.46 - h / 2), st)
            p.setFont(fonts[2])
            for c in cells:
                if c.sub:
                    r = rects[c.id]
                    st, w, h = text(2, c.sub)
                    draw(QPointF(r.x() + (r.width() - w) / 2, r.y() + r.height() * 0.76 - h / 2), st)
        if self.selected is not None and self.selected < len(rects):
            p.setPen(QPen(QColor(theme.FG), 3))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(rects[self.selected].adjusted(1, 1, -1, -1))
        if self.highlighted:
            width = max(6.0, 6.0 * theme.font_scale())
            p.setPen(QPen(QColor(theme.RACE_HIGHLIGHT), width))
            p.setBrush(Qt.BrushStyle.NoBrush)
            half = width / 2
            for i in self.highlighted:
                if 0 <= i < len(rects):
                    p.drawRect(rects[i].adjusted(half, half, -half, -half))
        paint_focus(self, p)
        p.end()
        self.paint_ms = (time.perf_counter() - t0) * 1000
        self.paints += 1
        self.paint_ms_max = max(self.paint_ms_max, self.paint_ms)

    def mousePressEvent(self, event) -> None:
        pos = event.position()
        for cell, r in zip(self.cells, self._rects):
            if r.contains(pos):
                self.selected = None if self.selected == cell.id else cell.id
                self.update()
                self.counter_clicked.emit(cell.id)
                return
        super().mousePressEvent(event)

    def _pickable(self) -> tuple[list, int]:
        return [cell.id for cell in self.cells], self._shape[0]

    def _picked(self, item) -> None:
        self.counter_clicked.emit(item)


class StaffStrip(_KeyPicks, QWidget):
    """One chip per staff member: who waits for the lock, who holds it, who guides."""

    staff_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.chips: list[Chip] = []
        self.selected: str | None = None
        self.highlighted: frozenset[str] = frozenset()   # ringed in RACE_HIGHLIGHT (a replay's race)
        self._rects: list[QRectF] = []
        self._font = QFont()
        self._bold = QFont()
        self._texts = StaticTexts(limit=800)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)   # arrows pick a staff member (keyPressEvent)
        self._cols = 1
        self.apply_fonts()

    def apply_fonts(self) -> None:
        """Follow ``theme`` (font scale and palette)."""
        self._bg = QColor(theme.BG)
        self._colors = {k: (QColor(f), QColor(t)) for k, (f, t) in staff_colors().items()}
        self._lock_pen = QPen(QColor(theme.FG), 3)
        self._sel_pen = QPen(QColor(theme.STAFF_SELECTED), 3)
        self._race_pen = QPen(QColor(theme.RACE_HIGHLIGHT), max(4.0, 4.0 * theme.font_scale()))
        self._font = QFont("DejaVu Sans")
        self._font.setPointSizeF(theme.pt(9.5))
        self._bold = QFont(self._font)
        self._bold.setBold(True)
        self._texts.set_fonts((self._font, self._bold))
        self._rows = 1
        self._relayout()

    def set_chips(self, chips: list[Chip]) -> None:
        """Take a new model; repaint only the chips that changed (all of them on a relayout)."""
        old, self.chips = self.chips, chips
        changed = _changed(old, chips)
        if changed is None:
            self._relayout()
            self.update()
            return
        for i in changed:
            if i < len(self._rects):
                self.update(self._rects[i].toAlignedRect().adjusted(-2, -2, 2, 2))

    def set_highlighted(self, names) -> None:
        """Ring these staff members' chips in ``theme.RACE_HIGHLIGHT`` (a replay explaining a
        double assignment: the two who chose the same counter); empty: none."""
        names = frozenset(names)
        if names != self.highlighted:
            self.highlighted = names
            self.update()

    def _line_height(self) -> int:
        return int(QFontMetrics(self._font).height() * 1.7)

    def _relayout(self) -> None:
        n = max(1, len(self.chips))
        line = self._line_height()
        per_row = max(1, int(self.width() // max(1, int(150 * theme.font_scale()))))
        rows = math.ceil(n / per_row)
        self.setFixedHeight(rows * line + 2)
        cols = self._cols = math.ceil(n / rows)
        w = self.width() / cols
        self._rects = [QRectF((i % cols) * w, (i // cols) * line, w - 4, line - 3) for i in range(len(self.chips))]

    def resizeEvent(self, event) -> None:
        self._relayout()
        super().resizeEvent(event)

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.fillRect(event.rect(), self._bg)
        draw = p.drawStaticText
        region = event.region()
        everything = event.rect().contains(self.rect())   # QRegion.contains(QRect) means overlaps
        for chip, r in zip(self.chips, self._rects):
            if not everything and not region.intersects(r.toAlignedRect().adjusted(-2, -2, 2, 2)):
                continue
            fill, ink = self._colors.get(chip.state, self._colors["idle"])
            if chip.name in self.highlighted:
                p.setPen(self._race_pen)
            elif chip.holds_lock:
                p.setPen(self._lock_pen)
            elif chip.name == self.selected:
                p.setPen(self._sel_pen)
            else:
                p.setPen(fill.darker(115))
            p.setBrush(fill)
            p.drawRect(r)
            p.setPen(ink)
            (name, name_at), told = self._chip_texts(chip, r)
            p.setFont(self._bold)
            draw(name_at, name)
            if told is not None:
                p.setFont(self._font)
                st, at = told
                draw(at, st)
        paint_focus(self, p)
        p.end()

    def _chip_texts(self, chip: Chip, r: QRectF):
        """((name, where), (what it does, where) or None) of a chip in ``r``: the name (bold, with
        " · LOCK" while it holds the lock) on the left; what it does right-aligned in the room the
        name leaves, elided there ("S5 · LOCK" and "guides C5 → 5" overlapped in a narrow chip)."""
        text = self._texts.get
        y = r.y() + r.height() / 2
        name, name_w, h = text(1, chip.name + (" · LOCK" if chip.holds_lock else ""))
        name_at = QPointF(r.x() + 7, y - h / 2)
        room = int(r.width() - 7 - name_w - CHIP_GAP_PX * theme.font_scale() - 6)
        told, w, h = text(0, chip.text)
        if w > room:
            told, w, h = text(0, chip.text, max(0, room))
        if w <= 0:
            return (name, name_at), None
        return (name, name_at), (told, QPointF(r.right() - 6 - w, y - h / 2))

    def text_boxes(self) -> list[tuple[QRectF, QRectF | None]]:
        """Where each chip's two texts are drawn (name, what it does or ``None``): for tests
        and screenshots to check that they never overlap."""
        boxes = []
        for chip, r in zip(self.chips, self._rects):
            (name, name_at), told = self._chip_texts(chip, r)
            right = None if told is None else QRectF(told[1], told[0].size())
            boxes.append((QRectF(name_at, name.size()), right))
        return boxes

    def mousePressEvent(self, event) -> None:
        pos = event.position()
        for chip, r in zip(self.chips, self._rects):
            if r.contains(pos):
                self.selected = None if self.selected == chip.name else chip.name
                self.update()
                self.staff_clicked.emit(chip.name)
                return
        super().mousePressEvent(event)

    def _pickable(self) -> tuple[list, int]:
        return [chip.name for chip in self.chips], self._cols

    def _picked(self, item) -> None:
        self.staff_clicked.emit(item)
