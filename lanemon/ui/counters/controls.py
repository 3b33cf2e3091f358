"""The counters view's inputs, tallies and compare table (plain widgets).

``ConfigForm`` turns its inputs into a ``SimConfig`` -- the domain decides
what is valid (``SimConfig`` raises ``ValueError`` with the reason; the view
shows it). The inputs start at the domain's floors (``counters.FLOORS``), so
they never hold a value the model refuses; a typed value out of range is set
to the nearest accepted one and ``refused`` says so (the view shows it).
``TalliesPanel`` and ``CompareTable`` only format ``Tallies``.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from lanemon.counters import FLOORS, LABELS, STRATEGIES, SimConfig
from lanemon.ui.kit import theme
from lanemon.ui.kit.static_texts import StaticTexts

DEFAULTS = dict(strategy="short_lock", staff=8, counters=24, customers=0, arrival_rate=50.0,
                guide_time=0.2, ttl=1.0, speed=0.25, seed=1)
COMPARE_CUSTOMERS = 300  # an endless live run compares this many customers


class _Correcting:
    """What both spin boxes add: a typed value out of range is corrected to the nearest
    accepted one (not silently back to the old value), and ``refused(text)`` fires with
    the typed text once the box holds the corrected value."""

    def _init_correcting(self) -> None:
        self._typed_refused: str | None = None
        self.setCorrectionMode(QAbstractSpinBox.CorrectionMode.CorrectToNearestValue)
        self.setKeyboardTracking(False)
        self.setAccelerated(True)
        self.editingFinished.connect(self._say_refused)

    def fixup(self, text: str) -> str:  # Qt calls it with text it will not accept as it is
        self._typed_refused = text
        return super().fixup(text)

    def _say_refused(self) -> None:
        text, self._typed_refused = self._typed_refused, None
        if text is not None and text.strip():
            self.refused.emit(text.strip())


class _SpinBox(_Correcting, QSpinBox):
    refused = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self._init_correcting()


class _DoubleSpinBox(_Correcting, QDoubleSpinBox):
    refused = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self._init_correcting()


def _spin(lo: int, hi: int, value: int) -> QSpinBox:
    w = _SpinBox()
    w.setRange(lo, hi)
    w.setValue(value)
    return w


def _dspin(lo: float, hi: float, value: float, step: float, suffix: str, decimals: int = 2) -> QDoubleSpinBox:
    w = _DoubleSpinBox()
    w.setDecimals(decimals)
    w.setRange(lo, hi)
    w.setSingleStep(step)
    w.setValue(value)
    w.setSuffix(suffix)
    return w


class ConfigForm(QWidget):
    """Strategy, staff, counters, customers, arrivals, guide, TTL, speed, seed.

    ``config_changed`` fires when anything but the speed changes (applied by
    a reset); ``speed_changed`` when the speed does (applied live). Each input's
    minimum is the lowest value the model accepts (``FLOORS``) at the input's
    precision; ``refused(sentence)`` says when a typed value was out of range and
    what the input holds instead.
    """

    config_changed = Signal()
    speed_changed = Signal(float)
    refused = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        d = DEFAULTS
        self.strategy = QComboBox()
        for key in STRATEGIES:
            self.strategy.addItem(LABELS[key], key)
        self.strategy.setCurrentIndex(self.strategy.findData(d["strategy"]))
        self.staff = _spin(int(FLOORS["staff"].lowest(1)), 64, d["staff"])
        self.counters = _spin(int(FLOORS["counters"].lowest(1)), 128, d["counters"])
        self.customers = _spin(0, 1_000_000, d["customers"])
        self.customers.setSpecialValueText("endless")
        self.customers.setSingleStep(50)
        self.arrival_rate = _dspin(FLOORS["arrival_rate"].lowest(1), 10_000, d["arrival_rate"], 5, "/s", 0)
        self.guide_time = _dspin(FLOORS["guide_time"].lowest(0.01), 60, d["guide_time"], 0.05, " s")
        self.ttl = _dspin(FLOORS["ttl"].lowest(0.01), 600, d["ttl"], 0.1, " s")
        self.speed = _dspin(0, 20, d["speed"], 0.05, "×")
        self.speed.setSpecialValueText("paused")
        self.seed = _spin(0, 2_147_483_647, d["seed"])
        for w in (self.customers, self.arrival_rate, self.seed):  # room for the text; arrow keys still step
            w.setButtonSymbols(QAbstractSpinBox.ButtonSymbols.NoButtons)

        tips = {
            self.strategy: "short lock: lock only around choosing · long lock: around the whole "
                           "assignment · claim: claim, guide, finalize",
            self.staff: "staff members assigning counters at once",
            self.customers: "customers in the seeded workload (endless: a live stream; "
                            f"compare then uses {COMPARE_CUSTOMERS})",
            self.arrival_rate: "customers arriving per simulated second",
            self.guide_time: "mean simulated seconds to guide a customer to the counter",
            self.ttl: "a claim expires this many simulated seconds after it was made",
            self.speed: "simulated seconds per real second (0 pauses); applies at once",
            self.seed: "the workload's seed: the same seed gives the same customers",
        }
        for w, tip in tips.items():
            w.setToolTip(tip)

        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(4)
        rows = [
            # mnemonics: unique in the tab with its buttons and the menu bar's F, U, V, H
            # and the tabs' N (tests/test_ui_small_fixes.py finds duplicates)
            [("S&trategy", self.strategy)],
            [("St&aff", self.staff), ("Count&ers", self.counters)],
            [("&Guide", self.guide_time), ("TT&L", self.ttl)],
            [("Custo&mers", self.customers), ("Arr&ivals", self.arrival_rate)],
            [("S&peed", self.speed), ("See&d", self.seed)],
        ]
        self.labels: dict[QWidget, QLabel] = {}
        for r, pairs in enumerate(rows):
            for c, (text, w) in enumerate(pairs):
                label = QLabel(text)
                label.setBuddy(w)
                self.labels[w] = label
                grid.addWidget(label, r, 2 * c)
                if len(pairs) == 1:
                    grid.addWidget(w, r, 1, 1, 3)
                else:
                    grid.addWidget(w, r, 2 * c + 1)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)

        self.strategy.currentIndexChanged.connect(self.config_changed)
        for w in (self.staff, self.counters, self.customers, self.arrival_rate, self.guide_time,
                  self.ttl, self.seed):
            w.valueChanged.connect(self.config_changed)
        self.speed.valueChanged.connect(self.speed_changed)
        for w in self.labels:
            if isinstance(w, _Correcting):
                w.refused.connect(lambda text, w=w: self._refused(w, text))

    def _refused(self, w, typed: str) -> None:
        name = self.labels[w].text().replace("&", "")
        lo, hi = w.textFromValue(w.minimum()), w.textFromValue(w.maximum())
        self.refused.emit(f"{name}: “{typed}” is not accepted ({lo} to {hi}{w.suffix()}); "
                          f"it is {w.text()} now.")

    def strategy_key(self) -> str:
        return self.strategy.currentData()

    def set_strategy(self, key: str) -> None:
        self.strategy.setCurrentIndex(self.strategy.findData(key))

    def config(self) -> SimConfig:
        """The inputs as a ``SimConfig`` (``ValueError`` says what is wrong)."""
        return SimConfig(
            strategy=self.strategy_key(),
            staff=self.staff.value(),
            counters=self.counters.value(),
            customers=self.customers.value() or None,
            arrival_rate=self.arrival_rate.value(),
            guide_time=self.guide_time.value(),
            ttl=self.ttl.value(),
            seed=self.seed.value(),
        )


# (key, label, format) -- the formats only print; they decide nothing
TALLY_FIELDS = (
    ("served", "served", "{:,}"),
    ("double_assignments", "double assign.", "{:,}"),
    ("throughput", "throughput", "{:.2f} /s"),
    ("wait_mean", "wait mean", "{:.2f} s"),
    ("wait_p99", "wait p99", "{:.2f} s"),
    ("wait_max", "wait max", "{:.2f} s"),
    ("lock_wait", "lock wait", "{:.1f} s"),
    ("idle_counter_seconds", "idle counter", "{:.1f} s"),
    ("claims", "claims", "{:,}"),
    ("claims_expired", "expired", "{:,}"),
    ("queued", "queued", "{:,}"),
    ("turned_away", "turned away", "{:,}"),
    ("retries", "retries", "{:,}"),
)
# figures drawn in a theme colour (its name) once they are > 0: a double assignment is a
# fault (red); a customer turned away by the full queue is a warning (the queue is bounded)
TALLY_ALARMS = {"double_assignments": "REF_LONG", "turned_away": "WARN"}


class TalliesPanel(QWidget):
    """Live tallies in two columns, painted in one go (no label per number);
    double assignments in red and customers turned away in the warning colour
    when > 0 (``TALLY_ALARMS``). ``text_of(key)`` reads a value back."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts: dict[str, str] = {key: "–" for key, _, _ in TALLY_FIELDS}
        self._alarmed: frozenset[str] = frozenset()  # keys shown in their alarm colour
        self._rows = (len(TALLY_FIELDS) + 1) // 2
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.apply_fonts()

    def apply_fonts(self) -> None:
        self._font = QFont(self.font())
        self._font.setPointSizeF(theme.pt(theme.BASE_POINT_SIZE))
        self._bold = QFont(self._font)
        self._bold.setBold(True)
        self._line = QFontMetrics(self._font).height() + 2
        self._texts = StaticTexts((self._font, self._bold))
        self.setFixedHeight(self._rows * self._line)
        self.update()

    def set_tallies(self, tallies) -> None:
        """Take new values; repaint only the rows whose text (or alarm colour) changed."""
        texts = {key: fmt.format(getattr(tallies, key)) for key, _, fmt in TALLY_FIELDS}
        alarmed = frozenset(key for key in TALLY_ALARMS if getattr(tallies, key) > 0)
        if texts == self.texts and alarmed == self._alarmed:
            return
        flipped = alarmed ^ self._alarmed
        old, self.texts, self._alarmed = self.texts, texts, alarmed
        half_w = self.width() / 2
        for i, (key, _, _) in enumerate(TALLY_FIELDS):
            if texts[key] != old[key] or key in flipped:
                col, row = divmod(i, self._rows)
                self.update(int(col * half_w), row * self._line, int(half_w) + 2, self._line + 2)

    def text_of(self, key: str) -> str:
        return self.texts[key]

    def color_of(self, key: str) -> str:
        """The colour a value is drawn in (double assignments: red once there are any;
        customers turned away: the warning colour)."""
        return getattr(theme, TALLY_ALARMS[key]) if key in self._alarmed else theme.FG

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.fillRect(event.rect(), QColor(theme.PANEL_BG))
        half_w = self.width() / 2
        muted = QColor(theme.MUTED)
        get, draw = self._texts.get, p.drawStaticText
        region = event.region()
        for i, (key, label, _) in enumerate(TALLY_FIELDS):
            col, row = divmod(i, self._rows)
            x0, top = col * half_w + 2, row * self._line + 1
            if not region.intersects(QRect(int(col * half_w), row * self._line, int(half_w) + 2, self._line + 2)):
                continue
            alarm = key in self._alarmed
            value = QColor(self.color_of(key))
            p.setFont(self._font)
            p.setPen(value if alarm else muted)
            draw(QPointF(x0, top), get(0, label)[0])
            st, w, _h = get(1, self.texts[key])
            p.setFont(self._bold)
            p.setPen(value)
            draw(QPointF(x0 + half_w - 14 - w, top), st)
        p.end()


class MessageLine(QWidget):
    """The view's message: up to three painted, word-wrapped lines, fixed height
    (a word-wrapped QLabel would make the tab's scroll area scroll)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self.error = False
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.apply_fonts()

    def apply_fonts(self) -> None:
        self._font = QFont(self.font())
        self._font.setPointSizeF(theme.pt(theme.BASE_POINT_SIZE))
        self._font.setBold(True)
        self.setFixedHeight(QFontMetrics(self._font).lineSpacing() * 3 + 4)
        self.update()

    def setText(self, text: str) -> None:
        self._text = text
        self.setToolTip(text)
        self.update()

    def text(self) -> str:
        return self._text

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setFont(self._font)
        p.setPen(QColor(theme.REF_LONG if self.error else theme.FG))
        p.drawText(self.rect().adjusted(2, 2, -2, -2),
                   int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap), self._text)
        p.end()


COMPARE_COLUMNS = ("strategy", "served", "double", "per s", "p99 s", "lock s")
COMPARE_HINT = "The same seeded workload under each strategy."


class CompareTable(QWidget):
    """The three strategies on one seeded workload, and the claim / long-lock ratio."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, len(COMPARE_COLUMNS))
        self.table.setHorizontalHeaderLabels(COMPARE_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(True)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.table.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustToContents)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # widths: _fit_columns
        header.setMinimumSectionSize(20)
        tips = ("",
                "customers seated (in the warning colour when others were turned away by the full "
                "queue: hover for how many)",
                "double assignments (the board's count)",
                "served per simulated second",
                "p99 wait: 99th percentile of arrival → seated, simulated s "
                "(over the most recent waits, at most SimConfig.wait_window)",
                "lock wait: staff-seconds spent waiting to acquire the lock")
        for c, tip in enumerate(tips):
            self.table.horizontalHeaderItem(c).setToolTip(tip)
        self.summary = QLabel(COMPARE_HINT)  # no word wrap: a wrapped label makes the tab scroll
        self.summary.setProperty("muted", True)
        self.results: dict | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addWidget(self.table)
        layout.addWidget(self.summary)
        layout.addStretch(1)
        self.apply_fonts()

    def apply_fonts(self) -> None:
        self.table.setStyleSheet(f"QTableView::item {{ padding: 0 4px; }} QHeaderView::section {{ padding: 2px 4px; "
                                 f"font-size: {theme.pt(9.5):.1f}pt; }}")
        line = int(QFontMetrics(self.font()).height() * 1.3)
        self.table.verticalHeader().setMinimumSectionSize(line)
        self.table.verticalHeader().setDefaultSectionSize(line)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The strategy names in full; the numbers share the rest."""
        total = self.table.viewport().width()
        first = QFontMetrics(self.table.font()).horizontalAdvance("short lock") + 16
        rest = max(20, (total - first) // (len(COMPARE_COLUMNS) - 1))
        self.table.setColumnWidth(0, total - rest * (len(COMPARE_COLUMNS) - 1))
        for c in range(1, len(COMPARE_COLUMNS)):
            self.table.setColumnWidth(c, rest)

    def set_results(self, results: dict, config: SimConfig) -> None:
        """``results``: strategy -> Tallies (``compare_async``)."""
        self.results = results
        self.table.setRowCount(len(results))
        for r, (key, t) in enumerate(results.items()):
            cells = (LABELS.get(key, key), f"{t.served:,}", f"{t.double_assignments:,}",
                     f"{t.throughput:.1f}", f"{t.wait_p99:.1f}", f"{t.lock_wait:.0f}")
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment((Qt.AlignmentFlag.AlignLeft if c == 0 else Qt.AlignmentFlag.AlignRight)
                                      | Qt.AlignmentFlag.AlignVCenter)
                if c == 1 and t.turned_away > 0:
                    item.setForeground(QColor(theme.WARN))
                    item.setToolTip(f"{t.turned_away:,} turned away: the queue was full "
                                    f"({config.queue_limit:,} waiting)")
                if c == 2 and t.double_assignments > 0:
                    item.setForeground(QColor(theme.REF_LONG))
                    f = item.font()
                    f.setBold(True)
                    item.setFont(f)
                self.table.setItem(r, c, item)
        self.apply_fonts()
        self._fit_columns()
        lines = []
        claim, long_ = results.get("claim"), results.get("long_lock")
        if claim is not None and long_ is not None and long_.throughput > 0:
            lines.append(f"<b>claim ÷ long lock throughput = {claim.throughput / long_.throughput:.1f}×</b>")
        lines.append(f"{config.customers:,} customers · seed {config.seed} · {config.staff} staff · "
                     f"{config.counters} counters")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setText("<br>".join(lines))

    def ratio_text(self) -> str:
        return self.summary.text()
