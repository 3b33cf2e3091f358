"""Colours and type, chosen for a projector: light background, saturated
kind colours, large text. ``font_scale`` scales every font (presenter mode
hook: ``apply(app, scale)`` may be called again at any time).

Two palettes: "light" (default) and "dark" (presenter mode, high contrast).
``set_palette(name)`` swaps the colour values of this module in place (read
them as ``theme.FG`` at draw time, not copied at import); ``apply`` then
restyles the application.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

# Run kinds, in the order they appear in the UI.
KIND_COLORS = {
    "whole": "#d62728",   # red: the loop is blocked
    "sliced": "#2ca02c",  # green: the loop keeps breathing
    "cold": "#9467bd",    # purple: a process per run
    "warm": "#1f77b4",    # blue: a pre-started pool
    "thread": "#ff7f0e",  # orange: shares the GIL
}
KIND_LABELS = {
    "whole": "whole",
    "sliced": "sliced",
    "cold": "worker · cold",
    "warm": "worker · warm",
    "thread": "worker · thread",
}
PLACE_COLORS = {"loop": "#555555", "slice": KIND_COLORS["sliced"], "worker": KIND_COLORS["warm"]}

BG = "#ffffff"
PANEL_BG = "#f6f7f9"
FG = "#1d2330"
MUTED = "#5d6678"
GRID = "#e3e6eb"
LAG_PEN = "#1d2330"
REF_FRAME = "#e6a700"   # 16.7 ms: one frame
REF_LONG = "#d62728"    # 50 ms: a long task
BORDER = "#c5cbd5"      # buttons, inputs
HOVER = "#eef2f7"
SELECTION = "#dbe7f6"
DISABLED = "#b9bec8"
WARN = "#a05a00"
RUN_TEXT = "#ffffff"    # text on a run button

# Palettes: "light" (the default) and "dark" (presenter mode: high contrast on a
# projector, brighter kind colours). ``set_palette`` swaps the values above in place.
PALETTES = {
    "light": dict(BG=BG, PANEL_BG=PANEL_BG, FG=FG, MUTED=MUTED, GRID=GRID, LAG_PEN=LAG_PEN,
                  REF_FRAME=REF_FRAME, REF_LONG=REF_LONG, BORDER=BORDER, HOVER=HOVER,
                  SELECTION=SELECTION, DISABLED=DISABLED, WARN=WARN, RUN_TEXT=RUN_TEXT,
                  KIND_COLORS=dict(KIND_COLORS)),
    "dark": dict(BG="#05070b", PANEL_BG="#131924", FG="#ffffff", MUTED="#c3cad6", GRID="#3b4454",
                 LAG_PEN="#ffffff", REF_FRAME="#ffd23f", REF_LONG="#ff5c5c", BORDER="#5b6578",
                 HOVER="#263043", SELECTION="#2d4f7c", DISABLED="#4a5162", WARN="#ffb347",
                 RUN_TEXT="#05070b",
                 KIND_COLORS={"whole": "#ff5c5c", "sliced": "#4be37a", "cold": "#c9a2ff",
                              "warm": "#4db8ff", "thread": "#ffa94d"}),
}
_palette = "light"

BASE_POINT_SIZE = 11.0

_scale = 1.0


def palette_name() -> str:
    """The current palette: "light" or "dark"."""
    return _palette


def is_dark() -> bool:
    return _palette == "dark"


def set_palette(name: str) -> None:
    """Switch the colours (module values and ``KIND_COLORS``); ``apply`` then restyles the app."""
    global _palette
    if name not in PALETTES:
        raise ValueError(f"unknown palette {name!r}; known: {', '.join(PALETTES)}")
    _palette = name
    values = dict(PALETTES[name])
    KIND_COLORS.clear()
    KIND_COLORS.update(values.pop("KIND_COLORS"))
    PLACE_COLORS.update(slice=KIND_COLORS["sliced"], worker=KIND_COLORS["warm"],
                        loop="#c3cad6" if name == "dark" else "#555555")
    globals().update(values)


def font_scale() -> float:
    """The current font scale (1.0 = normal; presenter mode sets more)."""
    return _scale


def pt(size: float) -> float:
    """A point size scaled by the current ``font_scale``."""
    return size * _scale


def kind_color(kind: str, alpha: int = 255) -> QColor:
    color = QColor(KIND_COLORS.get(kind, "#777777"))
    color.setAlpha(alpha)
    return color


def stylesheet() -> str:
    """The application's style sheet.

    Cost: a ``background`` on ``QTableView`` makes Qt's style-sheet style
    paint every cell through its slow rule path (a table of 10 rows took
    2-3x longer to repaint); the tables' background is the palette's ``Base``
    instead (``BG``, set by ``_apply_qpalette``). Only palette-like properties
    (colours of grid, alternate rows, selection) stay on ``QTableView``.
    Likewise the text colour ``FG`` is the palette's (``_apply_qpalette``),
    not a ``QWidget { color }`` rule, which every widget would match.
    """
    s = _scale
    return f"""
    QMainWindow, QTabWidget::pane {{ background: {BG}; }}
    QTabWidget::pane {{ border: 1px solid {GRID}; border-radius: 4px; top: -1px; }}
    QTabBar::tab {{ padding: {5*s:.0f}px {16*s:.0f}px; background: {PANEL_BG}; border: 1px solid {GRID};
                    border-bottom: none; border-top-left-radius: 4px; border-top-right-radius: 4px;
                    margin-right: 2px; color: {MUTED}; }}
    QTabBar::tab:selected {{ background: {BG}; color: {FG}; font-weight: bold; }}
    QGroupBox {{ font-weight: bold; border: 1px solid {GRID}; border-radius: 6px;
                 margin-top: {12*s:.0f}px; padding-top: {6*s:.0f}px; background: {PANEL_BG}; }}
    QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px; color: {MUTED}; }}
    QTableView {{ gridline-color: {GRID}; alternate-background-color: {PANEL_BG};
                  selection-background-color: {SELECTION}; selection-color: {FG}; }}
    QTableView::item {{ padding: 0 {8*s:.0f}px; }}
    QHeaderView::section {{ background: {PANEL_BG}; color: {MUTED}; border: none;
                            border-bottom: 1px solid {GRID}; padding: 3px 6px; font-weight: bold; }}
    QPushButton {{ padding: {4*s:.0f}px {12*s:.0f}px; border: 1px solid {BORDER}; border-radius: 5px;
                   background: {BG}; }}
    QPushButton:hover {{ background: {HOVER}; }}
    QPushButton[run="true"] {{ color: {RUN_TEXT}; font-weight: bold; border: none;
                               padding: {7*s:.0f}px {10*s:.0f}px; }}
    QStatusBar {{ background: {PANEL_BG}; color: {MUTED}; border-top: 1px solid {GRID}; }}
    QLabel[muted="true"] {{ color: {MUTED}; }}
    """


def run_button_style(kind: str) -> str:
    c = kind_color(kind)
    dark = c.darker(125).name()
    return (f"QPushButton {{ background: {c.name()}; }} QPushButton:hover {{ background: {dark}; }}"
            f"QPushButton:disabled {{ background: {DISABLED}; }}")


def apply(app: QApplication, scale: float | None, sheet_on) -> None:
    """Apply the font (``scale``, if not ``None``, changes ``font_scale``) and the palette to
    the application, and the style sheet to ``sheet_on`` (a window and its children).

    The sheet belongs on the main window, not the application: a new application-wide
    sheet restyles every widget of the application, menus and popups included (~200 ms
    with the main window's ~500 widgets), the window's own only its widgets (~45 ms); a
    presenter-mode toggle is that restyle. Widgets outside the window (dialogs without a
    parent) follow the application's palette and font.
    """
    apply_font_and_palette(app, scale)
    sheet = stylesheet()
    if sheet_on.styleSheet() != sheet:     # restyling is the slow part: only on a change
        sheet_on.setStyleSheet(sheet)


def apply_font_and_palette(app: QApplication, scale: float | None = None) -> None:
    """The application's font (``scale`` changes ``font_scale``) and palette; no style sheet."""
    global _scale
    if scale is not None:
        _scale = max(0.5, float(scale))
    font = QFont("DejaVu Sans")
    font.setPointSizeF(BASE_POINT_SIZE * _scale)
    app.setFont(font)
    _apply_qpalette(app)


_GROUPS = (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled)
_light_qpalette: QPalette | None = None   # the app's own palette, kept when dark is first applied


def _apply_qpalette(app: QApplication) -> None:
    """Inputs, menus and tooltips follow the palette too (the stylesheet does not reach them all)."""
    global _light_qpalette
    if not is_dark():
        if _light_qpalette is not None:
            app.setPalette(_light_qpalette)
        pal = QPalette(app.palette())
        role = QPalette.ColorRole
        # tables (and inputs) on BG, text in FG: what the style sheet's rules did, cheaper
        wanted = ((role.Base, BG), (role.WindowText, FG), (role.Text, FG), (role.ButtonText, FG),
                  (role.ToolTipText, FG))
        if any(pal.color(g, r) != QColor(v) for r, v in wanted for g in _GROUPS):
            for r, v in wanted:
                pal.setColor(r, QColor(v))    # every state, disabled too, as the rule did
            app.setPalette(pal)
        return
    if _light_qpalette is None:
        _light_qpalette = QPalette(app.palette())
    pal = QPalette()
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    for r, value in ((role.Window, PANEL_BG), (role.WindowText, FG), (role.Base, BG),
                     (role.AlternateBase, PANEL_BG), (role.Text, FG), (role.Button, PANEL_BG),
                     (role.ButtonText, FG), (role.BrightText, "#ffffff"), (role.ToolTipBase, PANEL_BG),
                     (role.ToolTipText, FG), (role.Highlight, SELECTION), (role.HighlightedText, FG),
                     (role.PlaceholderText, MUTED), (role.Link, KIND_COLORS["warm"]),
                     (role.Light, BORDER), (role.Midlight, GRID), (role.Mid, BORDER),
                     (role.Dark, "#000000"), (role.Shadow, "#000000")):
        pal.setColor(r, QColor(value))
    # Disabled text stays FG: the look the old ``QWidget { color }`` rule gave (it
    # overrode every state); greying it out would be a visible change.
    for r in (role.WindowText, role.Text, role.ButtonText):
        pal.setColor(group.Disabled, r, QColor(FG))
    app.setPalette(pal)


def style_axes(plot, base: QFont, size: float = 10.0) -> QFont:
    """Scaled font for a pyqtgraph plot's left and bottom axes (ticks and
    titles); returns the font so callers can reuse it."""
    font = QFont(base)
    font.setPointSizeF(pt(size))
    for name in ("left", "bottom"):
        ax = plot.getPlotItem().getAxis(name)
        ax.setStyle(tickFont=font)
        ax.label.setFont(font)
    return font


def mono_font(size: float | None = None) -> QFont:
    font = QFont("DejaVu Sans Mono")
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPointSizeF(pt(size or BASE_POINT_SIZE))
    return font
