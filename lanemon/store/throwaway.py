"""A throwaway PostgreSQL cluster for tests, benchmarks and CI (Qt-free, no psycopg needed).

``with ThrowawayCluster() as pg: url = pg.create_database("t1")`` runs a private
PostgreSQL server for the length of the block:

- its binaries come from ``/usr/lib/postgresql/<version>/bin`` (newest version
  first) or else from ``PATH``; ``available()`` says whether a cluster can run
  here and, when not, why (no binaries, root without a ``postgres`` user or
  ``runuser``);
- everything lives in one new directory under ``/tmp`` (the data directory,
  the Unix socket directory and the server log); when running as root the
  directory is given to the ``postgres`` user and ``initdb`` and the server run
  through ``runuser -u postgres --`` (both refuse to run as root);
- ``initdb -A trust --no-sync -U postgres -E UTF8 --locale=C``, then
  ``pg_ctl -w -l LOG start`` with the server on a free TCP port of 127.0.0.1
  only, its socket in the private directory (never ``/var/run/postgresql``,
  never port 5432: a stock cluster on the same machine is left alone), with
  ``fsync``, ``synchronous_commit`` and ``full_page_writes`` off: nothing here
  survives a crash, by design;
- ``url(dbname)`` is ``postgresql://postgres@127.0.0.1:PORT/dbname`` (trust
  authentication: no password); ``create_database`` / ``drop_database`` run
  ``psql`` (no Python driver needed);
- leaving the block, an exception or ``KeyboardInterrupt`` included, stops the
  server (``pg_ctl -m immediate stop -w``; if that cannot, ``SIGQUIT`` then
  ``SIGKILL`` to the postmaster) and removes the directory; ``stop()`` returns
  once the postmaster has exited. A server that fails to start raises
  ``ClusterError`` carrying the last lines of its log, after the same clean-up;
  so does an interruption during the start. ``stop()`` is idempotent and also
  registered with ``atexit``;
- if this Python process dies without ``stop()`` (a ``SIGKILL``, a crash, an
  unhandled ``SIGTERM``: nothing of it runs then), a watcher started with the
  server stops it the same way (``pg_ctl -m immediate stop``) and removes the
  directory. The watcher is a small Python process of its own (stdlib only, in
  its own session, re-parented to PID 1 at once) that waits on a pipe whose
  only writer is this process: ``stop()`` tells it to leave; end of file means
  its owner is gone (with a ``fork`` start method, children forked meanwhile
  hold the pipe too: the watcher acts once they are gone as well).

The server is a daemon (``pg_ctl`` starts it in its own session), not a child
of this process: tests that check a window or a run leaves no child process
behind are not disturbed by a cluster that lives for the whole test session.
Its exit is reaped by PID 1 (a late-reaping PID 1 shows it as ``<defunct>`` for
a moment; it has exited).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lanemon.procs import alive

__all__ = ["Availability", "ClusterError", "ThrowawayCluster", "available", "find_bindir"]

_DEBIAN_GLOB_ROOT = "/usr/lib/postgresql"
_NAME_RX = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")
_BINARIES = ("initdb", "pg_ctl", "postgres", "psql")
_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 30.0
_PORT_ATTEMPTS = 5
_LOG_TAIL_LINES = 20


class ClusterError(RuntimeError):
    """The cluster could not be set up, started or used (the message says why)."""


@dataclass(frozen=True)
class Availability:
    """Whether a throwaway cluster can run here; true when it can.

    ``reason`` is empty when it can, else one sentence saying why not;
    ``bindir`` is the directory of ``initdb``/``pg_ctl``/``postgres``/``psql`` (None when not found);
    ``run_as`` is the user the server runs as through ``runuser`` (None: this process's user).
    """

    ok: bool
    reason: str
    bindir: str | None
    run_as: str | None

    def __bool__(self) -> bool:
        return self.ok


def _version_key(path: str) -> tuple[int, ...]:
    name = os.path.basename(os.path.dirname(path))  # /usr/lib/postgresql/<name>/bin
    return tuple(int(p) for p in re.findall(r"\d+", name)) or (-1,)


def _has_binaries(bindir: str) -> bool:
    return all(os.access(os.path.join(bindir, b), os.X_OK) for b in _BINARIES)


def find_bindir(search_root: str = _DEBIAN_GLOB_ROOT) -> str | None:
    """The directory holding ``initdb``, ``pg_ctl``, ``postgres`` and ``psql``: Debian's
    ``<search_root>/<version>/bin``, highest version first, else the directory of
    ``initdb`` on ``PATH`` (symbolic links followed); None when there is none."""
    try:
        versions = [os.path.join(search_root, v, "bin") for v in os.listdir(search_root)]
    except OSError:
        versions = []
    for bindir in sorted(versions, key=_version_key, reverse=True):
        if _has_binaries(bindir):
            return bindir
    on_path = shutil.which("initdb")
    if on_path:
        bindir = os.path.dirname(os.path.realpath(on_path))
        if _has_binaries(bindir):
            return bindir
    return None


def available(bindir: str | None = None) -> Availability:
    """Whether a throwaway cluster can run here (binaries from ``bindir`` or ``find_bindir()``)."""
    if bindir is None:
        bindir = find_bindir()
        if bindir is None:
            return Availability(False, "PostgreSQL's initdb/pg_ctl/postgres/psql were not found in "
                                f"{_DEBIAN_GLOB_ROOT}/*/bin or on PATH (Debian: apt-get install postgresql-15)",
                                None, None)
    elif not _has_binaries(bindir):
        return Availability(False, f"{bindir} does not hold initdb, pg_ctl, postgres and psql", None, None)
    if os.name != "posix":
        return Availability(False, "the throwaway cluster runs only on POSIX systems", bindir, None)
    if os.geteuid() != 0:
        return Availability(True, "", bindir, None)
    # initdb and postgres refuse to run as root.
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return Availability(False, "running as root, and there is no 'postgres' user to run the server as "
                            "(initdb and postgres refuse root)", bindir, None)
    if shutil.which("runuser") is None:
        return Availability(False, "running as root, and 'runuser' is missing to run the server as 'postgres'",
                            bindir, None)
    return Availability(True, "", bindir, "postgres")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env() -> dict[str, str]:
    """This process's environment without libpq/server settings (PGDATA, PGPORT, PGHOST, ...)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env



# The watcher (see the module docstring): argv = read end of the pipe, the cluster's
# directory, pg_ctl, the server user ("" for none). Stdlib only: it runs whatever lanemon
# is installed, or none.
_WATCHER = r"""
import os, shutil, subprocess, sys
fd, top, pg_ctl, run_as = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
if os.fork():
    os._exit(0)
while True:
    try:
        said = os.read(fd, 1)
        break
    except InterruptedError:
        continue
if said:
    os._exit(0)
cmd = [pg_ctl, "-D", os.path.join(top, "data"), "stop", "-m", "immediate", "-w", "-t", "60"]
if run_as:
    cmd = ["runuser", "-u", run_as, "--", *cmd]
try:
    subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120, cwd="/")
finally:
    shutil.rmtree(top, ignore_errors=True)
"""


@dataclass
class _Timings:
    initdb_s: float = 0.0
    start_s: float = 0.0
    stop_s: float = 0.0


class ThrowawayCluster:
    """A private PostgreSQL server and its directory, gone after ``stop()`` (see the module docstring).

    ``server_options`` adds ``-c name=value`` settings to the server's command line.
    ``start()`` raises ``ClusterError`` when the cluster cannot run here or fails to start
    (nothing is left behind then); ``url``, ``create_database`` and ``drop_database`` need a
    running cluster and raise ``ClusterError`` otherwise.
    """

    def __init__(self, *, bindir: str | None = None, server_options: Mapping[str, str] | None = None,
                 tmp_root: str = "/tmp") -> None:
        self._bindir_arg = bindir
        self._server_options = dict(server_options or {})
        self._tmp_root = tmp_root
        self._dir: str | None = None
        self._port: int | None = None
        self._started = False
        self._stopped = False
        self._pid: int | None = None
        self._run_as: str | None = None
        self._bindir: str | None = None
        self._timings = _Timings()
        self._atexit_registered = False
        self._watcher_fd: int | None = None   # the write end of the watcher's pipe

    # ----- what it is ----------------------------------------------------------------------------

    @property
    def directory(self) -> str | None:
        """The cluster's directory under ``/tmp`` (data, socket, log); None before ``start()``.
        Still set after ``stop()``, when it no longer exists."""
        return self._dir

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1."""
        self._require_running()
        return self._port

    @property
    def postmaster_pid(self) -> int | None:
        """The server's (postmaster's) process id once started; kept after ``stop()`` for checks."""
        return self._pid

    @property
    def running(self) -> bool:
        """The server was started, has not been stopped and its postmaster is alive."""
        return self._started and not self._stopped and self._pid is not None and alive(self._pid)

    @property
    def timings(self) -> dict[str, float]:
        """Seconds spent in ``initdb``, in starting the server until it was ready, and in ``stop()``."""
        t = self._timings
        return {"initdb_s": t.initdb_s, "start_s": t.start_s, "stop_s": t.stop_s}

    @property
    def log_path(self) -> str | None:
        """The server log (gone after ``stop()``)."""
        return None if self._dir is None else os.path.join(self._dir, "server.log")

    def url(self, dbname: str = "postgres") -> str:
        """``postgresql://postgres@127.0.0.1:PORT/dbname`` (trust authentication, no password)."""
        self._require_running()
        return f"postgresql://postgres@127.0.0.1:{self._port}/{dbname}"

    # ----- databases -----------------------------------------------------------------------------

    def create_database(self, name: str, *, template: str = "template0") -> str:
        """Create the empty database ``name`` (lower-case letters, digits, ``_``) and return its URL.
        Raises ``ClusterError`` if it exists or the name is refused."""
        self._check_name(name)
        self._check_name(template)
        self._psql(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop ``name`` if it exists, ending its sessions first (``WITH (FORCE)``)."""
        self._check_name(name)
        self._psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def databases(self) -> list[str]:
        """The names of the databases that accept connections (templates excluded)."""
        out = self._psql("SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY 1", tuples=True)
        return [line for line in out.splitlines() if line]

    @staticmethod
    def _check_name(name: str) -> None:
        if not _NAME_RX.match(name):
            raise ClusterError(f"database name {name!r} refused: use lower-case letters, digits and _ "
                               "(at most 63, not starting with a digit)")

    def _psql(self, sql: str, *, tuples: bool = False) -> str:
        self._require_running()
        cmd = [os.path.join(self._bindir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
               "-d", self.url("postgres"), "-c", sql]
        if tuples:
            cmd[1:1] = ["-A", "-t"]
        res = self._run(cmd, timeout=60, as_server_user=False)
        if res.returncode != 0:
            raise ClusterError(f"psql failed ({sql}): {res.stdout.strip()}")
        return res.stdout

    # ----- life ----------------------------------------------------------------------------------

    def __enter__(self) -> ThrowawayCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Create the directory, ``initdb``, start the server and wait until it accepts connections.
        On any failure or interruption everything made so far is removed, then the error is raised."""
        if self._dir is not None:
            raise ClusterError("a ThrowawayCluster starts once")
        avail = available(self._bindir_arg)
        if not avail:
            raise ClusterError(f"no throwaway PostgreSQL cluster here: {avail.reason}")
        self._bindir, self._run_as = avail.bindir, avail.run_as
        atexit.register(self.stop)
        self._atexit_registered = True
        try:
            self._make_dir()
            t0 = time.perf_counter()
            self._initdb()
            t1 = time.perf_counter()
            self._start_server()
            self._start_watcher()
            self._started = True
            self._timings.initdb_s = t1 - t0
            self._timings.start_s = time.perf_counter() - t1
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server and remove the directory; returns once the postmaster has exited.
        The stop is ``pg_ctl -m immediate stop -w``; if that fails or leaves it running (no pid
        file yet: an interrupted start), ``SIGQUIT`` (the same immediate shutdown), then
        ``SIGKILL`` after 30 s. Idempotent; never raises for a server that already exited."""
        t0 = time.perf_counter()
        self._stopped = True
        self._stop_server()
        if self._dir is not None and os.path.exists(self._dir):
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dismiss_watcher()
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False
        self._timings.stop_s = time.perf_counter() - t0

    def restart(self) -> None:
        """Stop the server with a fast shutdown (``pg_ctl -m fast``: sessions are ended, the
        WAL is flushed and a checkpoint written) and start it again on the same port and data
        directory. Every connection is lost; everything committed before stays (an immediate
        shutdown would lose the last commits here: the server runs with
        ``synchronous_commit=off``). Raises ``ClusterError`` (after a full ``stop()``) when the
        server does not come back."""
        self._require_running()
        try:
            res = self._pg_ctl(["stop", "-m", "fast", "-w", "-t", str(int(_STOP_TIMEOUT_S))],
                               timeout=_STOP_TIMEOUT_S + 30)
            if res.returncode != 0:
                raise ClusterError(f"the PostgreSQL server did not stop for a restart: {res.stdout.strip()}")
            res = self._pg_ctl(["start", "-w", "-t", str(int(_START_TIMEOUT_S)), "-l", self.log_path,
                                "-o", self._server_command_options()], timeout=_START_TIMEOUT_S + 30)
            self._pid = self._pid_from_file()
            if res.returncode != 0 or self._pid is None:
                raise ClusterError("the PostgreSQL server did not start again; the end of its log:\n"
                                   f"{self._tail(self._read_log())}")
        except BaseException:
            self.stop()
            raise

    # ----- internals -----------------------------------------------------------------------------

    def _require_running(self) -> None:
        if not self.running:
            raise ClusterError("the throwaway cluster is not running")

    def _make_dir(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="lanemon-pg-", dir=self._tmp_root)
        os.mkdir(os.path.join(self._dir, "socket"), 0o700)
        if self._run_as is not None:
            import pwd

            pw = pwd.getpwnam(self._run_as)
            for path in (self._dir, os.path.join(self._dir, "socket")):
                os.chown(path, pw.pw_uid, pw.pw_gid)

    def _as_server_user(self, cmd: Sequence[str]) -> list[str]:
        if self._run_as is None:
            return list(cmd)
        return ["runuser", "-u", self._run_as, "--", *cmd]

    def _run(self, cmd: Sequence[str], *, timeout: float, as_server_user: bool) -> subprocess.CompletedProcess:
        """Run ``cmd`` to its end in its own process group, output captured; on a timeout or an
        interruption the whole group is killed and reaped before the error propagates."""
        full = self._as_server_user(cmd) if as_server_user else list(cmd)
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=self._dir, env=_clean_env(), start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        return subprocess.CompletedProcess(full, proc.returncode, out, None)

    def _initdb(self) -> None:
        cmd = [os.path.join(self._bindir, "initdb"), "-D", os.path.join(self._dir, "data"),
               "-A", "trust", "--no-sync", "-U", "postgres", "-E", "UTF8", "--locale=C"]
        res = self._run(cmd, timeout=120, as_server_user=True)
        if res.returncode != 0:
            raise ClusterError(f"initdb failed (exit {res.returncode}): {self._tail(res.stdout)}")

    def _start_server(self) -> None:
        for attempt in range(_PORT_ATTEMPTS):
            self._port = _free_port()
            res = self._pg_ctl(["start", "-w", "-t", str(int(_START_TIMEOUT_S)), "-l", self.log_path,
                                "-o", self._server_command_options()], timeout=_START_TIMEOUT_S + 30)
            self._pid = self._pid_from_file()
            if res.returncode == 0 and self._pid is not None:
                return
            log = self._read_log()
            if "Address already in use" not in log or attempt == _PORT_ATTEMPTS - 1:
                raise ClusterError(f"the PostgreSQL server did not start ({res.stdout.strip()}); "
                                   f"the end of its log:\n{self._tail(log)}")
            # Another process took the port between our probe and the server's bind: try another.
            self._stop_server()

    def _start_watcher(self) -> None:
        """Start the watcher that stops the server if this process dies without ``stop()``;
        returns once it runs on its own (its first process, which forks it, is reaped)."""
        read_end, write_end = os.pipe()          # (neither is inherited by what is exec'd later)
        try:
            proc = subprocess.Popen([sys.executable, "-c", _WATCHER, str(read_end), self._dir,
                                     os.path.join(self._bindir, "pg_ctl"), self._run_as or ""],
                                    pass_fds=(read_end,), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True, cwd="/")
            proc.wait()
        except BaseException:
            os.close(write_end)                  # (a watcher already forked sees its owner gone)
            raise
        finally:
            os.close(read_end)
        self._watcher_fd = write_end

    def _dismiss_watcher(self) -> None:
        """Tell the watcher its owner stopped the cluster (it leaves without acting)."""
        fd, self._watcher_fd = self._watcher_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, b"s")
            os.close(fd)

    def _server_command_options(self) -> str:
        opts = [f"-p {self._port}", f"-k {shlex.quote(os.path.join(self._dir, 'socket'))}",
                "-c listen_addresses=127.0.0.1", "-c fsync=off", "-c synchronous_commit=off",
                "-c full_page_writes=off"]
        opts += [f"-c {shlex.quote(f'{name}={value}')}" for name, value in self._server_options.items()]
        return " ".join(opts)

    def _pg_ctl(self, args: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess:
        cmd = [os.path.join(self._bindir, "pg_ctl"), "-D", self._data_dir(), *args]
        return self._run(cmd, timeout=timeout, as_server_user=True)

    def _data_dir(self) -> str:
        return os.path.join(self._dir, "data")

    def _pid_from_file(self) -> int | None:
        lines = self._read_lines(os.path.join(self._data_dir(), "postmaster.pid"))
        return int(lines[0]) if lines and lines[0].strip().isdigit() else None

    def _server_pids(self) -> set[int]:
        """Live processes of this cluster's server: those whose command line names its data
        directory (the postmaster, even before its pid file exists, and the shell ``pg_ctl``
        starts it with; never a later process that reused a pid). Without ``/proc``: the pid
        in ``postmaster.pid``."""
        if self._dir is None:
            return set()
        from_file = self._pid_from_file()
        if not os.path.isdir("/proc"):
            return {from_file} if from_file is not None and alive(from_file) else set()
        pids = set()
        needle = self._data_dir().encode()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if needle in fh.read() and alive(int(name)):
                        pids.add(int(name))
            except OSError:
                continue
        return pids

    def _wait_gone(self, pids: set[int], timeout: float) -> set[int]:
        """Poll until none of ``pids`` is alive (a zombie has exited) or ``timeout``; those left."""
        deadline = time.monotonic() + timeout
        left = {p for p in pids if alive(p)}
        while left and time.monotonic() < deadline:
            time.sleep(0.01)
            left = {p for p in left if alive(p)}
        return left

    def _stop_server(self) -> None:
        if self._dir is None or not self._server_pids():
            return
        res = None
        with contextlib.suppress(ClusterError, OSError, subprocess.SubprocessError):
            res = self._pg_ctl(["stop", "-m", "immediate", "-w", "-t", str(int(_STOP_TIMEOUT_S))],
                               timeout=_STOP_TIMEOUT_S + 10)
        left = self._server_pids()
        if res is not None and res.returncode == 0:
            # The postmaster removes its pid file (what pg_ctl waits for) just before it exits.
            left = self._wait_gone(left, _STOP_TIMEOUT_S)
        if not left:
            return
        # pg_ctl could not do it (no pid file yet, or it did not finish): signal directly.
        for sig in (signal.SIGQUIT, signal.SIGKILL):
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            left = self._wait_gone(left, _STOP_TIMEOUT_S) | self._server_pids()
            if not left:
                return

    @staticmethod
    def _read_lines(path: str) -> list[str]:
        try:
            with open(path) as fh:
                return fh.read().splitlines()
        except OSError:
            return []

    def _read_log(self) -> str:
        return "\n".join(self._read_lines(self.log_path)) if self.log_path else ""

    @staticmethod
    def _tail(text: str) -> str:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(empty)"
