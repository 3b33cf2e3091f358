"""Agent processes started from here, and every process the window may signal (Qt-free).

A :class:`Fleet` starts agent processes (``lanemon agent``: contract 4,
``[sys.executable, "-m", "lanemon", "agent", "--store", URL, "--name", NAME,
...]``, built by :func:`agent_argv`; ``Fleet.command`` may be another builder,
e.g. the churn worker in tests) and keeps each one: name, pid, when it was
started, its log (stdout and stderr, one file per agent, whose last line says
why an agent exited with an error).

Guarantees:

- **No zombie**: a thread per agent waits for it (``Popen.wait``) and so reaps it
  the moment it exits; its exit status is kept (``exited 0``, ``exited -9`` for
  a SIGKILL: the ``subprocess`` convention, minus the signal's number).
- **Signals** (:meth:`Fleet.pause` SIGSTOP, :meth:`Fleet.resume` SIGCONT,
  :meth:`Fleet.kill` SIGKILL, :meth:`Fleet.stop` SIGTERM then SIGKILL after
  ``grace`` s if it has not exited) never raise: each returns a
  :class:`SignalResult` whose message says what was done, or why nothing was (an
  agent that has already exited, a name not known here). An agent is signalled
  through a pidfd (Linux) opened when it started, so a signal can never reach
  another process that reused its pid; a stop also sends SIGCONT, so a paused
  agent gets its SIGTERM now rather than when resumed.
- **No orphan**: :meth:`Fleet.aclose` (or :meth:`Fleet.close_now`, blocking)
  stops every agent still running and returns once each has been reaped,
  unless ``keep=True``, which leaves them running (and their logs in place)
  and says which (the window's "keep agents running" choice). A fleet still
  open when the interpreter exits (its owner never closed it) is closed then
  (``atexit``, 2 s grace). A SIGKILLed window cannot stop its agents: they run
  on, each in its own session (nothing here survives a SIGKILL to say so).
- Agents run in their own session (``start_new_session``): a Ctrl+C in the
  window's terminal reaches the window, which stops them (or keeps them) itself.
  Each gets ``LANEMON_STARTED_BY=<this pid>`` in its environment and the
  directory holding this ``lanemon`` package first on ``PYTHONPATH`` (it runs
  the same code as the window).

:func:`process_rows` lists together the agents started here, the store's
sessions (``SqlStore.sessions()``, contract 2: ``SessionRow`` with session,
pid, host, name, started, last_seen, info) and the window's worker processes
(``lanemon.work.worker_processes``). :meth:`Fleet.act` applies a button to a
row: an agent started here through the fleet; a session of this host started
elsewhere through its pid (only if that process is alive and runs lanemon,
and never this process); a worker only by Kill (``lanemon.work.kill_worker``);
a session of another host cannot be signalled from here (said, not done).

:class:`SessionWatch` reads the store's sessions about once a second
(``run()``, a task); a store that cannot be opened or read is kept in
``error`` and tried again on the next round.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanemon import procs

__all__ = [
    "ACTIONS", "AgentSpec", "AgentState", "Fleet", "FleetError", "ProcessRow", "ROLES", "LANES",
    "STOP_GRACE_S", "STRATEGIES", "SessionWatch", "SignalResult", "agent_argv", "process_rows",
]

#: seconds a stopped (SIGTERM) process has to exit before it gets SIGKILL: more than an agent's
#: own clean stop takes (``agent.GIVE_BACK_S`` + ``agent.GRACE_S`` for its running jobs, then
#: its workers shut down), which 5 s cut short with a SIGKILL
STOP_GRACE_S = 10.0
#: seconds between two reads of the store's sessions
SESSIONS_PERIOD_S = 1.0
ROLES = ("lanes", "staff")
LANES = ("store", "local")
STRATEGIES = ("short", "long", "claim")
#: the buttons of a row: action -> (signal, what it is called on screen)
ACTIONS = {
    "pause": (signal.SIGSTOP, "Pause (SIGSTOP)"),
    "resume": (signal.SIGCONT, "Resume (SIGCONT)"),
    "kill": (signal.SIGKILL, "Kill (SIGKILL)"),
    "stop": (signal.SIGTERM, "Stop (SIGTERM)"),
}
STARTED_BY_ENV = "LANEMON_STARTED_BY"
_ROOT = str(Path(__file__).resolve().parent.parent.parent)   # the folder holding ``lanemon``


class FleetError(Exception):
    """An agent could not be started (bad input, or the OS refused): one line for the user."""


@dataclass(frozen=True)
class AgentSpec:
    """What one agent is started with (contract 1's options); refused (``FleetError``)
    when a value is not one the agent takes."""

    store_url: str
    name: str
    lanes: str = "store"
    role: str = "lanes"
    strategy: str | None = None
    queues: tuple[str, ...] = ()
    seed: int | None = None
    #: more options for ``lanemon agent``, appended as given (e.g. ``("--staff", "2")``)
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.store_url.strip():
            raise FleetError("an agent needs a store URL (sqlite:///FILE or postgresql://...)")
        if not self.name or any(c.isspace() for c in self.name):
            raise FleetError(f"an agent's name is one word, not {self.name!r}")
        if self.lanes not in LANES:
            raise FleetError(f"lanes is one of {', '.join(LANES)}, not {self.lanes!r}")
        if self.role not in ROLES:
            raise FleetError(f"role is one of {', '.join(ROLES)}, not {self.role!r}")
        if self.strategy is not None and self.strategy not in STRATEGIES:
            raise FleetError(f"strategy is one of {', '.join(STRATEGIES)}, not {self.strategy!r}")


def agent_argv(spec: AgentSpec) -> list[str]:
    """``lanemon agent`` with ``spec``'s options (contract 4)."""
    argv = [sys.executable, "-m", "lanemon", "agent", "--store", spec.store_url, "--name", spec.name,
            "--lanes", spec.lanes, "--role", spec.role]
    if spec.strategy is not None:
        argv += ["--strategy", spec.strategy]
    if spec.queues:
        argv += ["--queues", ",".join(spec.queues)]
    if spec.seed is not None:
        argv += ["--seed", str(spec.seed)]
    return argv + list(spec.extra)


@dataclass(frozen=True)
class SignalResult:
    """What a button did: ``sent`` (the signal went to the process) and one line saying so
    or why not."""

    sent: bool
    message: str


@dataclass(frozen=True)
class AgentState:
    """One agent started here, as it is now. ``state``: "running", "paused" (stopped by a
    signal, whoever sent it), "stopping" (SIGTERM sent, not exited yet) or "exited N"
    (``returncode`` N; -N: killed by signal N). ``last_line``: the last line of its log
    once it has exited (an error says why)."""

    name: str
    pid: int
    spec: AgentSpec
    started: float            # time.time() when it was started
    state: str
    returncode: int | None
    log_path: str
    last_line: str = ""

    @property
    def alive(self) -> bool:
        return self.returncode is None


@dataclass(eq=False)
class _Child:
    name: str
    spec: AgentSpec
    popen: subprocess.Popen
    pidfd: int | None
    started: float
    log_path: str
    stop_sent: bool = False
    paused_here: bool = False     # our last signal to it was SIGSTOP (where /proc cannot say)
    last_line: str | None = None  # its log's last line, read once it has exited
    reaped: threading.Event = field(default_factory=threading.Event)


def _last_line(path: str, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            lines = [ln.strip() for ln in fh.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1] if lines else ""


def _signame(sig: int) -> str:
    return signal.Signals(sig).name


def _exited(code: int) -> str:
    return f"exited {code}"


class Fleet:
    """The agent processes started here; see the module docstring.

    ``command(spec) -> argv`` builds each agent's command line (default
    :func:`agent_argv`; public, so a test may start another program).
    ``log_dir``: where the agents' logs go (default: a new temporary folder,
    removed by ``aclose`` unless agents are kept running).
    """

    def __init__(self, command: Callable[[AgentSpec], list[str]] = agent_argv, *,
                 log_dir: str | None = None, name_prefix: str | None = None) -> None:
        self.command = command
        self._log_dir = log_dir
        self._own_dir = log_dir is None
        self._children: dict[str, _Child] = {}
        self._count = 0
        self._prefix = name_prefix if name_prefix is not None else f"agent-{os.getpid()}-"
        self._closed = False
        self._lock = threading.Lock()
        self._on_reaped: list[Callable[[], None]] = []   # called (on the reaper thread) after each reap
        _open_fleets.add(self)

    # --- starting ---------------------------------------------------------------------------
    def next_name(self) -> str:
        """A name no agent of this fleet has had: ``agent-<this pid>-<n>``."""
        while True:
            self._count += 1
            name = f"{self._prefix}{self._count}"
            if name not in self._children:
                return name

    def start(self, spec: AgentSpec) -> AgentState:
        """Start one agent; its state. Raises ``FleetError`` (one line) when its name is taken
        by a live agent, the fleet is closed, or the OS cannot start it."""
        if self._closed:
            raise FleetError("the fleet is closed: no new agent")
        old = self._children.get(spec.name)
        if old is not None and old.popen.returncode is None:
            raise FleetError(f"an agent named {spec.name} is running already (pid {old.popen.pid})")
        argv = self.command(spec)
        if self._log_dir is None:
            self._log_dir = tempfile.mkdtemp(prefix="lanemon-agents-")
        log_path = os.path.join(self._log_dir, f"{spec.name}.log")
        env = dict(os.environ)
        env[STARTED_BY_ENV] = str(os.getpid())
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = _ROOT + (os.pathsep + path if path else "")
        try:
            with open(log_path, "ab") as log:
                popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True, close_fds=True)
        except OSError as exc:
            raise FleetError(f"{spec.name} not started: {exc}") from exc
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(popen.pid)   # our unreaped child: the pid is still it
            except OSError:
                pidfd = None
        child = _Child(spec.name, spec, popen, pidfd, time.time(), log_path)
        self._children[spec.name] = child
        threading.Thread(target=self._reap, args=(child,), name="lanemon-agent-reaper", daemon=True).start()
        return self._state(child)

    def _reap(self, child: _Child) -> None:
        """Reaper thread: wait for the agent to exit (reaping it), close its pidfd."""
        child.popen.wait()
        with self._lock:
            fd, child.pidfd = child.pidfd, None
        if fd is not None:
            os.close(fd)
        child.reaped.set()
        for tell in list(self._on_reaped):
            tell()

    # --- reading ----------------------------------------------------------------------------
    def agents(self) -> list[AgentState]:
        """Every agent started here (exited ones too, until ``forget_exited``), oldest first."""
        return [self._state(c) for c in list(self._children.values())]

    def agent(self, name: str) -> AgentState | None:
        child = self._children.get(name)
        return None if child is None else self._state(child)

    def live(self) -> list[AgentState]:
        """The agents that have not exited."""
        return [a for a in self.agents() if a.alive]

    def forget_exited(self) -> int:
        """Drop the exited agents from the list; how many."""
        gone = [n for n, c in self._children.items() if c.reaped.is_set()]
        for name in gone:
            del self._children[name]
        return len(gone)

    def _state(self, child: _Child) -> AgentState:
        code = child.popen.returncode if child.reaped.is_set() else None   # (exited = reaped)
        if code is not None:
            if child.last_line is None:
                child.last_line = _last_line(child.log_path)
            return AgentState(child.name, child.popen.pid, child.spec, child.started, _exited(code), code,
                              child.log_path, child.last_line or "")
        letter = procs.state(child.popen.pid)
        if letter is None or letter == "Z":        # no /proc, or exiting this very moment
            paused = child.paused_here
        else:
            paused = letter in ("T", "t")
        state = "stopping" if child.stop_sent else "paused" if paused else "running"
        return AgentState(child.name, child.popen.pid, child.spec, child.started, state, None, child.log_path)

    # --- signals ----------------------------------------------------------------------------
    def pause(self, name: str) -> SignalResult:
        """SIGSTOP: the agent stops running (its leases run out; see the store)."""
        return self._send(name, signal.SIGSTOP)

    def resume(self, name: str) -> SignalResult:
        """SIGCONT: a paused agent runs again."""
        return self._send(name, signal.SIGCONT)

    def kill(self, name: str) -> SignalResult:
        """SIGKILL: the agent ends now, whatever it was doing (mid-save included)."""
        return self._send(name, signal.SIGKILL)

    def stop(self, name: str, grace: float = STOP_GRACE_S) -> SignalResult:
        """SIGTERM (and SIGCONT, so a paused agent gets it now): the agent stops cleanly;
        one still running ``grace`` s later gets SIGKILL. Returns at once."""
        result = self._send(name, signal.SIGTERM)
        child = self._children.get(name)
        if result.sent and child is not None:
            child.stop_sent = True
            self._signal_child(child, signal.SIGCONT)
            threading.Thread(target=self._escalate, args=(child, grace), name="lanemon-agent-stop",
                             daemon=True).start()
        return result

    def stop_all(self, grace: float = STOP_GRACE_S) -> list[SignalResult]:
        """``stop`` every agent that has not exited."""
        return [self.stop(a.name, grace) for a in self.live()]

    def _escalate(self, child: _Child, grace: float) -> None:
        if not child.reaped.wait(grace):
            self._signal_child(child, signal.SIGKILL)

    def _signal_child(self, child: _Child, sig: int) -> bool:
        """Send ``sig`` to the child unless it has exited; whether it was sent."""
        with self._lock:      # the reaper closes the pidfd under the same lock
            if child.popen.returncode is not None or child.reaped.is_set():
                return False
            try:
                if child.pidfd is not None:
                    signal.pidfd_send_signal(child.pidfd, sig)
                else:
                    os.kill(child.popen.pid, sig)
            except (ProcessLookupError, OSError):
                return False
        return True

    def _send(self, name: str, sig: int) -> SignalResult:
        child = self._children.get(name)
        what = _signame(sig)
        if child is None:
            return SignalResult(False, f"{what} not sent: no agent named {name} was started here")
        pid = child.popen.pid
        if not self._signal_child(child, sig):
            child.reaped.wait(1.0)     # (its reaper is about to have its status)
            code = child.popen.returncode
            status = f" (exit status {code})" if code is not None else ""
            return SignalResult(False, f"{what} not sent: {name} (pid {pid}) has already exited{status}")
        if sig == signal.SIGSTOP:
            child.paused_here = True
        elif sig == signal.SIGCONT:
            child.paused_here = False
        return SignalResult(True, f"{what} sent to {name} (pid {pid})")

    # --- the end ----------------------------------------------------------------------------
    def _finish(self, keep: bool) -> list[AgentState]:
        self._closed = True
        if keep:
            return self.live()
        return []

    async def aclose(self, keep: bool = False, grace: float = STOP_GRACE_S) -> list[AgentState]:
        """Stop every agent still running and wait until each is reaped (SIGKILL after
        ``grace``); the fleet then refuses new agents. ``keep``: leave them running instead;
        returns those left running (``[]`` unless ``keep``). Never raises."""
        kept = self._finish(keep)
        if keep:
            return kept
        loop = asyncio.get_running_loop()
        reaped = asyncio.Event()

        def tell() -> None:
            with contextlib.suppress(RuntimeError):      # (that loop is closed)
                loop.call_soon_threadsafe(reaped.set)
        self._on_reaped.append(tell)
        try:
            self.stop_all(grace)
            while True:
                reaped.clear()
                if all(c.reaped.is_set() for c in list(self._children.values())):
                    break
                await reaped.wait()
        finally:
            self._on_reaped.remove(tell)
        self._remove_logs()
        return []

    def close_now(self, keep: bool = False, grace: float = STOP_GRACE_S) -> list[AgentState]:
        """``aclose``, blocking (no event loop needed)."""
        kept = self._finish(keep)
        if keep:
            return kept
        self.stop_all(grace)
        for child in list(self._children.values()):
            child.reaped.wait()
        self._remove_logs()
        return []

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def log_dir(self) -> str | None:
        """Where the agents' logs are (``None`` until the first start)."""
        return self._log_dir

    def _remove_logs(self) -> None:
        if self._own_dir and self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)

    # --- rows ---------------------------------------------------------------------------------
    def act(self, row: ProcessRow, action: str, grace: float = STOP_GRACE_S,
            kill_worker: Callable[[int], bool] | None = None) -> SignalResult:
        """Apply ``action`` ("pause", "resume", "kill", "stop") to the process of ``row``;
        never raises (see the module docstring for what may be signalled)."""
        if action not in ACTIONS:
            return SignalResult(False, f"no such action: {action!r}")
        sig, _label = ACTIONS[action]
        what = _signame(sig)
        if row.kind == "agent":
            return getattr(self, action)(row.name, grace) if action == "stop" else getattr(self, action)(row.name)
        if not row.can_signal or row.pid is None:
            return SignalResult(False, f"{what} not sent to {row.name}: {row.why_not}")
        if row.kind == "worker":
            if action != "kill":
                return SignalResult(False, f"{what} not sent to {row.name}: a worker process takes Kill only "
                                           f"(the Runs tab's Cancel stops a run)")
            if kill_worker is None:
                from lanemon.work import kill_worker
            if kill_worker(row.pid):
                return SignalResult(True, f"SIGKILL sent to {row.name} (pid {row.pid})")
            return SignalResult(False, f"SIGKILL not sent: {row.name} (pid {row.pid}) has already exited")
        return _signal_elsewhere(row, sig, grace)


# fleets not closed yet: stopped at interpreter exit (a window that never ran its shutdown)
_open_fleets: weakref.WeakSet[Fleet] = weakref.WeakSet()


@atexit.register
def _stop_open_fleets() -> None:
    for fleet in list(_open_fleets):
        if not fleet.closed:
            fleet.close_now(grace=2.0)


def _signal_elsewhere(row: ProcessRow, sig: int, grace: float) -> SignalResult:
    """Signal a lanemon process of this host that this window did not start (by pid)."""
    what = _signame(sig)
    pid = row.pid
    assert pid is not None
    born = procs.started(pid)
    if not procs.alive(pid):
        return SignalResult(False, f"{what} not sent: {row.name} (pid {pid}) has already exited")
    cmd = procs.cmdline(pid)     # None: no /proc to ask (then the pid is trusted); "" (a process
    if cmd is not None and "lanemon" not in cmd:    # between fork and exec, a zombie): not lanemon
        return SignalResult(False, f"{what} not sent: pid {pid} no longer runs lanemon (its session is stale)")
    sigs = [sig, signal.SIGCONT] if sig == signal.SIGTERM else [sig]
    try:
        for s in sigs:
            os.kill(pid, s)
    except ProcessLookupError:
        return SignalResult(False, f"{what} not sent: {row.name} (pid {pid}) has already exited")
    except PermissionError:
        return SignalResult(False, f"{what} not sent to {row.name} (pid {pid}): not allowed (another user's)")
    if sig == signal.SIGTERM:
        threading.Thread(target=_escalate_elsewhere, args=(pid, born, grace), name="lanemon-agent-stop",
                         daemon=True).start()
    return SignalResult(True, f"{what} sent to {row.name} (pid {pid}, not started here)")


def _escalate_elsewhere(pid: int, born: int | None, grace: float) -> None:
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not procs.alive(pid) or procs.started(pid) != born:
            return
        time.sleep(0.05)
    if procs.alive(pid) and procs.started(pid) == born:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# --- the listing ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProcessRow:
    """One line of the Processes tab.

    ``kind``: "agent" (started here), "session" (a store session not started here:
    another terminal, another host, or this window's own), "worker" (the window's
    worker process). ``here``: started by this window; ``origin``: "here", "this
    window" (its own store session), "elsewhere", "runs tab". ``state``: "running",
    "paused", "stopping", "exited N", "gone" (a session whose process is no more),
    "remote" (another host's: its heartbeat is all we know), "busy"/"idle" (a
    worker). ``jobs_running``/``lanes_held``/``heartbeat_age_s``: from the store
    session's ``info`` and ``last_seen`` (``None``: not known). ``can_signal``
    False comes with ``why_not``.
    """

    key: str
    kind: str
    name: str
    pid: int | None
    host: str
    here: bool
    state: str
    origin: str = ""
    role: str = ""
    jobs_running: int | None = None
    lanes_held: int | None = None
    heartbeat_age_s: float | None = None
    can_signal: bool = True
    why_not: str = ""
    detail: str = ""


def _role(spec_or_info: Any) -> str:
    if isinstance(spec_or_info, AgentSpec):
        role, lanes, strategy = spec_or_info.role, spec_or_info.lanes, spec_or_info.strategy
    else:
        info = spec_or_info if isinstance(spec_or_info, dict) else {}
        role, lanes, strategy = info.get("role", ""), info.get("lanes", ""), info.get("strategy")
    parts = [str(role)] if role else []
    if role == "staff":
        if strategy:
            parts.append(str(strategy))
    elif lanes:
        parts.append(f"{lanes} lanes")
    return " · ".join(parts)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def this_host() -> str:
    return socket.gethostname()


def process_rows(agents: Iterable[AgentState], sessions: Sequence[Any] = (), workers: Iterable[Any] = (), *,
                 host: str | None = None, now: float | None = None, own_pid: int | None = None,
                 hide: Iterable[str] = ()) -> list[ProcessRow]:
    """The rows of the Processes tab: the agents started here (each with its store
    session's figures, matched by host and pid, exited or not: a killed agent's session
    stays in the store until reaped there, and is shown on its agent's row), then the other sessions (this host's
    first), then the worker processes. ``sessions``: ``SessionRow``-like objects
    (attributes session, pid, host, name, started, last_seen, info); ``workers``:
    ``WorkerProcess``-like (pid, kind, busy); ``now``: ``time.time()`` (heartbeat ages
    are by this machine's clock against the store's); ``hide``: session ids left out (the
    session the listing itself reads through)."""
    hidden = set(hide)
    sessions = [s for s in sessions if getattr(s, "session", None) not in hidden]
    host = this_host() if host is None else host
    now = time.time() if now is None else now
    own = os.getpid() if own_pid is None else own_pid
    by_pid = {}
    for s in sessions:
        if getattr(s, "host", None) == host and getattr(s, "pid", None) is not None:
            by_pid.setdefault(s.pid, s)
    rows: list[ProcessRow] = []
    matched = set()
    for a in agents:
        s = by_pid.get(a.pid)        # (an exited agent keeps its last heartbeat; a killed one's row stays)
        info = getattr(s, "info", None) or {}
        if s is not None:
            matched.add(id(s))
        rows.append(ProcessRow(
            key=f"agent:{a.name}", kind="agent", name=a.name, pid=a.pid, host=host, here=True, state=a.state,
            origin="here",
            role=_role(a.spec), jobs_running=_int(info.get("jobs_running")),
            lanes_held=_int(info.get("lanes_held")),
            heartbeat_age_s=None if s is None else max(0.0, now - float(s.last_seen)),
            can_signal=a.alive, why_not="" if a.alive else f"it has {a.state}",
            detail=a.last_line))
    others = [s for s in sessions if id(s) not in matched]
    others.sort(key=lambda s: (getattr(s, "host", "") != host, getattr(s, "host", ""), getattr(s, "name", "")))
    for s in others:
        info = getattr(s, "info", None) or {}
        pid = getattr(s, "pid", None)
        s_host = getattr(s, "host", "") or "?"
        local = s_host == host
        if not local:
            state, ok = "remote", False
            why = f"it runs on another host ({s_host}): signals reach this host's processes only"
        elif pid == own:
            state, ok, why = "running", False, "it is this window"
        elif pid is None or not procs.alive(pid):
            state, ok, why = "gone", False, "its process has exited (the store still lists its session)"
        else:
            letter = procs.state(pid)
            state, ok, why = ("paused" if letter in ("T", "t") else "running"), True, ""
        age = getattr(s, "last_seen", None)
        mine = local and pid == own
        rows.append(ProcessRow(
            key=f"session:{getattr(s, 'session', '')}", kind="session",
            name=(getattr(s, "name", "") or "?") + (" (this window)" if mine else ""),
            pid=pid, host=s_host, here=False, state=state, origin="this window" if mine else "elsewhere",
            role=_role(info),
            jobs_running=_int(info.get("jobs_running")), lanes_held=_int(info.get("lanes_held")),
            heartbeat_age_s=None if age is None else max(0.0, now - float(age)),
            can_signal=ok, why_not=why))
    for w in workers:
        busy = bool(getattr(w, "busy", False))
        kind = getattr(w, "kind", "")
        rows.append(ProcessRow(
            key=f"worker:{w.pid}", kind="worker", name=f"{kind} worker", pid=w.pid, host=host, here=True,
            state="busy" if busy else "idle", origin="runs tab", role="runs tab", can_signal=True))
    return rows


# --- the store's sessions --------------------------------------------------------------------------

async def _open_for_sessions(url: str):
    from lanemon.store import open_store
    return await open_store(url, name="lanemon-window-processes")


class SessionWatch:
    """The store's sessions, read every ``period_s`` s by ``run()`` (a task of its owner).

    ``rows``: the latest read (``SessionRow``-like objects; ``[]`` before one);
    ``own_session``: the id of the session it reads through (the listing leaves it out);
    ``error``: why the latest round could not read them (``None`` after a good read):
    a store that cannot be opened, a lost connection (the session is closed and opened
    again next round), or a store without ``sessions()``. ``reads`` counts good reads.
    ``opener(url)`` opens a session (default ``lanemon.store.open_store``; tests give
    a fake). ``aclose()`` closes the session it opened.
    """

    def __init__(self, url: str, *, opener: Callable[[str], Awaitable[Any]] = _open_for_sessions,
                 period_s: float = SESSIONS_PERIOD_S) -> None:
        self.url = url
        self.period_s = period_s
        self.rows: list[Any] = []
        self.error: str | None = None
        self.reads = 0
        self.own_session: str | None = None    # the session it reads through (not an agent)
        self._opener = opener
        self._store = None

    async def read_once(self) -> None:
        try:
            if self._store is None:
                self._store = await self._opener(self.url)
                self.own_session = getattr(self._store, "session", None)
            read = getattr(self._store, "sessions", None)
            if read is None:
                self.error = ("this store cannot list its sessions (no SqlStore.sessions() in this "
                              "lanemon yet): agents started elsewhere are not shown")
                return
            self.rows = list(await read())
            self.error = None
            self.reads += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = f"store sessions not read: {type(exc).__name__}: {exc}"
            await self._drop()

    async def run(self) -> None:
        while True:
            await self.read_once()
            await asyncio.sleep(self.period_s)

    async def _drop(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                await store.close()

    async def aclose(self) -> None:
        await self._drop()
