"""Talk scripts: a TOML file of steps, read into named immutable records (Qt-free).

A talk is ``format = 1`` (optional; a newer format is refused), an optional
``title`` and one ``[[step]]`` table per step::

    [[step]]
    title = "A CPU job blocks the loop"        # required, at most TITLE_MAX characters
    text = "One whole run: the heartbeat stops." # optional, at most TEXT_LINES lines
    do = [                                      # optional: actions, run in order
      { tab = "runs" },
      { run = "whole", cpu_ms = 400 },
    ]
    wait = "run"          # optional: "run" (the runs in flight ended) or "compare"
    undo = [ ... ]        # optional: actions run when PageUp leaves this step

Actions (one inline table each; the first key names the kind):

- ``{ run = "whole"|"sliced"|"worker", iterations = N | cpu_ms = MS[, worker = "cold"|"warm"|"thread"] }``
  (exactly one of ``iterations``, 1 to ``MAX_TOTAL``, and ``cpu_ms``, whole ms from 1 to
  ``MAX_CPU_MS``, as the Runs tab takes them; ``worker`` only for a worker run);
- ``{ tab = "runs"|"placement"|"lanes"|"counters"|"programs"|"processes" }``;
- ``{ lanes = "add", workspace = W[, queue = Q, seconds = S, fails = true] }``,
  ``{ lanes = "burst"[, jobs = N, workspaces = M, queue = Q, seconds = S] }``,
  ``{ lanes = "hold"|"release"|"fail"|"stop", workspace = W }`` (hold / fail: that
  workspace's running job, else its oldest waiting one; release without a workspace:
  every hold), ``{ lanes = "busy", workspace = W[, on = false] }`` (S: seconds, 0 to
  ``MAX_SECONDS`` in tenths, as the form takes them);
- ``{ counters = "strategy", strategy = S }``, ``{ counters = "start"[, strategy = S] }``,
  ``{ counters = "stop" }``, ``{ counters = "compare" }`` (S: short_lock, long_lock,
  claim);
- ``{ scenario = "overlap"|"pause"|"kill"|"counters"|"stop" }`` (the Processes tab's
  Scenarios box);
- ``{ agents = "start"[, count = N, store = URL] }``: N ``lanemon agent`` processes (the
  Processes tab's Start) on ``store`` (an ``sqlite:`` or ``postgresql:`` URL, checked here;
  ``memory:`` is refused: agents share a store; the store must exist, made with
  ``lanemon store init --store URL``: an agent started on none exits, and the Processes
  tab says why), else on the store the Processes tab shows,
  which follows the Lanes & queues tab: ``lanemon --store``'s, or a scenario's throwaway
  SQLite store while a scenario started before it runs. With neither, the window refuses
  the action (said in the status bar and the tab: no store to start agents on) and the
  talk goes on. ``{ agents = "pause"|"resume" }``: the first agent this talk started that
  can be, else the first started here (a scenario's); ``{ agents = "stop" }``: every agent
  started here.

Guaranteed: ``parse(text)`` / ``load(path)`` return a ``Talk`` whose every field was
checked, or raise ``TalkError`` naming the line (``line``; ``None`` only for a file
that cannot be read or has no step) and what is wrong. Unknown keys are refused (a
typo never passes silently). Refused: a talk of another shape than the above.
Nothing here runs an action: the window does (``lanemon.ui.talk``), through the
same methods its controls call.
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
from dataclasses import dataclass

from lanemon.lanes.names import MAX_WORKSPACE_NAME, workspace_problem
from lanemon.work.runs import MAX_TOTAL

TALK_FORMAT = 1
TITLE_MAX = 70            # characters of a step's title (it is shown in large type)
TEXT_MAX = 240            # characters of a step's text ...
TEXT_LINES = 3            # ... and lines
MAX_CPU_MS = 600_000      # the runs panel's largest CPU ms size (lanemon.ui.runs.panel.MAX_CPU_MS)
MAX_SECONDS = 600.0       # a simulated lanes job (the lanes form's range)
MAX_BURST_JOBS = 100_000  # the lanes form's ranges
MAX_BURST_WORKSPACES = 10_000
MAX_AGENTS = 16           # started at once (the Processes tab's limit)
MAX_BYTES = 1_000_000     # a talk file's size (a talk of many steps is a few kilobytes)

TABS = ("runs", "placement", "lanes", "counters", "programs", "processes")
RUN_KINDS = ("whole", "sliced", "worker")
WORKER_KINDS = ("cold", "warm", "thread")
QUEUES = ("reservations", "cafe")
STRATEGIES = ("short_lock", "long_lock", "claim")
SCENARIOS = ("overlap", "pause", "kill", "counters")
WAITS = ("run", "compare")
LANES_DOS = ("add", "burst", "hold", "release", "fail", "stop", "busy")
COUNTERS_DOS = ("strategy", "start", "stop", "compare")
AGENTS_DOS = ("start", "pause", "resume", "stop")
ACTION_KINDS = ("run", "tab", "lanes", "counters", "scenario", "agents")


class TalkError(ValueError):
    """A talk that cannot be used: ``where`` (the file), ``line`` (1-based, or ``None``)
    and ``message`` (what is wrong). ``str()`` is the one line said to the user."""

    def __init__(self, where: str, line: int | None, message: str) -> None:
        self.where = where
        self.line = line
        self.message = message
        at = f"{where}, line {line}" if line is not None else where
        super().__init__(f"{at}: {message}")


# --- the records ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RunAction:
    """A whole / sliced / worker run of the job; exactly one of ``iterations`` and ``cpu_ms``."""
    kind: str
    iterations: int | None
    cpu_ms: float | None
    worker: str | None          # worker runs: the worker kind (None: the one the Runs tab shows)
    line: int


@dataclass(frozen=True, slots=True)
class TabAction:
    tab: str
    line: int


@dataclass(frozen=True, slots=True)
class LanesAction:
    do: str
    workspace: str | None
    queue: str
    seconds: float
    fails: bool
    jobs: int
    workspaces: int
    on: bool
    line: int


@dataclass(frozen=True, slots=True)
class CountersAction:
    do: str
    strategy: str | None
    line: int


@dataclass(frozen=True, slots=True)
class ScenarioAction:
    scenario: str               # one of SCENARIOS, or "stop"
    line: int


@dataclass(frozen=True, slots=True)
class AgentsAction:
    do: str
    count: int
    store: str | None           # start: the store URL (None: the one the Processes tab shows)
    line: int


Action = RunAction | TabAction | LanesAction | CountersAction | ScenarioAction | AgentsAction


@dataclass(frozen=True, slots=True)
class Step:
    number: int                 # 1-based
    title: str
    text: str
    actions: tuple[Action, ...]
    undo: tuple[Action, ...]
    wait: str | None            # one of WAITS
    line: int                   # its [[step]] header


@dataclass(frozen=True, slots=True)
class Talk:
    title: str
    steps: tuple[Step, ...]
    where: str                  # the file it came from ("<text>" for a string)


# --- finding lines in the source ---------------------------------------------------------------

_STEP_HEADER = re.compile(r"^\s*\[\[\s*step\s*\]\]\s*(#.*)?$")


class _Lines:
    """Where things are in the source text (tomllib keeps no positions)."""

    def __init__(self, text: str) -> None:
        # TOML's lines end at LF or CRLF only (``str.splitlines`` also split at U+2028, U+0085
        # ... inside strings and comments, and the lines said after one were off)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        self.lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        self.steps = [i + 1 for i, line in enumerate(self.lines) if _STEP_HEADER.match(line)]
        self._items: dict[tuple[int, str], tuple[int, list[int]]] = {}   # (``item``)

    def _span(self, step: int | None) -> tuple[int, int]:
        """1-based first and last line of step ``step`` (0-based index; None: the top)."""
        if step is None:
            return 1, (self.steps[0] - 1 if self.steps else len(self.lines))
        if step >= len(self.steps):
            return len(self.lines), len(self.lines)
        end = self.steps[step + 1] - 1 if step + 1 < len(self.steps) else len(self.lines)
        return self.steps[step], end

    def step(self, step: int) -> int:
        return self._span(step)[0]

    def key(self, step: int | None, key: str) -> int:
        """The line of ``key = ...`` in the step (or at the top), else the step's header."""
        first, last = self._span(step)
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for n in range(first, last + 1):
            if pattern.match(self.lines[n - 1]):
                return n
        return first

    def item(self, step: int, key: str, index: int) -> int:
        """The line of the ``index``-th inline table of the array ``key`` in the step (the
        array's line if it has fewer). The step's tables are found once per array (a step of
        thousands of actions is read once, not once per action)."""
        found = self._items.get((step, key))
        if found is None:
            found = self._items[(step, key)] = self._tables(step, key)
        start, lines = found
        return lines[index] if index < len(lines) else start

    def _tables(self, step: int, key: str) -> tuple[int, list[int]]:
        """The line of ``key = ...`` in the step and the line of each inline table at the
        array's top level, in order."""
        start = self.key(step, key)
        _, last = self._span(step)
        lines = []
        depth = 0
        for n in range(start, last + 1):
            for ch in _code(self.lines[n - 1]):
                if ch == "{":
                    if depth == 0:
                        lines.append(n)
                    depth += 1
                elif ch == "}":
                    depth = max(0, depth - 1)
        return start, lines


def _code(line: str) -> str:
    """``line`` without its strings and comment (brackets inside strings do not count)."""
    out = []
    quote = None
    escaped = False
    for ch in line:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        else:
            out.append(ch)
    return "".join(out)


# --- checking values -------------------------------------------------------------------------------

def _names(options) -> str:
    return ", ".join(f'"{o}"' for o in options)


class _Reader:
    def __init__(self, where: str, text: str) -> None:
        self.where = where
        self.at = _Lines(text)

    def fail(self, line: int | None, message: str):
        raise TalkError(self.where, line, message)

    def text(self, value, line: int, what: str, *, required: bool, limit: int, lines: int = 1) -> str:
        if value is None:
            if required:
                self.fail(line, f"{what} is missing")
            return ""
        if not isinstance(value, str):
            self.fail(line, f"{what} must be text in quotes, not {_kind(value)}")
        value = value.strip()
        if required and not value:
            self.fail(line, f"{what} is empty")
        if len(value) > limit:
            self.fail(line, f"{what} has {len(value)} characters; at most {limit} fit on the screen")
        if value.count("\n") + 1 > lines:
            self.fail(line, f"{what} has {value.count(chr(10)) + 1} lines; at most {lines}")
        return value

    def choice(self, value, line: int, what: str, options) -> str:
        if not isinstance(value, str) or value not in options:
            shown = f'"{value}"' if isinstance(value, str) else _kind(value)
            self.fail(line, f"{what} {shown} is not one of {_names(options)}")
        return value

    def integer(self, value, line: int, what: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(line, f"{what} must be a whole number, not {_kind(value)}")
        if not low <= value <= high:
            self.fail(line, f"{what} = {value:,} is out of range ({low:,} to {high:,})")
        return value

    def number(self, value, line: int, what: str, low: float, high: float, *,
               step: float, takes: str) -> float:
        """A number from ``low`` to ``high`` in whole ``step``s: what the window's control it
        goes into shows (``takes`` says so in the refusal), so that the talk runs with the
        value it says, not one the control rounded."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(line, f"{what} must be a number, not {_kind(value)}")
        if value > high or value < low:
            self.fail(line, f"{what} = {value:g} is out of range ({low:g} to {high:,g})")
        steps = value / step
        if abs(steps - round(steps)) > 1e-6:
            self.fail(line, f"{what} = {value:g} is finer than the window takes ({takes})")
        return float(value)

    def flag(self, value, line: int, what: str) -> bool:
        if not isinstance(value, bool):
            self.fail(line, f"{what} must be true or false, not {_kind(value)}")
        return value

    # --- the talk ---------------------------------------------------------------------------
    def talk(self, data: dict) -> Talk:
        at = self.at
        for key in data:
            if key not in ("format", "title", "step"):
                self.fail(at.key(None, key), f'unknown key "{key}" at the top (a talk has format, '
                                             "title and [[step]] tables)")
        fmt = data.get("format", TALK_FORMAT)
        if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
            self.fail(at.key(None, "format"), f"format must be a whole number (1), not {_kind(fmt)}")
        if fmt > TALK_FORMAT:
            self.fail(at.key(None, "format"), f"format {fmt} is newer than this lanemon reads "
                                              f"(format {TALK_FORMAT}): update lanemon")
        title = self.text(data.get("title"), at.key(None, "title"), "title", required=False, limit=TITLE_MAX)
        steps = data.get("step")
        if steps is None:
            self.fail(None, "no steps: a talk needs at least one [[step]] table with a title")
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            self.fail(at.key(None, "step"), "step must be [[step]] tables")
        if not steps:
            self.fail(at.key(None, "step"), "no steps: a talk needs at least one [[step]] table with a title")
        return Talk(title=title, steps=tuple(self.step(i, s) for i, s in enumerate(steps)), where=self.where)

    def step(self, i: int, data: dict) -> Step:
        at = self.at
        header = at.step(i)
        name = f"step {i + 1}"
        for key in data:
            if key not in ("title", "text", "do", "undo", "wait"):
                self.fail(at.key(i, key), f'unknown key "{key}" in {name} (a step has title, text, do, '
                                          "undo and wait)")
        title = self.text(data.get("title"), at.key(i, "title") if "title" in data else header,
                          f"{name}'s title", required=True, limit=TITLE_MAX)
        text = self.text(data.get("text"), at.key(i, "text"), f"{name}'s text", required=False,
                         limit=TEXT_MAX, lines=TEXT_LINES)
        wait = data.get("wait")
        if wait is not None:
            wait = self.choice(wait, at.key(i, "wait"), f"{name}'s wait", WAITS)
        return Step(number=i + 1, title=title, text=text, actions=self.actions(i, data, "do"),
                    undo=self.actions(i, data, "undo"), wait=wait, line=header)

    def actions(self, i: int, data: dict, key: str) -> tuple[Action, ...]:
        value = data.get(key)
        if value is None:
            return ()
        line = self.at.key(i, key)
        if not isinstance(value, list):
            self.fail(line, f'{key} must be a list of actions, e.g. {key} = [ {{ run = "whole", cpu_ms = 400 }} ]')
        out = []
        for n, item in enumerate(value):
            item_line = self.at.item(i, key, n)
            if not isinstance(item, dict):
                self.fail(item_line, f"{key}: action {n + 1} must be a table in braces, not {_kind(item)}")
            out.append(self.action(item, item_line))
        return tuple(out)

    def action(self, data: dict, line: int) -> Action:
        kinds = [k for k in data if k in ACTION_KINDS]
        if len(kinds) != 1:
            if not kinds:
                keys = ", ".join(data) or "nothing"
                self.fail(line, f"an action needs one of {', '.join(ACTION_KINDS)} (it has {keys})")
            self.fail(line, f"one action per table: this one has {' and '.join(kinds)}")
        kind = kinds[0]
        allowed = {
            "run": ("iterations", "cpu_ms", "worker"),
            "tab": (),
            "lanes": ("workspace", "queue", "seconds", "fails", "jobs", "workspaces", "on"),
            "counters": ("strategy",),
            "scenario": (),
            "agents": ("count", "store"),
        }[kind]
        for key in data:
            if key != kind and key not in allowed:
                takes = f"it takes {', '.join(allowed)}" if allowed else "it takes nothing else"
                self.fail(line, f'unknown key "{key}" in a {kind} action ({takes})')
        return getattr(self, f"_{kind}")(data, line)

    def _run(self, d: dict, line: int) -> RunAction:
        kind = self.choice(d["run"], line, "run", RUN_KINDS)
        if ("iterations" in d) == ("cpu_ms" in d):
            self.fail(line, "a run needs its size: iterations = N or cpu_ms = MS (one of them)")
        iterations = cpu_ms = None
        if "iterations" in d:
            iterations = self.integer(d["iterations"], line, "iterations", 1, MAX_TOTAL)
        else:
            cpu_ms = self.number(d["cpu_ms"], line, "cpu_ms", 1, MAX_CPU_MS, step=1, takes="whole CPU ms")
        worker = None
        if "worker" in d:
            if kind != "worker":
                self.fail(line, f'worker = ... is for a worker run, not a {kind} run')
            worker = self.choice(d["worker"], line, "worker", WORKER_KINDS)
        return RunAction(kind=kind, iterations=iterations, cpu_ms=cpu_ms, worker=worker, line=line)

    def _tab(self, d: dict, line: int) -> TabAction:
        return TabAction(tab=self.choice(d["tab"], line, "tab", TABS), line=line)

    def _lanes(self, d: dict, line: int) -> LanesAction:
        do = self.choice(d["lanes"], line, "lanes", LANES_DOS)
        uses = {"add": {"workspace", "queue", "seconds", "fails"},
                "burst": {"jobs", "workspaces", "queue", "seconds"},
                "busy": {"workspace", "on"}}.get(do, {"workspace"})
        for key in d:
            if key != "lanes" and key not in uses:
                self.fail(line, f'lanes = "{do}" takes no {key} (it takes {", ".join(sorted(uses))})')
        ws = d.get("workspace")
        if ws is not None:
            ws = self.text(ws, line, "workspace", required=True, limit=MAX_WORKSPACE_NAME)
            problem = workspace_problem(ws)      # (refused here, not when the step runs)
            if problem is not None:
                self.fail(line, problem)
        elif do not in ("burst", "release"):
            self.fail(line, f'lanes = "{do}" needs workspace = "ws-01" (which workspace)')
        queue = self.choice(d.get("queue", "reservations"), line, "queue", QUEUES)
        seconds = self.number(d.get("seconds", 2.0 if do == "add" else 1.0), line, "seconds", 0, MAX_SECONDS,
                              step=0.1, takes="tenths of a second")
        fails = self.flag(d.get("fails", False), line, "fails")
        jobs = self.integer(d.get("jobs", 24), line, "jobs", 1, MAX_BURST_JOBS)
        workspaces = self.integer(d.get("workspaces", 6), line, "workspaces", 1, MAX_BURST_WORKSPACES)
        on = self.flag(d.get("on", True), line, "on")
        return LanesAction(do=do, workspace=ws, queue=queue, seconds=seconds, fails=fails, jobs=jobs,
                           workspaces=workspaces, on=on, line=line)

    def _counters(self, d: dict, line: int) -> CountersAction:
        do = self.choice(d["counters"], line, "counters", COUNTERS_DOS)
        strategy = d.get("strategy")
        if strategy is not None:
            if do not in ("strategy", "start"):
                self.fail(line, f'counters = "{do}" takes no strategy')
            strategy = self.choice(strategy, line, "strategy", STRATEGIES)
        elif do == "strategy":
            self.fail(line, f'counters = "strategy" needs strategy = one of {_names(STRATEGIES)}')
        return CountersAction(do=do, strategy=strategy, line=line)

    def _scenario(self, d: dict, line: int) -> ScenarioAction:
        return ScenarioAction(scenario=self.choice(d["scenario"], line, "scenario", (*SCENARIOS, "stop")),
                              line=line)

    def _agents(self, d: dict, line: int) -> AgentsAction:
        do = self.choice(d["agents"], line, "agents", AGENTS_DOS)
        for key in ("count", "store"):
            if key in d and do != "start":
                self.fail(line, f'agents = "{do}" takes no {key}')
        count = self.integer(d.get("count", 2), line, "count", 1, MAX_AGENTS)
        store = d.get("store")
        if store is not None:
            store = self._store(self.text(store, line, "store", required=True, limit=2000), line)
        return AgentsAction(do=do, count=count, store=store, line=line)

    def _store(self, url: str, line: int) -> str:
        """``url`` if agents can share it (sqlite or postgresql), else the refusal with its line."""
        from lanemon.store.url import StoreError
        from lanemon.store.url import parse as parse_url

        try:
            engine = parse_url(url).engine
        except StoreError as exc:
            self.fail(line, f"store: {exc}")
        if engine == "memory":
            self.fail(line, "store = \"memory:\" is one window's own: agents share a store "
                            "(sqlite:///path/store.db or postgresql://host/db)")
        return url


def _kind(value) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, (int, float)):
        return f"the number {value:g}"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def parse(text: str, where: str = "<text>") -> Talk:
    """The talk in ``text`` (TOML), or ``TalkError`` naming the line and what is wrong."""
    try:
        data = tomllib.loads(text)
    except RecursionError:           # (tomllib's own error for arrays nested ~1,000 deep)
        raise TalkError(where, None, "not valid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_AT.search(message)
        if m is None:
            raise TalkError(where, None, f"not valid TOML: {message}") from None
        raise TalkError(where, int(m.group(1)),
                        f"not valid TOML: {message[:m.start()]} (column {m.group(2)})") from None
    return _Reader(where, text).talk(data)


def load(path: str) -> Talk:
    """The talk in the file ``path`` (UTF-8 TOML), or ``TalkError`` saying why not (among
    them: not a regular file, such as a device or a pipe that would be read for ever; more
    than ``MAX_BYTES``)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):     # (before open: a pipe's open waits for a writer)
            raise TalkError(path, None, "not a file (a talk is a TOML text file)")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise TalkError(path, None, f"cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise TalkError(path, None, f"larger than {MAX_BYTES:,} bytes: not a talk script")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise TalkError(path, line, "not UTF-8 text (a talk is a TOML text file)") from None
    return parse(text, path)


__all__ = [
    "ACTION_KINDS", "AGENTS_DOS", "COUNTERS_DOS", "LANES_DOS", "QUEUES", "RUN_KINDS", "SCENARIOS",
    "STRATEGIES", "TABS", "TALK_FORMAT", "WAITS", "WORKER_KINDS",
    "Action", "AgentsAction", "CountersAction", "LanesAction", "RunAction", "ScenarioAction", "Step",
    "TabAction", "Talk", "TalkError", "load", "parse",
]
