"""Column widths that do not depend on how many rows a table holds.

``QHeaderView.ResizeToContents`` measures the rows' texts again on every
change of data or font (up to 1,000 rows each time): a results table's cost
then grows with the history it shows (with 300 runs a presenter-mode toggle
took 1.5 s). ``fit_columns`` sets each column's width once from the widest
text it can hold, measured with the view's font: the same cost at run 3 and
at run 300. Call it again when the font changes.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QTableView

PADDING = 18          # a cell's margins, both sides
_HORIZONTAL = Qt.Orientation.Horizontal


def fit_columns(view: QTableView, samples: dict[int, str], stretch_last: bool = True) -> None:
    """Width of column ``c`` = the wider of its header text and ``samples[c]``
    (the widest text the column holds), in the view's font; guaranteed not to
    read the model's rows. Columns not in ``samples`` keep their width."""
    header = view.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(stretch_last)
    cells = view.fontMetrics()
    heads = header.fontMetrics()
    model = view.model()
    for column, sample in samples.items():
        title = model.headerData(column, _HORIZONTAL) if model is not None else ""
        width = max(cells.horizontalAdvance(sample), heads.horizontalAdvance(str(title or "")))
        header.resizeSection(column, width + PADDING)

