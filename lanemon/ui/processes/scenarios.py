"""The scenarios in the window: a "Scenarios" box in the Processes tab, and what is happening
said on the tabs that show it (a thin layer over ``lanemon.agents.scenarios``).

- **One button per scenario** (overlap, pause, kill, counters) in the Processes tab's
  "Scenarios" box, and **Stop scenario**. A click starts the scenario's script
  (``ScenarioRun``, a task on the window's loop) with the Processes tab's fleet -- its agents
  are listed there like any started from the tab -- on the store the window has chosen
  (the Processes tab's store field, which follows the Lanes & queues tab's store), or, when
  none is chosen, on a **throwaway SQLite store** in a temporary folder (said on screen;
  removed when the scenario is stopped, another one starts, or the window closes).
- Once the script has opened the store, the Lanes & queues tab (the three lanes
  scenarios) or the Counters tab (counters) **follows that store** and is shown.
- **The description** (``ScenarioCaption``): the scenario, its step (what is happening
  now), what to look at, and the live figures from the store; at the end its proof (or why
  it failed). It is shown in the Scenarios box and at the top of the Lanes & queues and
  Counters tabs while a scenario is there (refreshed 4 times a second, only when it changed;
  no timer runs while no scenario is there: an idle window's loop does nothing for them).
- **Stopping** (Stop scenario, another scenario, the window closing) stops the agents the
  scenario started and waits for them to exit; the tabs that followed a throwaway store go
  back to this window's simulation before it is removed. The fleet's own close stops them
  too (no orphan). A scenario that ended keeps its store to be looked at until then.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from lanemon.agents.scenarios import SCENARIOS, ScenarioOptions, ScenarioRun, ScenarioStatus
from lanemon.ui.kit import theme

__all__ = ["ScenarioCaption", "Scenarios", "ScenariosBox", "install_scenarios"]

log = logging.getLogger(__name__)

REFRESH_MS = 250
#: which tab shows each scenario
TAB_OF = {"overlap": "lanes", "pause": "lanes", "kill": "lanes", "counters": "counters"}
BUTTON_TEXT = {"overlap": "Overlap", "pause": "Pause past lease", "kill": "Kill mid-job",
               "counters": "Counters"}


def _tone(tone: str) -> str:
    return {"ok": theme.OK_TEXT, "bad": theme.ERROR_TEXT}.get(tone, theme.FG)


def caption_html(st: ScenarioStatus | None, *, compact: bool = False) -> str:
    """The description of a scenario's status as rich text (empty: no scenario)."""
    if st is None:
        return ""
    e = html.escape
    state_color = {"proved": theme.OK_TEXT, "failed": theme.ERROR_TEXT, "stopped": theme.MUTED}.get(
        st.state, theme.WARN)
    state = {"proved": "proved", "failed": "failed", "stopped": "stopped"}.get(
        st.state, f"step {st.step} of {st.steps}" if st.step else "starting")
    store = (f"throwaway SQLite store {e(st.store)} (removed when the scenario is stopped)" if st.throwaway
             else f"store {e(st.store)}")
    lines = [f"<b>Scenario: {e(st.title)}</b> · <span style='color:{state_color}'><b>{e(state)}</b></span>"
             f" · <span style='color:{theme.MUTED}'>{store}</span>"]
    if st.state not in ("proved", "failed", "stopped") or not compact:
        lines.append(e(st.caption))
    if st.look and st.state in ("running", "starting", "proved"):
        lines.append(f"<span style='color:{theme.MUTED}'>Look at: </span>{e(st.look)}")
    if st.figures:
        figs = " · ".join(f"<span style='color:{theme.MUTED}'>{e(f.name)}</span> "
                          f"<b style='color:{_tone(f.tone)}'>{e(f.value)}</b>" for f in st.figures)
        lines.append(figs)
    if st.proof:
        lines.append(f"<b style='color:{theme.OK_TEXT}'>Proof: {e(st.proof)}</b>")
    if st.error:
        lines.append(f"<b style='color:{theme.ERROR_TEXT}'>Not proved: {e(st.error)}</b>")
    return "<br>".join(lines)


class ScenarioCaption(QLabel):
    """A scenario's description (``show_status``); hidden while there is none when
    ``hide_empty``. ``text_shown`` is its plain text (tests, screenshots)."""

    def __init__(self, *, compact: bool = False, hide_empty: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setAccessibleName("scenario")
        self._compact = compact
        self._hide_empty = hide_empty
        self._shown: tuple[int, str] | None = None
        self.text_shown = ""
        if hide_empty:
            self.setVisible(False)

    def show_status(self, st: ScenarioStatus | None) -> None:
        key = (-1, "") if st is None else (st.version, st.state + theme.palette_name())
        if key == self._shown:
            return
        self._shown = key
        self.setText(caption_html(st, compact=self._compact))
        self.text_shown = "" if st is None else _plain(st)
        if self._hide_empty:
            self.setVisible(st is not None)


def _plain(st: ScenarioStatus) -> str:
    parts = [f"Scenario: {st.title} ({st.state}, step {st.step} of {st.steps})", st.caption, st.look,
             " · ".join(f"{f.name} {f.value}" for f in st.figures)]
    if st.proof:
        parts.append(f"Proof: {st.proof}")
    if st.error:
        parts.append(f"Not proved: {st.error}")
    return "\n".join(p for p in parts if p)


class ScenariosBox(QGroupBox):
    """The Processes tab's box: a button per scenario, Stop, and the description."""

    def __init__(self, parent: QWidget | None = None) -> None:
        # (a group box is at least as wide as its title: a short one)
        super().__init__("Scenarios", parent)
        self.buttons = {key: QPushButton(BUTTON_TEXT[key]) for key in SCENARIOS}
        for key, button in self.buttons.items():
            button.setToolTip(SCENARIOS[key].summary)
        self.stop_button = QPushButton("Stop scenario")
        self.stop_button.setToolTip("stop the scenario's agents (SIGTERM) and remove a throwaway store")
        self.stop_button.setEnabled(False)
        self.caption = ScenarioCaption(hide_empty=False)
        self.caption.setText(f"<span style='color:{theme.MUTED}'>Real contention, step by step. Pick a "
                             "scenario: its agents start as real processes (listed below) on the agents' "
                             "store (\"on store\"), or on a throwaway SQLite store when none is given; the tab "
                             "that shows it follows "
                             "the store and says what to look at.</span>")
        row = QHBoxLayout()
        for button in self.buttons.values():
            row.addWidget(button)
        row.addStretch(1)
        row.addWidget(self.stop_button)
        box = QVBoxLayout(self)
        box.addLayout(row)
        box.addWidget(self.caption)


class Scenarios(QObject):
    """The window's scenarios (see the module docstring). ``run``: the current one (or the
    last one, ended, until stopped); ``start(key)`` / ``stop()`` return the task doing it."""

    def __init__(self, window, *, options: ScenarioOptions | None = None) -> None:
        super().__init__(window)
        self._window = window
        self.options = options
        self.run: ScenarioRun | None = None
        self._task: asyncio.Task | None = None
        self._switching: asyncio.Task | None = None
        self._followed: set[str] = set()     # tabs switched to the run's store
        self.box = ScenariosBox()
        self.captions = [self.box.caption]
        for key, button in self.box.buttons.items():
            button.clicked.connect(lambda _c=False, k=key: self.start(k))
        self.box.stop_button.clicked.connect(self.stop)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)   # started while a scenario is there (_start, _stop)
        window.close_requested.connect(self._window_closing)

    def add_caption(self, caption: ScenarioCaption) -> None:
        self.captions.append(caption)

    # --- starting and stopping -----------------------------------------------------------
    def _chosen_store(self) -> str | None:
        """The store the window has chosen (the Processes tab's field), unless it is memory:,
        empty or a throwaway store of a scenario."""
        view = getattr(self._window, "processes_view", None)
        url = view.store_url() if view is not None else ""
        if not url or url.startswith("memory:"):
            return None
        if self.run is not None and self.run.throwaway and url == self.run.url:
            return None
        return url

    def start(self, key: str) -> asyncio.Task:
        """Start scenario ``key`` (after stopping the one before; clicks are taken in turn)."""
        self._switching = asyncio.ensure_future(self._after(self._switching, lambda: self._start(key)))
        return self._switching

    @staticmethod
    async def _after(before: asyncio.Task | None, then) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        await then()

    async def _start(self, key: str) -> None:
        await self._stop()
        fleet = self._window.processes_view.fleet
        try:
            run = ScenarioRun(key, fleet, self._chosen_store(), options=self.options)
        except Exception as exc:     # (a store URL refused: said, not raised)
            self.box.caption.setText(f"<b style='color:{theme.ERROR_TEXT}'>Not started: {html.escape(str(exc))}</b>")
            return
        self.run = run
        self._task = asyncio.ensure_future(run.run())
        self.box.stop_button.setEnabled(True)
        self._timer.start()
        self.refresh()
        await self._follow(run)

    async def _follow(self, run: ScenarioRun) -> None:
        """Once the script opened the store (its schema made), the tab that shows it follows it."""
        task = self._task
        ready = asyncio.ensure_future(run.ready.wait())
        try:
            await asyncio.wait([ready, task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if run is not self.run or run.status().state != "running":
            return
        tab = TAB_OF[run.key]
        view = self._window.views.get(tab)
        if view is None:
            return
        current = getattr(view, "follower", None) if tab == "lanes" else getattr(view, "source", None)
        shown = None if current is None else getattr(current, "url", None)
        shown = getattr(shown, "text", shown)
        if shown != run.url:
            if await view.follow(run.url):
                self._followed.add(tab)
        self._window.show_view(tab)

    def stop(self) -> asyncio.Task:
        """Stop the current scenario (its agents, its throwaway store)."""
        self._switching = asyncio.ensure_future(self._after(self._switching, self._stop))
        return self._switching

    async def _stop(self) -> None:
        run, self.run = self.run, None
        task, self._task = self._task, None
        self._timer.stop()                  # (the last refresh below says how it ended)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if run is None:
            return
        if run.throwaway:     # the tabs that follow it go back to the window before it is removed
            for tab in sorted(self._followed):
                view = self._window.views.get(tab)
                if view is None or view.is_shut:
                    continue
                with contextlib.suppress(Exception):
                    if tab == "lanes":
                        await view.use_window()
                    else:
                        view.choose_source("")
        self._followed.clear()
        await run.aclose()
        self.box.stop_button.setEnabled(False)
        self.refresh(ended=run.status())

    def _window_closing(self) -> None:
        task = self._task
        if task is not None:
            task.cancel()      # (the script stops now; its agents go with the fleet's close)

    async def aclose(self) -> None:
        """The window's shutdown: the scenario stopped, its agents waited for, its store removed."""
        self._timer.stop()
        switching, self._switching = self._switching, None
        if switching is not None:
            switching.cancel()
            await asyncio.gather(switching, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._stop()

    # --- the description ----------------------------------------------------------------------
    def status(self) -> ScenarioStatus | None:
        return None if self.run is None else self.run.status()

    @property
    def refreshing(self) -> bool:
        """Is the description refreshed on a timer now? Only while a scenario is there (running,
        or ended and not yet stopped)."""
        return self._timer.isActive()

    def refresh(self, ended: ScenarioStatus | None = None) -> None:
        st = self.status()
        for caption in self.captions:
            if caption is self.box.caption:
                if st is not None or ended is not None:
                    caption.show_status(st or ended)
            else:
                caption.show_status(st)


def install_scenarios(window, *, options: ScenarioOptions | None = None) -> Scenarios:
    """Add the Scenarios box to the Processes tab (beside its agents' form, or under it) and the
    description to the top of the Lanes & queues and Counters tabs; stopped with the window."""
    scenarios = Scenarios(window, options=options)
    processes = window.views["processes"]
    processes.add_beside_agents(scenarios.box)
    for key in ("lanes", "counters"):
        view = window.views.get(key)
        if view is not None:
            caption = ScenarioCaption(compact=True)
            view.layout().insertWidget(1, caption)
            scenarios.add_caption(caption)
    window.add_shutdown_hook(scenarios.aclose)
    return scenarios
