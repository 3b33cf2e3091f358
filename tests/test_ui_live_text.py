"""LiveLabel and FastDelegate: cheap to update, and they still show what a QLabel / Qt's delegate showed."""

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QObject, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF
from PySide6.QtWidgets import QApplication, QTableView, QVBoxLayout, QWidget

from lanemon.ui.kit.fast_delegate import FastDelegate
from lanemon.ui.kit.live_label import LiveLabel


class _LayoutRequests(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def _pixels(widget) -> np.ndarray:
    img = widget.grab().toImage().convertToFormat(widget.grab().toImage().Format.Format_RGB32)
    return np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.width(), 4).copy()


def test_live_label_changes_without_relayout_and_draws_its_parts_on_one_line(qtbot):
    box = QWidget()
    lay = QVBoxLayout(box)
    label = LiveLabel("Workspaces")
    lay.addWidget(label)
    box.resize(500, 60)
    box.show()
    qtbot.waitExposed(box)
    QApplication.sendPostedEvents()
    spy = _LayoutRequests()
    box.installEventFilter(spy)
    for i in range(20):
        label.set_parts([("Workspaces", None, True), (f" {i} lanes held", "#c92a2a", False)])
    QApplication.sendPostedEvents()
    assert spy.count == 0
    assert label.text() == "Workspaces 19 lanes held"
    assert label.sizeHint().height() <= label.fontMetrics().height() + 4     # one line tall
    # each part in its colour, side by side on one line, in order
    label.set_parts([("word " * 6, "#ff0000", False), ("word " * 6, "#0000ff", True)])
    px = _pixels(label)
    red = (px[..., 2] > 200) & (px[..., 1] < 80) & (px[..., 0] < 80)
    blue = (px[..., 0] > 200) & (px[..., 1] < 80) & (px[..., 2] < 80)
    red_cols, blue_cols = np.flatnonzero(red.any(axis=0)), np.flatnonzero(blue.any(axis=0))
    assert red_cols.size and blue_cols.size
    assert red_cols.max() < blue_cols.min() and blue_cols.max() > 250      # not wrapped, not overlapping
    rows = np.flatnonzero((red | blue).any(axis=1))
    assert rows.max() - rows.min() < label.fontMetrics().height() + 2     # one line
    # a bold part is wider than the same text in the regular weight
    label.set_parts([("word " * 6, "#0000ff", False)])
    regular = np.flatnonzero(((p := _pixels(label))[..., 0] > 200).any(axis=0) & (p[..., 1] < 80).any(axis=0))
    label.set_parts([("word " * 6, "#0000ff", True)])
    bold = np.flatnonzero(((p := _pixels(label))[..., 0] > 200).any(axis=0) & (p[..., 1] < 80).any(axis=0))
    assert bold.max() > regular.max()



def test_a_live_label_narrower_than_its_text_elides_it_and_tips_the_whole_text(qtbot):
    """Issue 19 finding 11: the Lanes titles were cut mid-glyph at the right edge."""
    whole = "Workspaces 3 · 2 lanes held · Space toggles bus lanes on and off"
    narrow, wide = LiveLabel(), LiveLabel()
    qtbot.addWidget(narrow)
    qtbot.addWidget(wide)
    narrow.set_parts([("Workspaces 3", None, True),
                      (" · 2 lanes held · Space toggles bus lanes on and off", "#c92a2a", False)])
    narrow.resize(160, narrow.sizeHint().height())
    spy = _LayoutRequests()
    narrow.installEventFilter(spy)
    shown = narrow.shown_text()
    assert narrow.text() == whole
    assert shown.endswith("…") and len(shown) > 1
    assert whole.startswith(shown[:-1])                  # the start of the text, cut at the right
    assert narrow.toolTip() == whole
    # it paints what it shows: the same pixels as a wide label showing that text
    narrow.setText(whole)
    shown = narrow.shown_text()
    assert shown.endswith("…") and whole.startswith(shown[:-1]) and narrow.toolTip() == whole
    assert QFontMetricsF(narrow.font()).horizontalAdvance(shown) <= 160 - 2
    wide.setText(shown)
    wide.resize(600, narrow.height())
    assert wide.shown_text() == shown and wide.toolTip() == ""
    assert (_pixels(narrow) == _pixels(wide)[:, :160]).all()
    # changing the text cuts it again without asking for a layout; widening shows it whole
    for i in range(10):
        narrow.setText(f"{i} {whole}")
    QApplication.sendPostedEvents()
    assert spy.count == 0
    assert narrow.shown_text().startswith("9 ") and narrow.toolTip() == f"9 {whole}"
    narrow.resize(900, narrow.height())
    assert narrow.shown_text() == f"9 {whole}" and narrow.toolTip() == ""

class _Model(QAbstractTableModel):
    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else 3

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else 2

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole:
            return "a rather long cell text that cannot fit" if index.column() == 1 else f"r{index.row()}"
        if role == Qt.ItemDataRole.BackgroundRole and index.row() == 1:
            return QBrush(QColor("#00ff00"))
        if role == Qt.ItemDataRole.ForegroundRole and index.row() == 2:
            return QBrush(QColor("#0000ff"))
        if role == Qt.ItemDataRole.FontRole and index.row() == 2:
            f = QFont()
            f.setBold(True)
            return f
        return None


def test_fast_delegate_paints_the_models_colours_and_elides(qtbot):
    view = QTableView()
    view.setModel(_Model())
    delegate = FastDelegate(view)
    view.setItemDelegate(delegate)
    view.setColumnWidth(0, 60)
    view.setColumnWidth(1, 80)
    view.resize(220, 160)
    view.show()
    qtbot.waitExposed(view)
    px = _pixels(view.viewport())
    r1 = view.visualRect(view.model().index(1, 0))
    bg = px[r1.top() + 2, r1.left() + 2]
    assert tuple(bg[:3]) == (0, 255, 0)                      # BGRA: the model's background
    r2 = view.visualRect(view.model().index(2, 0))
    cell = px[r2.top():r2.bottom(), r2.left():r2.right()]
    blue = (cell[..., 0] > 180) & (cell[..., 1] < 90) & (cell[..., 2] < 90)
    assert blue.any()                                        # the model's text colour
    # the long text was elided to the column, laid out once and reused
    cache = delegate.texts.kept()           # (font index, text, elide width) -> laid-out text
    keys = [k for k in cache if k[1].startswith("a rather long")]
    assert keys and all(k[2] <= 80 for k in keys)
    assert all(cache[k][0].text().endswith("…") for k in keys)
    assert any(k[0] == 1 for k in cache)    # row 2's bold font
    before = dict(cache)
    view.viewport().repaint()
    again = delegate.texts.kept()
    assert all(again[k] is before[k] for k in before)
    delegate.clear()
    assert len(delegate.texts) == 0 and delegate.texts.fonts == ()


def test_the_text_cache_is_bounded_and_keeps_what_is_drawn_every_frame(qapp):
    """Ever-new strings (times, counts) stay within two generations of ``limit`` texts,
    and a text drawn frame after frame is laid out once (the same object comes back)."""
    from PySide6.QtGui import QFont

    from lanemon.ui.kit.static_texts import StaticTexts

    texts = StaticTexts((QFont("DejaVu Sans", 11),), limit=50)
    hot = texts.get(0, "ws-01 running")[0]
    sizes = []
    for i in range(2_000):                      # a live panel: one new string per frame...
        texts.get(0, f"{i / 10:.1f} s")
        assert texts.get(0, "ws-01 running")[0] is hot     # ...beside one that is always shown
        sizes.append(len(texts))
    assert max(sizes) <= 2 * 50
    assert texts.get(0, "1999.9 s")[0] is texts.get(0, "1999.9 s")[0]


def test_forget_all_empties_every_text_cache(qapp):
    """``static_texts.forget_all`` (the Lanes Reset calls it): every cache alive is emptied,
    and a text is laid out again when next asked for (before: no such function)."""
    from PySide6.QtGui import QFont

    from lanemon.ui.kit import static_texts

    a = static_texts.StaticTexts((QFont("DejaVu Sans", 11),), limit=50)
    b = static_texts.StaticTexts((QFont("DejaVu Sans", 11),), limit=50)
    old = a.get(0, "12,345 running")[0]
    b.get(0, "3.1 s")
    assert static_texts.forget_all() >= 2
    assert len(a) == 0 and len(b) == 0
    assert a.get(0, "12,345 running")[0] is not old and len(a) == 1
