"""The window shows first and adds its other tabs right after its first paint (issue 17, item 4).

Behaviour only, no timed asserts: what is there before and after the first paint, and
that the background work (the worker start-up measurement) waits for the tabs."""

from __future__ import annotations

import pytest

from lanemon.ui.tools.testing import run_window, wait_until

ALL_VIEWS = {"runs", "placement", "lanes", "counters", "programs", "processes"}


@pytest.fixture(autouse=True)
def _app(window_app):
    return window_app


def test_a_window_made_with_views_later_has_the_runs_tab_until_install_views(qtbot):
    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow(views_later=True)
    called = []
    win.after_views(lambda: called.append(set(win.views)))
    assert set(win.views) == {"runs"} and win.tabs.count() == 1 and not win.views_installed
    assert win.programs_view is None and called == []
    assert win.install_views() is True
    assert set(win.views) >= ALL_VIEWS and win.tabs.count() == len(win.views)
    assert called == [set(win.views)]                      # once, with every tab there
    assert win.install_views() is False                    # done once
    win.after_views(lambda: called.append("now"))          # installed: at once
    assert called[-1] == "now"


def test_a_default_window_has_every_tab_at_once(qtbot):
    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow()
    assert set(win.views) >= ALL_VIEWS and win.views_installed


def test_main_adds_the_tabs_after_the_first_paint_then_measures_and_freezes(qtbot):
    import gc

    from PySide6.QtCore import QEvent, QObject

    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow(views_later=True)
    seen = []

    class Paints(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and "paint" not in seen:
                seen.append("paint")
                seen.append(set(win.views))
            return False
    paints = Paints(win)
    win.installEventFilter(paints)
    win.after_views(lambda: seen.append("views"))

    async def scenario(w):
        await wait_until(lambda: w.views_installed, 30)
        after = set(w.views)
        await wait_until(lambda: w.controller.machine.rate_per_ms is not None, 30)   # measured after
        return after, gc.get_freeze_count()

    rc, (after, frozen), errors = run_window(scenario, window=win)
    assert rc == 0 and errors == []
    assert seen[:3] == ["paint", {"runs"}, "views"]         # painted with the Runs tab alone, then the rest
    assert after >= ALL_VIEWS
    assert frozen > 10_000 and gc.get_freeze_count() == 0   # frozen once all was there; not after


def test_no_tab_is_added_once_the_window_is_shutting_down(qtbot):
    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow(views_later=True)

    async def scenario(w):
        await w.shutdown()
        return w.install_views(), set(w.views)

    rc, (installed, views), errors = run_window(scenario, window=win)
    assert rc == 0 and errors == []
    assert installed is False and views == {"runs"}


def test_a_talk_given_at_start_plays_its_first_step_once_every_tab_is_there(qtbot):
    """``lanemon --talk FILE``: the talk is loaded at start once every tab is there (they come
    after the first paint), and its first step shows the Lanes tab."""
    import asyncio

    import qasync

    from lanemon.talk.script import parse
    from lanemon.ui.shell.app import application, main
    from lanemon.ui.shell.main_window import MainWindow

    talk = parse('format = 1\n[[step]]\ntitle = "Lanes"\ndo = [ { tab = "lanes" } ]\n'
                 '[[step]]\ntitle = "Runs"\ndo = [ { tab = "runs" } ]\n')
    app = application()
    win = MainWindow(views_later=True)
    errors: list[dict] = []
    tabs_when_loaded = []
    load = win.talk_player.load

    def spy(t):
        tabs_when_loaded.append(set(win.views))
        load(t)
    win.talk_player.load = spy

    async def go():
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        runner = asyncio.ensure_future(main(win, talk=talk))
        await wait_until(lambda: win.views_installed and win.talk_player.loaded, 30)
        await wait_until(lambda: not win.talk_player.busy, 30)
        shown = win.tabs.currentWidget().widget() is win.views["lanes"]   # (the page scrolls the view)
        win.close()
        return await runner, shown

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as r:
        rc, shown = r.run(go())
    assert rc == 0 and errors == []
    assert len(tabs_when_loaded) == 1 and tabs_when_loaded[0] >= ALL_VIEWS and shown


def test_a_window_never_painted_still_gets_the_rest(qtbot, monkeypatch):
    """Shown minimised or never shown, no paint comes: ``then`` runs anyway (once)."""
    import asyncio

    import qasync

    from lanemon.ui.shell import first_paint
    from lanemon.ui.shell.app import application
    from lanemon.ui.shell.main_window import MainWindow

    monkeypatch.setattr(first_paint, "FALLBACK_MS", 50)
    app = application()
    win = MainWindow(views_later=True)          # never shown
    calls = []
    first_paint.install(win, then=lambda: calls.append(win.install_views()))

    async def go():
        await wait_until(lambda: calls, 10)
        await asyncio.sleep(0.2)                # and not a second time
        return list(calls)

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as r:
        assert r.run(go()) == [True]
    assert win.views_installed
