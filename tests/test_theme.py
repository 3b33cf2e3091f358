"""Colours live only in ``lanemon/ui/kit/theme.py``, and every palette names every colour.

The package's source is read (tokens and syntax trees, not imported) for colour literals:
hex strings, ``rgb(...)``/``rgba(...)`` in style sheets and HTML, ``QColor``/pyqtgraph
colours built from numbers, and Qt's named global colours.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from PySide6.QtGui import QColor

from lanemon.ui.kit import theme

PACKAGE = Path(theme.__file__).resolve().parents[2]     # .../lanemon
THEME = Path(theme.__file__).resolve()

HEX = re.compile(r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")
CSS_RGB = re.compile(r"\brgba?\s*\(")
COLOR_CALLS = {"QColor", "mkColor", "mkBrush", "mkPen", "fromRgb", "fromRgbF", "fromHsv", "fromHsl"}
QT_NAMED = {"white", "black", "red", "green", "blue", "cyan", "magenta", "yellow", "gray",
            "darkGray", "lightGray", "darkRed", "darkGreen", "darkBlue", "darkCyan",
            "darkMagenta", "darkYellow"}

_PENDING: dict[str, set[str]] = {}   # modules allowed a literal, and which (none)


def colour_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every colour literal in one module's source."""
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING:
            found += [(tok.start[0], m.group(0)) for m in HEX.finditer(tok.string)]
            found += [(tok.start[0], "rgba(" if "rgba" in m.group(0) else "rgb(")
                      for m in CSS_RGB.finditer(tok.string)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in COLOR_CALLS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, (int, float)) and not isinstance(node.args[0].value, bool):
                found.append((node.lineno, f"{name}({node.args[0].value}, ...)"))
        elif isinstance(node, ast.Attribute) and node.attr in QT_NAMED:
            base = node.value
            if isinstance(base, ast.Name) and base.id == "Qt" or \
                    isinstance(base, ast.Attribute) and base.attr == "GlobalColor":
                found.append((node.lineno, f"Qt.{node.attr}"))
    return found


def test_the_scanner_finds_each_kind_of_colour_literal():
    source = """\
a = "#1f77b4"
b = f"color: #fff; border: 2px solid {x}"
c = "background: rgba(0, 0, 0, 150)"
d = QColor(120, 120, 120)
e = pg.mkBrush(1, 2, 3, 4)
f = Qt.GlobalColor.white
g = Qt.black
h = "#shortcutPanel { x }"      # an id selector, not a colour
i = QColor(theme.FG)             # a named colour
j = "#12"                        # an issue number
"""
    assert [line for line, _ in colour_literals(source)] == [1, 2, 3, 4, 5, 6, 7]


def test_no_module_outside_the_theme_holds_a_colour_literal():
    stray = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.resolve() == THEME:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        allowed = _PENDING.get(rel, set())
        stray += [f"lanemon/{rel}:{line}: {lit}"
                  for line, lit in colour_literals(path.read_text(encoding="utf-8")) if lit not in allowed]
    assert not stray, "colours belong in lanemon/ui/kit/theme.py:\n" + "\n".join(stray)


def _valid(value) -> bool:
    if isinstance(value, tuple) and all(isinstance(v, int) and 0 <= v <= 255 for v in value):
        return len(value) in (3, 4)                         # RGB(A), e.g. for pg.mkBrush(*value)
    if isinstance(value, str) and CSS_RGB.match(value):
        return re.fullmatch(r"rgba?\((\s*\d{1,3}\s*,){2,3}\s*\d{1,3}\s*\)", value) is not None
    return isinstance(value, str) and QColor(value).isValid()


def _shape(value):
    """What must agree between palettes: a dict's keys and its values' shapes, a tuple's length."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return ("tuple of colours", len(value))
    return "rgba" if isinstance(value, tuple) else "colour"


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        yield from value
    else:
        yield value


@pytest.mark.parametrize("name", sorted(theme.PALETTES))
def test_every_palette_defines_every_colour_the_light_one_has(name):
    palette, light = theme.PALETTES[name], theme.PALETTES["light"]
    assert set(palette) == set(theme.COLOR_NAMES) == set(light)
    for key in theme.COLOR_NAMES:
        assert _shape(palette[key]) == _shape(light[key]), key
        bad = [v for v in _leaves(palette[key]) if not _valid(v)]
        assert not bad, f"{name}.{key}: not a colour: {bad}"


def test_set_palette_swaps_every_name_and_back():
    dicts = {n: getattr(theme, n) for n in theme.COLOR_NAMES if isinstance(getattr(theme, n), dict)}
    assert "KIND_COLORS" in dicts and "QUEUE_COLORS" in dicts
    try:
        for name in ("dark", "light"):
            theme.set_palette(name)
            for key, value in theme.PALETTES[name].items():
                assert getattr(theme, key) == value, (name, key)
            for key, d in dicts.items():      # updated in place: importers keep seeing the theme
                assert getattr(theme, key) is d
            assert theme.PLACE_COLORS == {"loop": theme.PLACE_LOOP, "slice": theme.KIND_COLORS["sliced"],
                                          "worker": theme.KIND_COLORS["warm"]}
    finally:
        theme.set_palette("light")
    with pytest.raises(ValueError):
        theme.set_palette("sepia")
    assert theme.palette_name() == "light" and theme.BG == theme.PALETTES["light"]["BG"]


def test_painted_widgets_take_their_colours_from_the_palette(qapp, monkeypatch):
    """A counter cell and a staff chip are painted in the palette's colours, read when the
    palette is applied: a changed palette value reaches the pixels."""
    from lanemon.ui.counters.grid import CLAIMED, Cell, Chip, CountersGrid, StaffStrip

    fill, chip_fill = "#123456", "#654321"
    dark = dict(theme.PALETTES["dark"])
    dark["COUNTER_CLAIMED"] = (fill, "#000000", "#ffffff")
    dark["STAFF_STATE_COLORS"] = {**dark["STAFF_STATE_COLORS"], "choosing": (chip_fill, "#ffffff")}
    monkeypatch.setitem(theme.PALETTES, "dark", dark)
    grid, strip = CountersGrid(), StaffStrip()
    try:
        theme.set_palette("dark")
        grid.apply_fonts()
        strip.apply_fonts()
        grid.resize(300, 200)
        grid.set_cells([Cell(0, CLAIMED, "", "", None, ())])
        strip.resize(300, 40)
        strip.set_chips([Chip("ann", "choosing", "", False)])
        cell = grid.grab().toImage().pixelColor(290, 190)
        chip = strip.grab().toImage().pixelColor(150, 5)
        assert cell.name() == fill and chip.name() == chip_fill
    finally:
        theme.set_palette("light")
        grid.deleteLater()
        strip.deleteLater()


def test_the_lanes_timeline_follows_the_palette(qapp):
    """Regression: in presenter mode the timeline stayed a white plot with dark axes (its
    background and axes were pyqtgraph's defaults, taken once, in the light palette)."""
    from lanemon.ui.lanes.timeline import LanesTimeline

    timeline = LanesTimeline()
    try:
        for name in ("dark", "light"):
            theme.set_palette(name)
            timeline.apply_fonts()
            timeline.resize(400, 200)
            image = timeline.plot.grab().toImage()
            corner = image.pixelColor(image.width() - 3, 3)   # plot background, no bar
            axis = timeline.plot.getPlotItem().getAxis("left")
            assert corner.name() == theme.BG, name
            assert axis.textPen().color().name() == theme.FG, name
            assert timeline.empty.color.name() == theme.MUTED, name
    finally:
        theme.set_palette("light")
        timeline.deleteLater()


def test_a_disabled_button_does_not_look_like_one_that_acts(qapp):
    """In store mode the Lanes tab's Cancel / Hold / ... are disabled, yet they were drawn
    exactly as enabled ones (disabled text kept FG): a disabled button's text is muted and
    its border dashed, in both palettes."""
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

    def colours(button) -> set[str]:
        img = button.grab().toImage()
        return {img.pixelColor(x, y).name() for x in range(img.width()) for y in range(img.height())}

    try:
        for name in ("light", "dark"):
            theme.set_palette(name)
            theme.apply_font_and_palette(qapp)
            box = QWidget()
            row = QHBoxLayout(box)
            on, off = QPushButton("Hold final save"), QPushButton("Hold final save")
            off.setEnabled(False)
            row.addWidget(on)
            row.addWidget(off)
            box.setStyleSheet(theme.stylesheet())
            box.show()
            qapp.processEvents()
            fg, muted = QColor(theme.FG).name(), QColor(theme.MUTED).name()
            assert fg in colours(on), name
            assert fg not in colours(off) and muted in colours(off), name
            box.close()
    finally:
        theme.set_palette("light")
        theme.apply_font_and_palette(qapp)
