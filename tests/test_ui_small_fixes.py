"""Issue 19's small window fixes, each driven as a user would (offscreen, real qasync loop)."""

from __future__ import annotations

import asyncio
import collections

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QApplication, QDoubleSpinBox, QGroupBox, QLabel, QMenuBar, QSizeGrip

from lanemon.counters import SimConfig
from lanemon.ui.heartbeat.chart import PausedBadge
from lanemon.ui.kit import theme
from lanemon.ui.tools.testing import activated, run_window, wait_until


@pytest.fixture(autouse=True)
def _app(window_app):
    """The application; windows this file closed go, the look goes back to the default."""
    return window_app


# --- finding 6: mnemonics -----------------------------------------------------------------

def mnemonic(text: str) -> str | None:
    """The letter after a single "&" ("&&" is a literal ampersand), lower-cased."""
    i = 0
    while i < len(text) - 1:
        if text[i] == "&":
            if text[i + 1] != "&":
                return text[i + 1].lower()
            i += 1
        i += 1
    return None


def _mnemonics_in(widget) -> list[tuple[str, str]]:
    """(letter, text) of every button, buddied label and group box under ``widget``."""
    found = []
    for w in widget.findChildren(QAbstractButton) + widget.findChildren(QLabel) + widget.findChildren(QGroupBox):
        if isinstance(w, QLabel) and w.buddy() is None:
            continue
        text = w.title() if isinstance(w, QGroupBox) else w.text()
        letter = mnemonic(text)
        if letter is not None:
            found.append((letter, text))
    return found


def _duplicates(pairs):
    seen: dict[str, list[str]] = {}
    for letter, text in pairs:
        seen.setdefault(letter, []).append(text)
    return {letter: texts for letter, texts in seen.items() if len(texts) > 1}


def test_every_mnemonic_is_unique_in_its_scope(qtbot):
    """The menu bar and the tab titles answer Alt+letter in every tab: with each tab's buttons
    and labels, no letter may appear twice (a duplicate only moves the focus)."""
    async def scenario(win):
        bar = win.findChild(QMenuBar)
        menus = [(mnemonic(a.text()), a.text()) for a in bar.actions() if mnemonic(a.text())]
        tabs = [(mnemonic(win.tabs.tabText(i)), win.tabs.tabText(i)) for i in range(win.tabs.count())
                if mnemonic(win.tabs.tabText(i))]
        per_tab = {win.tabs.tabText(i): _mnemonics_in(win.tabs.widget(i)) for i in range(win.tabs.count())}
        return menus, tabs, per_tab

    rc, (menus, tabs, per_tab), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert {text.replace("&", "") for _, text in menus} == {"File", "Run", "View", "Help"}
    assert len(menus) == 4  # every menu has its letter
    assert _duplicates(menus + tabs) == {}
    assert sum(len(found) for found in per_tab.values()) > 20  # the tabs' controls were found
    for title, found in per_tab.items():
        assert _duplicates(menus + tabs + found) == {}, title


def test_alt_r_resets_the_counters_and_alt_d_holds_in_the_lanes(qtbot):
    """The letters a user reads on the buttons click them (not a menu's letter moving focus)."""
    async def scenario(win):
        win.show_view("counters")
        await activated(win)
        clicks = []
        win.views["counters"].reset_btn.clicked.connect(lambda: clicks.append("reset"))
        win.views["lanes"].controls.hold_button.clicked.connect(lambda: clicks.append("hold"))
        QTest.keyClick(win, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
        await wait_until(lambda: clicks, 10)
        win.show_view("lanes")
        hold = win.views["lanes"].controls.hold_button
        await wait_until(lambda: hold.isVisible(), 10)
        QTest.keyClick(win, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)
        await wait_until(lambda: len(clicks) > 1, 10)
        return clicks, hold.text()

    rc, (clicks, hold_text), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert clicks == ["reset", "hold"]
    assert hold_text == "Hol&d final save"


# --- finding 3: the counters form and the model agree on what is valid --------------------

def _run(scenario):
    rc, value, errors = run_window(scenario)
    assert rc == 0 and errors == []
    return value


def _counters(win):
    win.show_view("counters")
    return win.views["counters"]


def test_the_counters_inputs_start_where_the_model_does():
    """Each input's minimum is accepted by SimConfig and one step below it is refused."""
    from lanemon.counters import FLOORS
    from lanemon.ui.counters.controls import ConfigForm

    form = ConfigForm()
    checked = 0
    for name in ("staff", "counters", "ttl", "arrival_rate", "guide_time"):
        w = getattr(form, name)
        step = 10 ** -w.decimals() if isinstance(w, QDoubleSpinBox) else 1
        assert FLOORS[name].admits(w.minimum()), name
        assert not FLOORS[name].admits(w.minimum() - step), name
        SimConfig(**{name: w.minimum()})
        with pytest.raises(ValueError, match=name.split("_")[0]):
            SimConfig(**{name: type(w.minimum())(w.minimum() - step)})
        checked += 1
    assert checked == 5
    form.deleteLater()


def test_typing_staff_0_then_tab_says_so_and_start_runs_what_the_form_shows(qtbot):
    async def scenario(win):
        v = _counters(win)
        v.reset()                                 # a ready simulation with 8 staff
        await wait_until(lambda: v.form.staff.isVisible(), 10)
        v.form.staff.setFocus()
        await wait_until(lambda: v.form.staff.hasFocus(), 10)
        v.form.staff.selectAll()
        QTest.keyClicks(v.form.staff, "0")
        QTest.keyClick(v.form.staff, Qt.Key.Key_Tab)
        await wait_until(lambda: not v.form.staff.hasFocus(), 10)
        said, error, shown = v.message.text(), v.message.error, v.form.staff.value()
        qtbot.mouseClick(v.start_btn, Qt.MouseButton.LeftButton)
        await wait_until(lambda: v.running, 10)
        staff = v.sim.config.staff
        v.stop()
        return said, error, shown, staff

    said, error, shown, staff = _run(scenario)
    assert shown == 1
    assert error and said == "Staff: “0” is not accepted (1 to 64); it is 1 now."
    assert staff == 1


def test_start_after_a_refused_value_starts_nothing_and_says_why(qtbot):
    """A form value the model refuses (here forced below the floor) never lets Start run the
    simulation made from earlier settings."""
    async def scenario(win):
        v = _counters(win)
        v.reset()
        stale = v.sim
        v.form.staff.setMinimum(0)               # what the input allowed before the fix
        v.form.staff.setValue(0)
        ok = v.start()
        return ok, v.running, v.sim is stale, v.message.text(), v.message.error

    ok, running, same, said, error = _run(scenario)
    assert not ok and not running and same
    assert error and said == "Not started: staff must be an integer >= 1, not 0"


def test_start_runs_the_form_settings_not_an_older_ready_simulation(qtbot):
    async def scenario(win):
        v = _counters(win)
        v.reset()
        v.form.counters.blockSignals(True)       # a change the view was not told of
        v.form.counters.setValue(5)
        v.form.counters.blockSignals(False)
        ok = v.start()
        counters = v.sim.config.counters
        v.stop()
        return ok, counters

    ok, counters = _run(scenario)
    assert ok and counters == 5


# --- finding 7: messages readable in both themes -----------------------------------------

def _ink_and_paper(widget) -> tuple[QColor, QColor]:
    """The colours a widget is seen in: its most common pixel (the paper) and the pixel
    farthest from it (the ink of its text)."""
    img = widget.grab().toImage()
    counts = collections.Counter(img.pixel(x, y) for x in range(img.width()) for y in range(img.height()))
    paper = QColor.fromRgb(counts.most_common(1)[0][0])

    def distance(rgb: int) -> int:
        c = QColor.fromRgb(rgb)
        return abs(c.red() - paper.red()) + abs(c.green() - paper.green()) + abs(c.blue() - paper.blue())
    return QColor.fromRgb(max(counts, key=distance)), paper


def contrast(a: QColor, b: QColor) -> float:
    """The WCAG 2 contrast ratio of two colours (1 to 21; 4.5 is the floor for text)."""
    def luminance(c: QColor) -> float:
        def channel(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF())
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _runs_banner(win):
    return win.runs_panel.banner, lambda text, error: win.runs_panel.show_notice(text, error=error)


def _lanes_notice(win):
    controls = win.views["lanes"].controls
    return controls.notice, lambda text, error: controls.say(text, error=error)


@pytest.mark.parametrize("where", [_runs_banner, _lanes_notice], ids=["runs banner", "lanes notice"])
def test_messages_are_readable_after_each_presenter_toggle(qtbot, where):
    """"Chart written to…" said in presenter mode stayed white on light grey after F5; the
    Lanes notice took its error colour once (dark red, ~3.7:1 on the dark background)."""
    async def scenario(win):
        label, say = where(win)
        seen = []
        for error in (False, True):
            win.talk.set_presenter(True)
            say(f"Chart written to /tmp/chart-{error}.png", error)
            seen.append(("presenter", error, *_ink_and_paper(label)))
            win.talk.set_presenter(False)
            seen.append(("light", error, *_ink_and_paper(label)))
            win.talk.set_theme("dark")
            seen.append(("dark", error, *_ink_and_paper(label)))
            win.talk.set_theme("light")
            seen.append(("light again", error, *_ink_and_paper(label)))
        return [(mode, error, contrast(ink, paper), ink.name(), paper.name()) for mode, error, ink, paper in seen]

    rc, seen, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert len(seen) == 8
    for mode, error, ratio, ink, paper in seen:
        assert ratio >= 4.5, (mode, error, ink, paper)


# --- finding 7: the pause symbol and the paused header -------------------------------------

def _header_rects(chart):
    return {name: QRect(w.mapTo(chart, QPoint(0, 0)), w.size())
            for name, w in (("title", chart.title), ("live", chart.live), ("floor", chart.floor),
                            ("period", chart.period), ("window", chart.window))}


def test_paused_shows_a_drawn_symbol_and_moves_no_header_text(qtbot):
    async def scenario(win):
        chart, seen = win.chart, []
        await wait_until(lambda: chart.trace.xData is not None and len(chart.trace.xData) > 10, 20)
        for presenter in (False, True):
            win.talk.set_presenter(presenter)
            chart.set_paused(False)
            before = _header_rects(chart)
            chart.set_paused(True)
            badge = chart.paused_label
            await wait_until(lambda b=badge: b.isVisible(), 10)
            after = _header_rects(chart)
            where = QRect(badge.mapTo(chart, QPoint(0, 0)), badge.size())
            missing = [ch for ch in badge.text() if not QFontMetrics(badge.font()).inFontUcs4(ord(ch))]
            image = badge.grab().toImage()
            ink = QColor(theme.REF_FRAME if presenter else theme.WARN)
            bars = ([image.pixelColor(r.center().toPoint()).name() for r in badge.symbol_rects()]
                    if isinstance(badge, PausedBadge) else None)
            seen.append((presenter, before, after, where, badge.text(), missing, bars, ink.name(),
                         QRect(QPoint(0, 0), chart.size())))
            chart.set_paused(False)
        return seen

    rc, seen, errors = run_window(scenario, size=(1024, 700))
    assert rc == 0 and errors == []
    assert len(seen) == 2
    for presenter, before, after, where, text, missing, bars, ink, inside in seen:
        assert text == "paused" and missing == [], presenter      # no glyph a font may lack
        assert bars == [ink, ink], presenter                       # the symbol is painted
        assert after == before, presenter                          # pausing moves no header text
        assert inside.contains(where), presenter
        for name, rect in after.items():
            assert not rect.intersects(where), (presenter, name)


# --- finding 9 (whole run): a long whole run asks first ------------------------------------

SMALL = 200_000


async def _calibrated(win):
    await wait_until(lambda: win.controller.machine.rate_per_ms, 30)


def test_a_whole_run_longer_than_the_threshold_asks_first_and_no_starts_nothing(qtbot, monkeypatch):
    from lanemon.ui.runs import controller as controller_module

    async def scenario(win):
        c, panel = win.controller, win.runs_panel
        await _calibrated(win)
        asked: list[str] = []
        answer = {"yes": False}

        def confirm(text, start):
            asked.append(text)
            if answer["yes"]:
                start()
        panel.confirm_long_whole = confirm
        panel.set_job(SMALL, "iterations")
        panel.run_whole()                       # well under WHOLE_RUN_ASK_ABOVE_S: no question
        await wait_until(lambda: c.records and c.records[-1].status == "done", 30)
        quiet = (len(asked), len(c.records))
        # the same job counts as long once the threshold is below it
        monkeypatch.setattr(controller_module, "WHOLE_RUN_ASK_ABOVE_S", c.expected_s(SMALL, "whole") / 2, raising=False)
        panel.run_whole()                       # asked; the answer is no
        declined = (len(asked), len(c.records))
        answer["yes"] = True
        panel.run_whole()
        await wait_until(lambda: len(c.records) == 2 and c.records[-1].status == "done", 30)
        return quiet, declined, asked, [r.kind for r in c.records]

    rc, (quiet, declined, asked, kinds), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert quiet == (0, 1)
    assert declined == (1, 1)                   # asked, and no run started
    assert len(asked) == 2 and asked[0].startswith(f"A whole run of {SMALL:,} iterations holds the loop for about")
    assert kinds == ["whole", "whole"]


def test_the_long_whole_run_question_is_answered_by_the_keyboard(qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from lanemon.ui.runs import controller as controller_module

    monkeypatch.setattr(controller_module, "WHOLE_RUN_ASK_ABOVE_S", 0.0, raising=False)   # every whole run asks

    async def scenario(win):
        c, panel = win.controller, win.runs_panel
        await activated(win)
        await _calibrated(win)
        panel.set_job(SMALL, "iterations")
        seen = []
        for keys in ((Qt.Key.Key_Escape, Qt.KeyboardModifier.NoModifier),
                     (Qt.Key.Key_Return, Qt.KeyboardModifier.NoModifier),
                     (Qt.Key.Key_B, Qt.KeyboardModifier.AltModifier)):
            win.activateWindow()
            win.chart.setFocus()
            await wait_until(lambda: QApplication.focusWidget() is win.chart, 10)
            QTest.keyClick(win.chart, Qt.Key.Key_1)          # the Whole run shortcut
            await wait_until(lambda: any(b.isVisible() for b in win.findChildren(QMessageBox)), 10)
            box = next(b for b in win.findChildren(QMessageBox) if b.isVisible())
            started_while_asking = len(c.records)
            answered = []
            box.finished.connect(answered.append)
            await wait_until(lambda b=box: QApplication.activeWindow() is b, 10)   # it has the keyboard
            QTest.keyClick(QApplication.focusWidget() or box, *keys)
            await wait_until(lambda a=answered: a, 10)
            await wait_until(lambda: all(r.status != "running" for r in c.records), 30)
            seen.append((started_while_asking, len(c.records)))
        return seen, [r.status for r in c.records]

    rc, (seen, statuses), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert seen == [(0, 0), (0, 0), (0, 1)]     # Esc: no · Enter (the default): no · Alt+B: runs
    assert statuses == ["done"]


# --- status bar: a long message never runs into the lag figures ------------------------------

def _ink_columns(img, x0: int, x1: int) -> list[int]:
    """The columns in ``[x0, x1)`` with a pixel far from the image's most common colour."""
    counts = collections.Counter(img.pixel(x, y) for x in range(img.width()) for y in range(img.height()))
    paper = QColor.fromRgb(counts.most_common(1)[0][0])

    def ink(x: int) -> bool:
        for y in range(img.height()):
            c = QColor.fromRgb(img.pixel(x, y))
            if abs(c.red() - paper.red()) + abs(c.green() - paper.green()) + abs(c.blue() - paper.blue()) > 150:
                return True
        return False
    return [x for x in range(x0, x1) if ink(x)]


def test_a_long_status_message_keeps_a_gap_before_the_lag_figures(qtbot):
    """A long message ("Chart written to /a/long/path…") ran into "lag 0.17 ms" with no gap."""
    async def scenario(win):
        await wait_until(win.isVisible, 10)
        bar, lag_label, seen = win.statusBar(), win.lag_label, []
        grip = bar.findChild(QSizeGrip)
        for presenter in (False, True):
            win.talk.set_presenter(presenter)
            bar.showMessage("Chart written to /tmp/" + "a-very-long-folder-name/" * 12 + "chart.png", 15000)
            # the status bar laid out for this font: the lag figures have their room, inside the bar
            # (and the size grip at its place right of them: the message is painted left of both)
            def laid_out() -> bool:
                left, right = (lag_label.mapTo(bar, QPoint(x, 0)).x() for x in (0, lag_label.width()))
                return (lag_label.width() >= lag_label.minimumWidth() > 0 and 0 < right <= bar.width()
                        and (grip is None or not grip.isVisible() or grip.x() >= left))
            await wait_until(laid_out, 10)
            img = bar.grab().toImage()
            left = lag_label.mapTo(bar, QPoint(0, 0)).x()
            message, lag = _ink_columns(img, 0, left), _ink_columns(img, left, img.width())
            seen.append((presenter, message, lag, left))
        return seen

    rc, seen, errors = run_window(scenario, size=(1024, 768))
    assert rc == 0 and errors == []
    for presenter, message, lag, left in seen:
        assert message and lag, presenter                      # both are painted
        assert max(message) > left - 200, presenter            # the message is long: it fills its room
        assert min(lag) - max(message) > 12, (presenter, max(message), min(lag), left)   # a clear gap


def test_a_long_passing_message_is_elided_with_its_whole_text_as_tooltip(qtbot):
    """Qt's status bar cut a passing message at the lag figures ("Chart written to /tmp/a-very-
    long-fol"): neither the file's name nor that the text went on could be seen."""
    async def scenario(win):
        await wait_until(win.isVisible, 10)
        bar, seen = win.statusBar(), []
        for presenter in (False, True):
            win.talk.set_presenter(presenter)
            text = "Chart written to /tmp/" + "a-very-long-folder-name/" * 12 + "chart.png"
            bar.showMessage(text, 15000)
            await wait_until(lambda text=text: bar.currentMessage() == text, 10)
            room = bar.message_rect()
            lag_left = win.lag_label.mapTo(bar, QPoint(0, 0)).x()
            seen.append((text, bar.shown_message(), bar.toolTip(), room.right(), lag_left,
                         bar.fontMetrics().horizontalAdvance(bar.shown_message()), room.width()))
            bar.clearMessage()
            seen.append(bar.toolTip())
        return seen

    rc, seen, errors = run_window(scenario, size=(1024, 768))
    assert rc == 0 and errors == []
    for text, shown, tip, right, lag_left, advance, width in seen[0::2]:
        assert shown.endswith("…") and text.startswith(shown[:-1]) and len(shown) < len(text)
        assert tip == text
        assert advance <= width and right < lag_left        # drawn in its room, left of the lag figures
    assert all(tip != seen[0][0] for tip in seen[1::2])      # the tooltip goes with the message


def test_the_lag_figures_change_without_repainting_the_bar_and_look_the_same(qtbot):
    """The status bar's lag figures change 4 times a second: a transparent label made Qt repaint
    the bar (and the window under it) each time, ~0.33 ms. Opaque in the bar's own colour, it
    repaints only itself, and its background is the bar's, in both themes, in presenter mode
    and with a passing message shown (the bar painted no background of its own then: the
    window's showed through, darker than the label in presenter mode)."""
    from PySide6.QtCore import QEvent

    from lanemon.ui.tools.testing import EventCount

    async def scenario(win):
        await wait_until(win.isVisible, 10)
        bar, label, seen = win.statusBar(), win.lag_label, []
        for name in ("light", "dark"):
            win.talk.set_theme(name)
            await wait_until(lambda: label.width() > 0, 10)
            await asyncio.sleep(0.5)              # the theme's own repaint of the bar done
            paints, own = EventCount(QEvent.Type.Paint), EventCount(QEvent.Type.Paint)
            paints.watch(bar)
            own.watch(label)
            for i in range(5):
                n = own.n
                label.set_parts([("lag ", None, False), (f"{i}.{i}{i} ms", None, True)])
                await wait_until(lambda n=n, own=own: own.n > n, 5)   # the label's repaint (and any under it) done
            await asyncio.sleep(0.05)
            paints.unwatch(bar)
            own.unwatch(label)
            for presenter in (False, True):        # without and with a passing message
                win.talk.set_presenter(presenter)
                bar.showMessage("Run #3 done" if presenter else "", 15000)
                await asyncio.sleep(0.3)
                left = label.mapTo(win, QPoint(0, 0))
                img = win.grab().toImage()            # the bar as the window shows it
                # the label's top-left pixel (no text there) and the bar's just left of the label
                seen.append((name, paints.n, img.pixel(left.x() + 1, left.y()),
                             img.pixel(left.x() - 2, left.y())))
            win.talk.set_presenter(False)
        return seen

    rc, seen, errors = run_window(scenario, size=(1024, 768))
    assert rc == 0 and errors == []
    assert [s[0] for s in seen] == ["light", "light", "dark", "dark"]
    for name, paints, inside, outside in seen:
        assert paints == 0, (name, paints)            # five changes, no paint of the bar
        assert inside == outside, (name, hex(inside), hex(outside))
