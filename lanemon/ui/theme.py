"""Colours and type, chosen for a projector: light background, saturated
kind colours, large text. ``font_scale`` scales every font (presenter mode
hook: ``apply(app, scale)`` may be called again at any time).
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont
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

BASE_POINT_SIZE = 11.0

_scale = 1.0


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
    s = _scale
    return f"""
    QWidget {{ color: {FG}; }}
    QMainWindow, QTabWidget::pane {{ background: {BG}; }}
    QTabWidget::pane {{ border: 1px solid {GRID}; border-radius: 4px; top: -1px; }}
    QTabBar::tab {{ padding: {5*s:.0f}px {16*s:.0f}px; background: {PANEL_BG}; border: 1px solid {GRID};
                    border-bottom: none; border-top-left-radius: 4px; border-top-right-radius: 4px;
                    margin-right: 2px; color: {MUTED}; }}
    QTabBar::tab:selected {{ background: {BG}; color: {FG}; font-weight: bold; }}
    QGroupBox {{ font-weight: bold; border: 1px solid {GRID}; border-radius: 6px;
                 margin-top: {12*s:.0f}px; padding-top: {6*s:.0f}px; background: {PANEL_BG}; }}
    QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px; color: {MUTED}; }}
    QTableView {{ gridline-color: {GRID}; background: {BG}; alternate-background-color: {PANEL_BG};
                  selection-background-color: #dbe7f6; selection-color: {FG}; }}
    QTableView::item {{ padding: 0 {8*s:.0f}px; }}
    QHeaderView::section {{ background: {PANEL_BG}; color: {MUTED}; border: none;
                            border-bottom: 1px solid {GRID}; padding: 3px 6px; font-weight: bold; }}
    QPushButton {{ padding: {4*s:.0f}px {12*s:.0f}px; border: 1px solid #c5cbd5; border-radius: 5px;
                   background: {BG}; }}
    QPushButton:hover {{ background: #eef2f7; }}
    QPushButton[run="true"] {{ color: white; font-weight: bold; border: none;
                               padding: {7*s:.0f}px {10*s:.0f}px; }}
    QStatusBar {{ background: {PANEL_BG}; color: {MUTED}; border-top: 1px solid {GRID}; }}
    QLabel[muted="true"] {{ color: {MUTED}; }}
    """


def run_button_style(kind: str) -> str:
    c = kind_color(kind)
    dark = c.darker(125).name()
    return (f"QPushButton {{ background: {c.name()}; }} QPushButton:hover {{ background: {dark}; }}"
            f"QPushButton:disabled {{ background: #b9bec8; }}")


def apply(app: QApplication, scale: float | None = None) -> None:
    """Apply fonts and the stylesheet; ``scale`` changes ``font_scale``."""
    global _scale
    if scale is not None:
        _scale = max(0.5, float(scale))
    font = QFont("DejaVu Sans")
    font.setPointSizeF(BASE_POINT_SIZE * _scale)
    app.setFont(font)
    app.setStyleSheet(stylesheet())


def mono_font(size: float | None = None) -> QFont:
    font = QFont("DejaVu Sans Mono")
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPointSizeF(pt(size or BASE_POINT_SIZE))
    return font
