"""Column widths whose cost does not grow with the rows a table holds.

``QHeaderView.ResizeToContents`` measures the rows' texts on every change of
data or font (up to 1,000 rows each time, and its precision setting did not
bound it here): a results table's cost then grew with the history it shows
(with 300 runs a presenter-mode toggle took 1.5 s). ``fit_columns`` sizes each
column to its header and to its texts in the newest ``rows`` rows (the top of
a newest-first table, what is in view), measured with the view's font: the
same cost at run 3 and at run 300. Call it when rows arrive or the font
changes.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QHeaderView, QTableView, QTableWidgetItem

from lanemon.ui.kit import theme

ROWS = 20             # rows measured, from the top
NEW_ROWS = 3          # rows measured when rows came in on top (grow_only)
CELL_PADDING = 8      # theme.stylesheet's ``QTableView::item`` padding, each side, at scale 1
HEADER_PADDING = 6    # its ``QHeaderView::section`` padding, each side
MARGIN = 7            # the style's focus frame and text margins (what ResizeToContents added, measured)
_DISPLAY = Qt.ItemDataRole.DisplayRole
_HORIZONTAL = Qt.Orientation.Horizontal


def fit_columns(view: QTableView, rows: int = ROWS, stretch_last: bool = True,
                bold_cells: bool = False, grow_only: bool = False) -> None:
    """Size every shown column to its header and its texts in the first ``rows`` rows.

    Guaranteed: reads at most ``rows`` rows of the model, whatever it holds; hidden
    columns are left alone. ``bold_cells``: the cells are drawn bold (the headers are).
    ``grow_only``: a column only widens (new rows came in on top: ``rows`` = a few).
    A view with a :class:`ColumnFit` (``keep_within_width``) gets the widths as its
    natural widths and is laid out within its width (columns dropped, texts elided)."""
    model = view.model()
    header = view.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(stretch_last)
    bold = QFont(view.font())
    bold.setBold(True)
    cells, heads = QFontMetrics(bold if bold_cells else view.font()), QFontMetrics(bold)
    pad = 2 * CELL_PADDING * theme.font_scale() + MARGIN
    shown = min(rows, model.rowCount())
    fit = column_fit(view)
    for column in range(model.columnCount()):
        if view.isColumnHidden(column) and (fit is None or column not in fit.dropped):
            continue
        title = str(model.headerData(column, _HORIZONTAL, _DISPLAY) or "")
        width = heads.horizontalAdvance(title) + 2 * HEADER_PADDING + MARGIN
        for row in range(shown):
            text = model.data(model.index(row, column), _DISPLAY)
            if text:
                width = max(width, cells.horizontalAdvance(str(text)) + pad)
        width = int(width + 0.5)
        if fit is not None:
            before = fit.natural(column)
            if not (grow_only and before is not None and width < before):
                fit.set_natural(column, width)
        elif width != header.sectionSize(column) and not (grow_only and width < header.sectionSize(column)):
            header.resizeSection(column, width)
    if fit is not None:
        fit.apply()


class ColumnFit(QObject):
    """Keeps a table's columns within its viewport's width: it never scrolls sideways.

    Installed by :func:`keep_within_width`. The columns' natural widths (what
    ``fit_columns`` measured, or what the view asked for with :func:`set_widths`;
    else its header's width) are kept here; on every resize of the viewport (and after each fit) the
    columns are laid out again:

    1. columns in ``drop`` order (low priority first) are hidden while the
       natural widths of the shown ones exceed the viewport (never the last one
       shown); a column dropped here comes back as soon as it fits again;
    2. if they still do not fit, the widest columns are narrowed to a common cap
       and their cells' texts elide, each column kept as wide as its header's text
       (while the headers fit; else down to the minimum section size).

    Columns hidden by anyone else are left alone. The horizontal scroll bar is
    switched off for good.
    """

    def __init__(self, view: QTableView, drop: tuple[int, ...] = ()) -> None:
        super().__init__(view)
        self.setObjectName(FIT_NAME)
        self._view = view
        self._drop = tuple(drop)
        self._natural: dict[int, int] = {}
        self._dropped: set[int] = set()
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setTextElideMode(Qt.TextElideMode.ElideRight)
        view.viewport().installEventFilter(self)

    @property
    def dropped(self) -> frozenset[int]:
        """The columns this fit hides now (they did not fit)."""
        return frozenset(self._dropped)

    def natural(self, column: int) -> int | None:
        return self._natural.get(column)

    def set_natural(self, column: int, width: int) -> None:
        """The width ``column`` would like; takes effect at the next :meth:`apply`."""
        self._natural[column] = int(width)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.apply()
        return False

    def apply(self) -> None:
        view = self._view
        model = view.model()
        if model is None:
            return
        header = view.horizontalHeader()
        avail = view.viewport().width()
        if avail <= 0:
            return
        columns = [c for c in range(model.columnCount()) if c in self._dropped or not view.isColumnHidden(c)]
        # a column nobody sized wants its header's width (not its section's: the last one may be
        # stretched to fill the view, which would never fit)
        width = {c: self._natural.get(c) or header.sectionSizeHint(c) for c in columns}
        kept = list(columns)
        dropped: set[int] = set()
        for c in self._drop:
            if sum(width[k] for k in kept) <= avail:
                break
            if c in kept and len(kept) > 1:
                kept.remove(c)
                dropped.add(c)
        size = {c: width[c] for c in kept}
        if sum(size.values()) > avail and kept:
            # the cells elide, the headers stay whole (a style sheet's header clips, it does not
            # elide) while they fit; else every column is narrowed alike
            heads = {c: min(width[c], header.sectionSizeHint(c)) for c in kept}
            if sum(heads.values()) > avail:
                heads = dict.fromkeys(kept, header.minimumSectionSize())
            size = _capped(size, heads, avail)
        for c in dropped - self._dropped:
            view.setColumnHidden(c, True)
        for c in self._dropped - dropped:
            view.setColumnHidden(c, False)
        self._dropped = dropped
        for c, w in size.items():
            if header.sectionSize(c) != w:
                header.resizeSection(c, w)


def _capped(width: dict[int, int], floor: dict[int, int], avail: int) -> dict[int, int]:
    """Each width cut to a common cap, never below its floor: the largest cap with
    ``sum(max(floor, min(width, cap))) <= avail`` (the floors if even they do not fit)."""
    def total(cap: int) -> int:
        return sum(max(floor[c], min(w, cap)) for c, w in width.items())

    lo, hi = 0, max(width.values())
    while lo < hi:                      # the largest cap that fits
        mid = (lo + hi + 1) // 2
        if total(mid) <= avail:
            lo = mid
        else:
            hi = mid - 1
    return {c: max(floor[c], min(w, lo)) for c, w in width.items()}


FIT_NAME = "lanemon-column-fit"


def keep_within_width(view: QTableView, drop: tuple[int, ...] = ()) -> ColumnFit:
    """Make ``view`` fit its width (see :class:`ColumnFit`); ``drop``: the columns that
    may be hidden, lowest priority first. Returns the fit (one per view)."""
    fit = column_fit(view)
    return fit if fit is not None else ColumnFit(view, drop)


def column_fit(view: QTableView) -> ColumnFit | None:
    """The view's :class:`ColumnFit`, if it has one."""
    return view.findChild(ColumnFit, FIT_NAME, Qt.FindChildOption.FindDirectChildrenOnly)


def set_widths(view: QTableView, widths: dict[int, int]) -> None:
    """Columns' wanted widths: through the view's :class:`ColumnFit` if it has one
    (which then lays them out within the width), else set as they are."""
    fit = column_fit(view)
    if fit is None:
        for c, w in widths.items():
            view.setColumnWidth(c, int(w))
        return
    for c, w in widths.items():
        fit.set_natural(c, w)
    fit.apply()


def table_item(text: str, color: str | None = None, bold: bool = False, right: bool = False, *,
               read_only: bool = False) -> QTableWidgetItem:
    """A table cell: ``text`` in ``color`` (a theme colour; ``None``: the palette's), bold or
    not, right-aligned or not; ``read_only``: selectable but never editable."""
    it = QTableWidgetItem(text)
    if read_only:
        it.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
    if color:
        it.setForeground(QColor(color))
    if bold:
        f = it.font()
        f.setBold(True)
        it.setFont(f)
    if right:
        it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return it
