"""Colours and type, chosen for a projector: light background, saturated
kind colours, large text. ``font_scale`` scales every font (presenter mode
hook: ``apply(app, scale)`` may be called again at any time).

Every colour of the window is a name here (``COLOR_NAMES``), by what it
shows. Two palettes: "light" (default) and "dark" (presenter mode, high
contrast), each defining every name. ``set_palette(name)`` swaps the colour
values of this module in place (read them as ``theme.FG`` at draw time, not
copied at import); ``apply`` then restyles the application.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

# Every colour of the window lives here, named by what it shows; no other module
# holds a colour literal (tests/test_theme.py greps the package). The values
# below are the "light" palette; ``PALETTES["dark"]`` gives every name its
# presenter value. Read them as ``theme.NAME`` when drawing or restyling (the
# dicts are updated in place, the other names rebound, by ``set_palette``).

# Run kinds, in the order they appear in the UI.
KIND_COLORS = {
    "whole": "#d62728",   # red: the loop is blocked
    "sliced": "#2ca02c",  # green: the loop keeps breathing
    "cold": "#9467bd",    # purple: a process per run
    "warm": "#1f77b4",    # blue: a pre-started pool
    "thread": "#ff7f0e",  # orange: shares the GIL
}
KIND_UNKNOWN = "#777777"  # a kind not in KIND_COLORS
KIND_LABELS = {
    "whole": "whole",
    "sliced": "sliced",
    "cold": "worker · cold",
    "warm": "worker · warm",
    "thread": "worker · thread",
}
PLACE_LOOP = "#555555"    # placement "loop" (slice and worker take their kind's colour)
PLACE_COLORS = {"loop": PLACE_LOOP, "slice": KIND_COLORS["sliced"], "worker": KIND_COLORS["warm"]}

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
ERROR_TEXT = "#c92a2a"  # text that reports a failure or a refusal (a stop request, busy outside)
OK_TEXT = "#1e7b34"     # text that reports a success (a run that succeeded, invariants held)

# Qt palette roles that only the dark palette sets (the light one keeps the platform's).
QT_BRIGHT_TEXT = "#ffffff"
QT_SHADOW = "#000000"   # the roles Dark and Shadow

# Heartbeat chart: the shaded span of a controller phase (calibration, worker start), RGBA.
PHASE_FILL = (120, 120, 120, 35)
PHASE_EDGE = (160, 160, 160, 120)

# Counters grid: (fill, border, text) of a counter by what holds it (a free counter
# is PANEL_BG / BORDER / MUTED).
COUNTER_CLAIMED = ("#ffe6a1", "#e6a700", "#4a3600")   # claimed, no customer seated yet: amber
COUNTER_ASSIGNED = ("#d3e4f7", "#1f77b4", "#0d3a63")  # a customer seated: blue
COUNTER_DOUBLE = ("#d62728", "#8f1213", "#ffffff")    # more than one customer seated: red
CLAIM_TTL_BAR = "#e6a700"                             # a claim's time left, under its text
# Staff strip: staff state -> (fill, text) (idle and done are PANEL_BG / MUTED).
STAFF_STATE_COLORS = {
    "waiting_lock": ("#f7c6c6", "#8f1213"),
    "choosing": ("#e3d7f3", "#4b2a7a"),
    "guiding": ("#d3e4f7", "#0d3a63"),
    "away": ("#5d6678", "#ffffff"),
    "waiting_counter": ("#fff1c9", "#5a4200"),
}
STAFF_SELECTED = "#1f77b4"   # the ring around the chosen staff member's chip

# Lanes: a job's state label -> (text, background) of its badge.
JOB_STATE_COLORS = {
    "queued": ("#7a5a00", "#fff1c2"),
    "starting": ("#1f5fa8", "#dbe9f8"),
    "running": ("#1f5fa8", "#dbe9f8"),
    "saving": ("#6a3d9a", "#ece2f5"),
    "save held": ("#ffffff", "#d9480f"),
    "stopping": ("#9c2f00", "#ffe0cc"),
    "succeeded": ("#1e7b34", "#dcf2e0"),
    "failed": ("#ffffff", "#c92a2a"),
    "unsaved": ("#ffffff", "#c92a2a"),   # over, but its final record was not written: as failed
    "cancelled": ("#4a5262", "#e4e7ec"),
}
QUEUE_COLORS = {"reservations": "#1f77b4", "cafe": "#e8590c"}   # a queue's runs and its name
HELD_SAVE = "#d9480f"     # a held final save: the timeline's hatched tail, the "holds" figure
WAITING_JOB = "#9aa3b2"   # a job waiting for its lane: the timeline's thin line
OVERLAP_RUN = "#e03131"   # a followed store: a run of a workspace that overlapped another (timeline, figure)

# The shortcut overlay (talk mode): a dark panel over a shaded window, in both palettes.
SHORTCUT_SHADE = "rgba(0, 0, 0, 150)"     # over the window
SHORTCUT_PANEL = "rgba(12, 16, 24, 238)"
SHORTCUT_BORDER = "#5b6578"
SHORTCUT_TEXT = "#ffffff"
SHORTCUT_KEY = "#ffd23f"                  # the keys column
SHORTCUT_HINT = "#c3cad6"                 # "Esc, F1 or a click closes this"

# A talk (lanemon.ui.talk): the caption's accent (its step counter and left edge) and the
# blank screen (B or "."), black in both palettes as a projector's blank is.
TALK_ACCENT = "#1f5fa8"
TALK_BLANK = "#000000"

# Probed programs (the Programs tab and their lag lines on the heartbeat chart): a program's
# colour is PROGRAM_COLORS[its index % len]; chosen apart from the run kinds' shading.
PROGRAM_COLORS = ("#0c8599", "#c2255c", "#5c940d", "#7048e8", "#e8590c", "#1864ab", "#a61e4d", "#2b8a3e")
PROGRAM_STALE = "#9aa3b2"                 # a program gone silent (its row, its line)

# Recording and replay (lanemon.ui.replay): the REC badge while recording, the replay's
# position on its heartbeat chart, and the ring around the two staff members and the
# counter of a double assignment being explained (drawn over the cells' own colours).
RECORDING = "#d62728"
REPLAY_CURSOR = "#1098ad"
RACE_HIGHLIGHT = "#5f3dc4"

COLOR_NAMES = (
    "KIND_COLORS", "KIND_UNKNOWN", "PLACE_LOOP",
    "BG", "PANEL_BG", "FG", "MUTED", "GRID", "LAG_PEN", "REF_FRAME", "REF_LONG", "BORDER", "HOVER",
    "SELECTION", "DISABLED", "WARN", "RUN_TEXT", "ERROR_TEXT", "OK_TEXT",
    "QT_BRIGHT_TEXT", "QT_SHADOW", "PHASE_FILL", "PHASE_EDGE",
    "COUNTER_CLAIMED", "COUNTER_ASSIGNED", "COUNTER_DOUBLE", "CLAIM_TTL_BAR",
    "STAFF_STATE_COLORS", "STAFF_SELECTED", "JOB_STATE_COLORS", "QUEUE_COLORS", "HELD_SAVE",
    "WAITING_JOB", "OVERLAP_RUN", "SHORTCUT_SHADE", "SHORTCUT_PANEL", "SHORTCUT_BORDER", "SHORTCUT_TEXT",
    "SHORTCUT_KEY", "SHORTCUT_HINT", "PROGRAM_COLORS", "PROGRAM_STALE", "TALK_ACCENT", "TALK_BLANK",
    "RECORDING", "REPLAY_CURSOR", "RACE_HIGHLIGHT",
)
"""The names every palette defines (``PLACE_COLORS`` follows from them)."""

# Palettes: "light" (the default: the values above) and "dark" (presenter mode: high
# contrast on a projector, brighter kind colours). ``set_palette`` swaps the values in place.
# The dark palette keeps the light value (today's presenter look) of the colours drawn on
# their own fill (counter cells, staff chips, job badges, timeline bars), of the overlay,
# which is dark already, and of ERROR_TEXT and OK_TEXT: on the dark BG those two contrast
# only ~3.7:1 (3.2:1 on PANEL_BG), below the 4.5:1 of the rest: candidates for a brighter
# presenter value (e.g. REF_LONG's and KIND_COLORS["sliced"]'s), a visible change.
PALETTES = {
    "light": {name: (dict(value) if isinstance(value, dict) else value)
              for name, value in ((n, globals()[n]) for n in COLOR_NAMES)},
    "dark": {
        "BG": "#05070b", "PANEL_BG": "#131924", "FG": "#ffffff", "MUTED": "#c3cad6", "GRID": "#3b4454",
        "LAG_PEN": "#ffffff", "REF_FRAME": "#ffd23f", "REF_LONG": "#ff5c5c", "BORDER": "#5b6578",
        "HOVER": "#263043", "SELECTION": "#2d4f7c", "DISABLED": "#4a5162", "WARN": "#ffb347",
        "RUN_TEXT": "#05070b",
        "KIND_COLORS": {"whole": "#ff5c5c", "sliced": "#4be37a", "cold": "#c9a2ff",
                        "warm": "#4db8ff", "thread": "#ffa94d"},
        "KIND_UNKNOWN": "#777777", "PLACE_LOOP": "#c3cad6",
        "ERROR_TEXT": "#c92a2a", "OK_TEXT": "#1e7b34",
        "QT_BRIGHT_TEXT": "#ffffff", "QT_SHADOW": "#000000",
        "PHASE_FILL": (120, 120, 120, 35), "PHASE_EDGE": (160, 160, 160, 120),
        "COUNTER_CLAIMED": ("#ffe6a1", "#e6a700", "#4a3600"),
        "COUNTER_ASSIGNED": ("#d3e4f7", "#1f77b4", "#0d3a63"),
        "COUNTER_DOUBLE": ("#d62728", "#8f1213", "#ffffff"),
        "CLAIM_TTL_BAR": "#e6a700",
        "STAFF_STATE_COLORS": {
            "waiting_lock": ("#f7c6c6", "#8f1213"),
            "choosing": ("#e3d7f3", "#4b2a7a"),
            "guiding": ("#d3e4f7", "#0d3a63"),
            "away": ("#5d6678", "#ffffff"),
            "waiting_counter": ("#fff1c9", "#5a4200"),
        },
        "STAFF_SELECTED": "#1f77b4",
        "JOB_STATE_COLORS": {
            "queued": ("#7a5a00", "#fff1c2"),
            "starting": ("#1f5fa8", "#dbe9f8"),
            "running": ("#1f5fa8", "#dbe9f8"),
            "saving": ("#6a3d9a", "#ece2f5"),
            "save held": ("#ffffff", "#d9480f"),
            "stopping": ("#9c2f00", "#ffe0cc"),
            "succeeded": ("#1e7b34", "#dcf2e0"),
            "failed": ("#ffffff", "#c92a2a"),
            "unsaved": ("#ffffff", "#c92a2a"),
            "cancelled": ("#4a5262", "#e4e7ec"),
        },
        "QUEUE_COLORS": {"reservations": "#1f77b4", "cafe": "#e8590c"},
        "HELD_SAVE": "#d9480f", "WAITING_JOB": "#9aa3b2", "OVERLAP_RUN": "#ff6b6b",
        "SHORTCUT_SHADE": "rgba(0, 0, 0, 150)", "SHORTCUT_PANEL": "rgba(12, 16, 24, 238)",
        "SHORTCUT_BORDER": "#5b6578", "SHORTCUT_TEXT": "#ffffff", "SHORTCUT_KEY": "#ffd23f",
        "SHORTCUT_HINT": "#c3cad6",
        "PROGRAM_COLORS": ("#3bc9db", "#ff8cc6", "#a9e34b", "#b197fc", "#ffa94d", "#74c0fc", "#f783ac",
                           "#69db7c"),
        "PROGRAM_STALE": "#6c7588",
        "TALK_ACCENT": "#ffd23f", "TALK_BLANK": "#000000",
        "RECORDING": "#ff5c5c", "REPLAY_CURSOR": "#3bc9db", "RACE_HIGHLIGHT": "#ffd23f",
    },
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
    """Switch every name of ``COLOR_NAMES`` to the palette's value; ``apply`` then restyles the app.

    The dicts (``KIND_COLORS``, ``QUEUE_COLORS``, ...) are updated in place, so a module
    that imported one sees the new values; the other names are rebound (read them as
    ``theme.NAME``). ``PLACE_COLORS`` follows ``PLACE_LOOP`` and the kind colours. An
    unknown palette raises ``ValueError`` and changes nothing.
    """
    global _palette
    if name not in PALETTES:
        raise ValueError(f"unknown palette {name!r}; known: {', '.join(PALETTES)}")
    _palette = name
    for key, value in PALETTES[name].items():
        current = globals()[key]
        if isinstance(current, dict):
            fresh = dict(value)
            current.clear()
            current.update(fresh)
        else:
            globals()[key] = value
    PLACE_COLORS.update(loop=PLACE_LOOP, slice=KIND_COLORS["sliced"], worker=KIND_COLORS["warm"])


def font_scale() -> float:
    """The current font scale (1.0 = normal; presenter mode sets more)."""
    return _scale


def pt(size: float) -> float:
    """A point size scaled by the current ``font_scale``."""
    return size * _scale


def program_color(index: int, alpha: int = 255) -> QColor:
    """The colour of the probed program with this stable ``index`` (``ProgramView.index``)."""
    color = QColor(PROGRAM_COLORS[index % len(PROGRAM_COLORS)])
    color.setAlpha(alpha)
    return color


def kind_color(kind: str, alpha: int = 255) -> QColor:
    color = QColor(KIND_COLORS.get(kind, KIND_UNKNOWN))
    color.setAlpha(alpha)
    return color


def stylesheet() -> str:
    """The style sheet of a region of the main window (``restyle``): every rule but the
    frame's (``frame_stylesheet``); it changes with the palette and the font scale.

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
    QPushButton:disabled {{ color: {MUTED}; background: {PANEL_BG}; border-style: dashed; }}
    QPushButton[run="true"] {{ color: {RUN_TEXT}; font-weight: bold; border: none;
                               padding: {7*s:.0f}px {10*s:.0f}px; }}
    QStatusBar {{ background: {PANEL_BG}; color: {MUTED}; border-top: 1px solid {GRID}; }}
    QLabel[muted="true"] {{ color: {MUTED}; }}
    """


FRAME_PROPERTY = "themePalette"
"""The dynamic property (the palette's name) that selects a frame widget's rules."""


def frame_stylesheet() -> str:
    """The main window's own style sheet: the window's and the tab pane's background and
    border, for every palette at once, selected by ``FRAME_PROPERTY``. It never changes, so
    it is set once: a changed sheet on the window would restyle every widget under it,
    hidden tab pages included (~60 ms of loop time at each presenter toggle)."""
    rules = []
    for name, values in PALETTES.items():
        sel = f'[{FRAME_PROPERTY}="{name}"]'
        rules.append(f"QMainWindow{sel}, QTabWidget{sel}::pane {{ background: {values['BG']}; }}"
                     f" QTabWidget{sel}::pane {{ border: 1px solid {values['GRID']}; border-radius: 4px;"
                     " top: -1px; }")
    return "\n".join(rules)


def apply_frame(window, frames) -> None:
    """Give ``window`` the frame sheet (once) and ``window`` and each of ``frames`` (the tab
    widgets) the current palette's ``FRAME_PROPERTY``; each widget whose property changed is
    re-polished alone (its children keep their style)."""
    sheet = frame_stylesheet()
    if window.styleSheet() != sheet:
        window.setStyleSheet(sheet)
    for widget in (window, *frames):
        if widget.property(FRAME_PROPERTY) != _palette:
            widget.setProperty(FRAME_PROPERTY, _palette)
            style = widget.style()
            style.unpolish(widget)
            style.polish(widget)
            widget.update()


def restyle(region) -> bool:
    """Give ``region`` (a widget and its children: a tab page, the chart, the status bar...)
    the current ``stylesheet()``; returns whether it changed (restyling is the slow part:
    only on a change)."""
    sheet = stylesheet()
    if region.styleSheet() == sheet:
        return False
    region.setStyleSheet(sheet)
    return True


def run_button_style(kind: str) -> str:
    c = kind_color(kind)
    dark = c.darker(125).name()
    return (f"QPushButton {{ background: {c.name()}; }} QPushButton:hover {{ background: {dark}; }}"
            f"QPushButton:disabled {{ background: {DISABLED}; }}")


def apply(app: QApplication, scale: float | None, window, frames=(), regions=()) -> None:
    """Apply the font (``scale``, if not ``None``, changes ``font_scale``) and the palette to
    the application, the frame sheet to ``window`` (``apply_frame``, ``frames``: its tab
    widgets) and the region sheet to each of ``regions`` (``restyle``).

    The sheets belong on the main window, not the application: a new application-wide
    sheet restyles every widget of the application, menus and popups included (~200 ms
    with the main window's ~500 widgets). The window's own sheet never changes; the sheet
    that changes goes on the regions the caller names, the visible ones: a region left out
    (a hidden tab's view) keeps its old look until it is given ``restyle`` (when shown).
    Widgets outside the window (dialogs without a parent) follow the application's
    palette and font.
    """
    apply_font_and_palette(app, scale)
    apply_frame(window, frames)
    for region in regions:
        restyle(region)


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
        # a disabled control's text is muted: it must not look like one that acts
        disabled = ((role.WindowText, MUTED), (role.Text, MUTED), (role.ButtonText, MUTED))
        wanted_in = {g: dict(wanted) for g in _GROUPS}
        wanted_in[QPalette.ColorGroup.Disabled].update(disabled)
        if any(pal.color(g, r) != QColor(v) for g in _GROUPS for r, v in wanted_in[g].items()):
            for g in _GROUPS:
                for r, v in wanted_in[g].items():
                    pal.setColor(g, r, QColor(v))
            app.setPalette(pal)
        return
    if _light_qpalette is None:
        _light_qpalette = QPalette(app.palette())
    pal = QPalette()
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    for r, value in ((role.Window, PANEL_BG), (role.WindowText, FG), (role.Base, BG),
                     (role.AlternateBase, PANEL_BG), (role.Text, FG), (role.Button, PANEL_BG),
                     (role.ButtonText, FG), (role.BrightText, QT_BRIGHT_TEXT), (role.ToolTipBase, PANEL_BG),
                     (role.ToolTipText, FG), (role.Highlight, SELECTION), (role.HighlightedText, FG),
                     (role.PlaceholderText, MUTED), (role.Link, KIND_COLORS["warm"]),
                     (role.Light, BORDER), (role.Midlight, GRID), (role.Mid, BORDER),
                     (role.Dark, QT_SHADOW), (role.Shadow, QT_SHADOW)):
        pal.setColor(r, QColor(value))
    # a disabled control's text is muted: it must not look like one that acts
    for r in (role.WindowText, role.Text, role.ButtonText):
        pal.setColor(group.Disabled, r, QColor(MUTED))
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
