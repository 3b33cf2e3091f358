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

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QHeaderView, QTableView

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
    ``grow_only``: a column only widens (new rows came in on top: ``rows`` = a few)."""
    model = view.model()
    header = view.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(stretch_last)
    bold = QFont(view.font())
    bold.setBold(True)
    cells, heads = QFontMetrics(bold if bold_cells else view.font()), QFontMetrics(bold)
    pad = 2 * CELL_PADDING * theme.font_scale() + MARGIN
    shown = min(rows, model.rowCount())
    for column in range(model.columnCount()):
        if view.isColumnHidden(column):
            continue
        title = str(model.headerData(column, _HORIZONTAL, _DISPLAY) or "")
        width = heads.horizontalAdvance(title) + 2 * HEADER_PADDING + MARGIN
        for row in range(shown):
            text = model.data(model.index(row, column), _DISPLAY)
            if text:
                width = max(width, cells.horizontalAdvance(str(text)) + pad)
        width = int(width + 0.5)
        if width != header.sectionSize(column) and not (grow_only and width < header.sectionSize(column)):
            header.resizeSection(column, width)
