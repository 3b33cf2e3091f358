"""The ``lanemon`` command.

    lanemon [--store URL]         open the window (its lanes on a shared store)
    lanemon --talk FILE [--check] open the window with a talk script loaded at step 1;
                                  --check: only check the script (exit 0, or 2 with the
                                  line and what is wrong on stderr), no window
    lanemon talk --example        print a ready talk (``lanemon.talk.example``)
    lanemon --replay FILE         open the window replaying a recording (File -> Record)
    lanemon measure [...]         run whole / sliced / worker, write the report
    lanemon place --cpu-ms X      say where a job belongs (word, then reason)
    lanemon bench [NAME|all]      print measured figures
    lanemon store init|submit|dump|reset --store URL   a SQLite / PostgreSQL store
                                  (``lanemon.store.cli``)
    lanemon agent --store URL [--name NAME] [--queues reservations,cafe] [--lanes store|local]
                  [--role lanes|staff] [--strategy short|long|claim] [--staff N] [--counters N]
                  [--seed N] [--grace S] [--stats FILE]
                                  a headless agent working a shared store until SIGTERM/SIGINT
                                  (``lanemon.agents``); exit 0 after a clean stop, 2 with one
                                  line when the store cannot be opened; SIGUSR1 prints where
                                  each of its tasks waits
    lanemon probe listen|demo     hear asyncio programs' probes; a demo program with one
                                  (``lanemon.probe.listen``)
    lanemon install-desktop       add a launcher entry (--uninstall removes it)
    lanemon --version

Bad input anywhere: one line on stderr and exit status 2, no traceback, and
before any work: ``measure --total`` is 1 to ``MAX_TOTAL`` iterations
(``lanemon.work.runs``), an output file (``--out``, ``--json``) must be
creatable in an existing folder (checked by creating and removing a temporary
file there), ``--version`` takes nothing else.

An output file that cannot be written at the end (disk full, folder removed
during the run): the figures were already printed on stdout; one line
``lanemon: error: cannot write PATH: REASON`` on stderr, exit status 2, and no
file half-written (``lanemon.files`` writes a temporary file and renames it;
the temporary file is removed on failure, an older file of that name stays).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile

from lanemon import __version__
from lanemon.files import cannot_write

EXIT_BAD_INPUT = 2


class BadInput(Exception):
    """Input the user can fix; reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise BadInput(message)


# --- argument types -----------------------------------------------------------

def _int_at_least(low: int, high: int | None = None, why_high: str = ""):
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} must be at least {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{value:,} is more than the maximum, {high:,}{why_high}")
        return value
    return parse


def _ms(*, positive: bool, at_most: float | None = None):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of milliseconds")
        if value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(f"{text} must be {'positive' if positive else 'zero or more'}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"{text} must be at most {at_most:g}")
        return value
    return parse


def _queues(text: str) -> list[str]:
    from lanemon.lanes import QUEUE_NAMES

    names = [q.strip() for q in text.split(",")]
    for q in names:
        if q not in QUEUE_NAMES:
            raise argparse.ArgumentTypeError(f"{q!r} is not a queue: use {','.join(QUEUE_NAMES)} or one of them")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r} names a queue twice")
    return names


def _seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} seconds is out of range (0 to 3,600)")
    return value


def build_parser() -> argparse.ArgumentParser:
    from lanemon.work.runs import DEFAULT_TOTAL, MAX_TOTAL
    from lanemon.work.slicing import MAX_SLICE_MS
    from lanemon.work.workers import KINDS

    parser = _Parser(prog="lanemon", description="Make event-loop responsiveness and scheduling contention visible.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--store", metavar="URL", default=None, dest="window_store",
                        help="the window's Lanes & queues on a shared store (sqlite:///path/file.db or "
                             "postgresql://host/db; default: its own simulation, memory:)")
    parser.add_argument("--talk", metavar="FILE", default=None,
                        help="open the window with this talk script (TOML) loaded at step 1")
    parser.add_argument("--check", action="store_true",
                        help="with --talk: check the script and exit (0: fine; 2: what is wrong, on stderr)")
    parser.add_argument("--replay", metavar="FILE", default=None, dest="window_replay",
                        help="open the window replaying this recording (made with File -> Record)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    t = sub.add_parser("talk", help="talk scripts: print the example talk")
    t.add_argument("--example", action="store_true", help="print a ready talk (TOML) on stdout")

    m = sub.add_parser("measure", help="run the job whole, sliced and in a worker; write the report")
    m.add_argument("--total",
                   type=_int_at_least(1, MAX_TOTAL, " (a whole run of it blocks ~50 s at 10 M iterations/s)"),
                   default=DEFAULT_TOTAL,
                   help=f"iterations of the job, 1 to {MAX_TOTAL:,} (default {DEFAULT_TOTAL:,})")
    how = m.add_mutually_exclusive_group()
    how.add_argument("--slice-size", type=_int_at_least(1), help="iterations per slice")
    how.add_argument("--slice-ms", type=_ms(positive=True, at_most=MAX_SLICE_MS),
                     help=f"time budget per slice in ms (default 8, at most {MAX_SLICE_MS:g})")
    m.add_argument("--worker", choices=KINDS, default="cold", help="worker kind for the worker run (default cold)")
    m.add_argument("--out", help="write the JSON report to this file")

    p = sub.add_parser("place", help="say where a job belongs: loop, slice or worker")
    p.add_argument("--cpu-ms", type=_ms(positive=False), required=True, help="the job's measured CPU time in ms")
    p.add_argument("--shared-state", action="store_true", help="the job touches shared state")
    p.add_argument("--threshold-ms", type=_ms(positive=True), default=None,
                   help="worker threshold in ms (default 50)")

    from lanemon.bench import BENCHES, parse_minutes

    b = sub.add_parser("bench", help="print measured performance figures")
    b.add_argument("name", nargs="?", default="all", choices=["all", *BENCHES],
                   help="one benchmark, or all (every one but soak and replay: they take minutes, "
                        "run them by name)")
    b.add_argument("--minutes", type=parse_minutes, help="soak only: how long to drive the window (default 10)")
    b.add_argument("--store", metavar="URL", help="store only: measure this store (adds jobs to it) instead of "
                   "a throwaway PostgreSQL cluster")
    b.add_argument("--json", help="also write the figures to this JSON file (each benchmark's by its name, "
                   "and 'goals': every goal judged, one record each: name, figure, floor, goal, met)")

    from lanemon.store.cli import add_parser as add_store_parser

    add_store_parser(sub, _Parser)

    from lanemon.probe.listen import add_parser as add_probe_parser

    add_probe_parser(sub, _Parser)

    a = sub.add_parser("agent", help="a headless agent working a shared store until SIGTERM/SIGINT")
    a.add_argument("--store", help="the store: sqlite:///path/file.db or postgresql://user@host/db "
                   "(default: $LANEMON_STORE)")
    a.add_argument("--name", help="the agent's name in the store (default agent-<pid>)")
    a.add_argument("--queues", type=_queues, default=None, metavar="Q[,Q2]",
                   help="role lanes: the queues it takes jobs from (default reservations,cafe)")
    a.add_argument("--lanes", choices=("store", "local"), default="store",
                   help="role lanes: lanes in the store (default) or each agent's own in memory "
                        "(the seed's design scaled out: one workspace runs in two agents at once)")
    a.add_argument("--role", choices=("lanes", "staff"), default="lanes",
                   help="lanes: run reservation jobs (default); staff: work the bank counters")
    a.add_argument("--strategy", choices=("short", "long", "claim"), default=None,
                   help="role staff: short lock, long lock or claim (default claim)")
    a.add_argument("--staff", type=_int_at_least(1, 1000), default=None, help="role staff: staff members")
    a.add_argument("--counters", type=_int_at_least(1, 1000), default=None, help="role staff: counters")
    a.add_argument("--seed", type=int, default=0, help="seed of its random choices (default 0)")
    a.add_argument("--grace", type=_seconds_arg, default=None,
                   help="role lanes: seconds its running jobs get to finish when stopped (default 5)")
    a.add_argument("--stats", help="write what it did as JSON to this file when it stops")

    d = sub.add_parser("install-desktop", help="add lanemon to the desktop's application launcher")
    d.add_argument("--uninstall", action="store_true", help="remove the launcher entry and icons")
    return parser


# --- commands -------------------------------------------------------------------

def _check_writable(path: str, option: str) -> None:
    """Refuse (``BadInput``) an output path that cannot be written, before any work."""
    if not path.strip():
        raise BadInput(f"{option} needs a file name, got {path!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BadInput(f"cannot write {path}: folder {folder} does not exist")
    if os.path.isdir(path):
        raise BadInput(f"cannot write {path}: it is a folder")
    try:  # the real test: a file can be created there (permissions, read-only disk, ACLs)
        fd, probe = tempfile.mkstemp(prefix=".lanemon-", suffix=".probe", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise BadInput(cannot_write(path, exc)) from None


def _write_json(path: str, data: object) -> None:
    """``data`` written atomically to ``path``, or ``BadInput`` saying why not (nothing half-written)."""
    from lanemon.files import write_json

    try:
        write_json(path, data)
    except OSError as exc:
        raise BadInput(cannot_write(path, exc)) from None


class _StderrProgress:
    """Progress on stderr: one updating line on a terminal, plain lines otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.width = 0

    def __call__(self, message: str) -> None:
        if self.tty:
            sys.stderr.write("\r" + message.ljust(self.width))
            self.width = len(message)
        else:
            sys.stderr.write(message + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.tty and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


def cmd_measure(args) -> int:
    from lanemon.work.report import measure, summary
    from lanemon.work.workers import shutdown_workers

    if args.out is not None:
        _check_writable(args.out, "--out")
    progress = _StderrProgress()

    async def go():
        try:
            return await measure(args.total, slice_size=args.slice_size, slice_ms=args.slice_ms,
                                 worker=args.worker, progress=progress)
        finally:
            shutdown_workers()

    report = asyncio.run(go())
    progress.done()
    print(summary(report), flush=True)      # on stdout first: a failed write loses nothing
    if args.out is not None:
        _write_json(args.out, report)
        print(f"report written to {args.out}")
    return 0


def cmd_place(args) -> int:
    from lanemon.work.placement import DEFAULT_THRESHOLD_MS, decide

    threshold = DEFAULT_THRESHOLD_MS if args.threshold_ms is None else args.threshold_ms
    try:
        decision = decide({"cpu_ms": args.cpu_ms, "shared_state": args.shared_state}, threshold)
    except (TypeError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    print(decision.where)
    print(decision.rule)
    return 0


def cmd_bench(args) -> int:
    from lanemon.ui import steady_process_settings

    steady_process_settings()  # the window benchmarks measure the window as run
    from lanemon import bench

    if args.json is not None:
        _check_writable(args.json, "--json")
    if args.minutes is not None and args.name != "soak":
        raise BadInput("--minutes is for the soak benchmark only: lanemon bench soak --minutes N")
    if args.store is not None and args.name != "store":
        raise BadInput("--store is for the store benchmark only: lanemon bench store --store URL")
    options = {} if args.minutes is None else {"minutes": args.minutes}
    if args.store is not None:
        from lanemon.store.url import StoreError, parse

        try:
            engine = parse(args.store).engine
        except StoreError as exc:
            raise BadInput(str(exc)) from None
        if engine == "memory":
            raise BadInput("--store: the store benchmark needs a sqlite:/// or postgresql:// store")
        options["store"] = args.store
    names = bench.in_all() if args.name == "all" else [args.name]
    figures = {}
    for name in names:
        if args.name != "all" and name not in bench.available():
            raise BadInput(f"benchmark {name!r} is not available in this install")
        print(f"== {name} ==")
        figures[name] = bench.run(name, print, **options)
        print()
    from lanemon.bench.goals import goals_of, summary_lines

    table = summary_lines(figures)
    if len(names) > 1 and table:
        print("== goals (each judged against what was measured in the same run) ==")
        for line in table:
            print(line)
    if args.json is not None:
        figures = dict(figures, goals=[dict(g, bench=name) for name, f in figures.items() for g in goals_of(f)])
        sys.stdout.flush()                  # the figures are out before a failed write is said
        _write_json(args.json, figures)
        print(f"figures written to {args.json}")
    return 0


def cmd_probe(args) -> int:
    from lanemon.probe.listen import cmd_probe as run

    return run(args, BadInput)


def cmd_install_desktop(args) -> int:
    from lanemon import desktop

    try:
        if args.uninstall:
            removed = desktop.uninstall()
            print("\n".join(f"removed {p}" for p in removed) or "nothing to remove: lanemon was not installed")
        else:
            for path in desktop.install():
                print(f"wrote {path}")
            print("lanemon is now in your application launcher")
    except (desktop.DesktopError, OSError) as exc:
        raise BadInput(str(exc)) from None
    return 0


def _print_tasks() -> None:
    """SIGUSR1 to an agent: every task of its loop and where it waits (its chain of
    awaits, innermost last), on stderr."""
    for task in asyncio.all_tasks():
        lines = [f"task {task.get_name()}:"]
        coro = task.get_coro()
        while coro is not None:
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
            if frame is not None:
                lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
            coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
        print("\n".join(lines), file=sys.stderr)
    sys.stderr.flush()


def cmd_agent(args) -> int:
    """``lanemon agent``: run until SIGTERM/SIGINT (then stop cleanly: exit 0); bad input or a
    store that cannot be opened: one line, exit 2 (see ``lanemon.agents.agent``)."""
    import signal

    from lanemon.store.cli import ENV_STORE
    from lanemon.store.url import StoreError, parse

    text = args.store if args.store is not None else os.environ.get(ENV_STORE)
    if text is None or not text.strip():
        raise BadInput(f"no store given: pass --store URL or set {ENV_STORE}")
    try:
        if parse(text).engine == "memory":
            raise BadInput("memory: lives inside one process: an agent needs a shared store "
                           "(sqlite:///path/file.db or postgresql://...)")
    except StoreError as exc:
        raise BadInput(f"--store: {exc}") from None
    if args.role == "lanes":
        for option in ("strategy", "staff", "counters"):
            if getattr(args, option) is not None:
                raise BadInput(f"--{option} is for --role staff")
    else:
        for option in ("queues", "grace"):
            if getattr(args, option) is not None:
                raise BadInput(f"--{option} is for --role lanes")
        if args.lanes != "store":
            raise BadInput("--lanes is for --role lanes")
        from lanemon.agents.staff import run_staff
    if args.stats is not None:
        _check_writable(args.stats, "--stats")
    name = args.name or f"agent-{os.getpid()}"
    import logging

    # a lost store is said once by the agent itself (lanemon.agents.agent "Losing the store"),
    # not once per failed reconnection by the pool and the keeper (their errors are counted)
    for noisy in ("psycopg.pool", "lanemon.store.sql"):
        logging.getLogger(noisy).setLevel(logging.ERROR)

    async def go(stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, _print_tasks)  # what is it waiting on?
        if args.role == "staff":
            strategy = args.strategy or "claim"
            from lanemon.counters.simulation import SimConfig
            staff = args.staff if args.staff is not None else SimConfig.staff
            counters = args.counters if args.counters is not None else SimConfig.counters
            await run_staff(text, name=name, strategy=strategy, staff=staff, counters=counters,
                            seed=args.seed, stop=stop)
            return
        from lanemon.agents.agent import GRACE_S, run_agent
        from lanemon.lanes import QUEUE_NAMES

        await run_agent(text, name=name, queues=args.queues or QUEUE_NAMES, lanes=args.lanes, seed=args.seed,
                        stop=stop, grace=GRACE_S if args.grace is None else args.grace, stats_path=args.stats)

    from lanemon.tasks import run_until_signalled

    try:
        run_until_signalled(go)
    except (StoreError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    return 0


def cmd_store(args) -> int:
    from lanemon.store.cli import cmd_store as run

    return run(args, BadInput)


X11_SOCKET_DIR = "/tmp/.X11-unix"
X11_TCP_BASE = 6000  # display N listens on TCP port 6000 + N


def x_display_unreachable(display: str, socket_dir: str = X11_SOCKET_DIR, timeout: float = 3.0) -> str | None:
    """Why the X display named ``display`` cannot be reached, or None when a server answers the
    connection (only the connection: authorisation is Qt's to check).

    ``[host]:N[.S]``: an empty host, ``unix`` or ``host/unix`` is display N's local socket
    (``socket_dir/XN``, or Linux's abstract socket of that name); any other host is TCP port
    6000 + N there. A name of another shape is left to Qt (None)."""
    import socket

    host, sep, rest = display.rpartition(":")
    number = rest.split(".", 1)[0]
    if not sep or not number.isdigit() or host.endswith(":"):  # DECnet "host::N" and others: Qt's call
        return None
    n = int(number)
    if host in ("", "unix") or host.endswith("/unix"):
        path = os.path.join(socket_dir, f"X{n}")
        for address in (path, "\0" + path):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                try:
                    sock.connect(address)
                except OSError:
                    continue
                return None
        return f"no X server answers on {path}"
    try:
        with socket.create_connection((host.strip("[]"), X11_TCP_BASE + n), timeout=timeout):
            return None
    except OSError as exc:
        return f"no X server answers at {host} port {X11_TCP_BASE + n} ({exc.strerror or exc})"


def _check_display() -> None:
    """On Linux Qt aborts the process (status 134, blaming a missing library) when there is no
    display or DISPLAY names one that is not there: say so in one line instead (exit 2)."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return
    display, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
    if not (display or wayland):
        raise BadInput("no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                       "run it in a desktop session, or headless with QT_QPA_PLATFORM=offscreen")
    if display and not wayland:
        why = x_display_unreachable(display)
        if why is not None:
            raise BadInput(f"cannot open display {display!r}: {why}; check DISPLAY, or run headless "
                           "with QT_QPA_PLATFORM=offscreen")


def _read_talk(path: str):
    """The checked talk in ``path``, or ``BadInput`` naming the line and what is wrong."""
    from lanemon.talk import TalkError, load

    try:
        return load(path)
    except TalkError as exc:
        raise BadInput(str(exc)) from None


def cmd_talk(args) -> int:
    if not args.example:
        raise BadInput("lanemon talk needs --example (print a ready talk); "
                       "to give a talk: lanemon --talk FILE")
    from lanemon.talk import EXAMPLE

    sys.stdout.write(EXAMPLE)
    return 0


def cmd_window(args) -> int:
    talk = None
    if args.talk is not None:
        talk = _read_talk(args.talk)           # before any window: the error, then exit 2
        if args.check:
            n = len(talk.steps)
            print(f"{args.talk}: a talk of {n} step{'' if n == 1 else 's'}, fine")
            return 0
    _check_display()
    from lanemon.ui import steady_process_settings

    steady_process_settings()  # before numpy and Qt are imported
    import lanemon.ui.kit.qt_start  # noqa: F401  (first: PySide6's per-module source scan made cheap)
    from lanemon.ui.shell.app import run_app

    return run_app(store_url=args.window_store, talk=talk, replay_path=args.window_replay)


COMMANDS = {
    "measure": cmd_measure,
    "place": cmd_place,
    "bench": cmd_bench,
    "install-desktop": cmd_install_desktop,
    "store": cmd_store,
    "agent": cmd_agent,
    "probe": cmd_probe,
    "talk": cmd_talk,
    None: cmd_window,
}


def main(argv: list[str] | None = None) -> int:
    # Frozen builds and spawned workers re-enter here; let multiprocessing act.
    import multiprocessing

    multiprocessing.freeze_support()
    try:
        args = build_parser().parse_args(argv)
        if args.version:
            if args.command is not None:
                raise BadInput("--version takes no other arguments")
            print(f"lanemon {__version__}")
            return 0
        if args.check and args.talk is None:
            raise BadInput("--check checks a talk script: lanemon --talk FILE --check")
        if args.talk is not None and args.command is not None:
            raise BadInput(f"--talk opens the window with a talk; it takes no command ({args.command})")
        if args.window_store is not None:
            if args.command is not None:
                raise BadInput(f"--store before a command is the window's; for {args.command}, put it after: "
                               f"lanemon {args.command} ... --store URL")
            from lanemon.store.url import StoreError, parse

            try:
                parse(args.window_store)
            except StoreError as exc:
                raise BadInput(f"--store: {exc}") from None
        if args.window_replay is not None:
            if args.command is not None:
                raise BadInput(f"--replay opens the window; it takes no command ({args.command})")
            if not os.path.isfile(args.window_replay):
                raise BadInput(f"--replay: no such file: {args.window_replay}")
        if args.command in ("measure", "bench"):
            # they start worker processes, agents, a throwaway PostgreSQL: a SIGTERM stops them
            # on the way out, as Ctrl+C does (the window has its own signal door)
            from lanemon.tasks import sigterm_interrupts

            with sigterm_interrupts():
                return COMMANDS[args.command](args)
        return COMMANDS[args.command](args)
    except BadInput as exc:
        print(f"lanemon: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)          # (a Terminated says its signal; Ctrl+C is SIGINT)
        print("lanemon: interrupted" if signum == 2 else f"lanemon: stopped by signal {signum}",
              file=sys.stderr)
        return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
