"""``ReservedLines``: the room for ``lines`` lines stays, whatever the text, until a text
needs more."""

from __future__ import annotations

import pytest

from lanemon.ui.kit.reserved_lines import ReservedLines


def _room(label: ReservedLines, lines: int) -> int:
    m = label.contentsMargins()
    return lines * label.fontMetrics().lineSpacing() + m.top() + m.bottom()


def test_an_empty_text_and_one_that_fits_take_the_same_height(qapp):
    label = ReservedLines(3)
    width = 40 * label.fontMetrics().averageCharWidth()
    empty = label.heightForWidth(width)
    assert empty == _room(label, 3) and label.sizeHint().height() == empty
    assert label.minimumSizeHint().height() == empty
    for text in ("one line", "a first line\na second line", "one\ntwo\nthree"):
        label.setText(text)
        assert label.heightForWidth(width) == empty, text
    label.setText("")
    assert label.heightForWidth(width) == empty


def test_a_longer_text_is_shown_whole_and_grows(qapp):
    label = ReservedLines(2)
    width = 30 * label.fontMetrics().averageCharWidth()
    label.setText("\n".join(f"line {i}" for i in range(5)))
    assert label.heightForWidth(width) >= _room(label, 5)
    label.setText("a few words " * 20)               # wraps to more than two lines
    assert label.heightForWidth(width) > _room(label, 2)


def test_the_room_follows_the_font_and_the_width_is_never_asked_from_the_text(qapp):
    label = ReservedLines(2)
    before = label.heightForWidth(400)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 2)
    label.setFont(font)
    assert label.heightForWidth(400) == _room(label, 2) > before
    assert label.sizePolicy().horizontalPolicy().name == "Ignored"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_lines_is_checked(qapp, bad):
    with pytest.raises(ValueError):
        ReservedLines(bad)
