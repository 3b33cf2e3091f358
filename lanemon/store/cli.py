"""``lanemon store init|submit|dump|reset``: a SQL store from the command line (Qt-free).

    lanemon store init   --store URL              make the schema (idempotent)
    lanemon store submit --store URL --workspace W[,W2...] [--queue reservations|cafe]
                         (--seconds S [--fail] | --cpu-ms MS) [--count N]
    lanemon store dump   --store URL [--json]     lanes, jobs, ledger, counts
    lanemon store reset  --store URL [--yes]      drop every lanemon table

``--store`` defaults to the environment variable ``LANEMON_STORE``. Only
``sqlite:///...`` and ``postgresql://...`` stores make sense here (``memory:``
lives inside one process: refused).

Output
------
* ``init`` prints ``created schema vN in STORE`` or ``STORE is already a
  lanemon store, schema vN`` (nothing changes then).
* ``submit`` queues ``--count`` jobs (default 1); job *i* goes to the *i*-th
  workspace of the comma list, cycled. It prints the new ids on stdout, one a
  line, and a one-line summary on stderr.
* ``dump`` prints tables for a terminal; ``dump --json`` prints one JSON
  object (:func:`dump_json`), its shape is stable:

  - ``store`` (the URL without its password), ``schema`` (int), ``now``
    (the store's clock, seconds since the Unix epoch: every time below is on
    it);
  - ``lanes``: ``[{lane, workspace, owner, session, epoch, since,
    lease_until, stop_requested, stop_reason}]`` -- the held lanes;
  - ``jobs``: ``[{id, workspace, queue, state, run_id, error, attempts,
    start, end, owner, epoch, seconds, cpu_ms, fail, taken_by, taken_until}]`` --
    ``start``/``end`` when the store saw it start running / end (null before),
    ``taken_by``/``taken_until`` the session that reserved it while queued
    (``take_jobs``) and until when (null when none), ``owner`` and
    ``epoch`` the lane owner and epoch that last wrote it;
  - ``ledger``: ``[{at, writer, job, state, lane, workspace, epoch_held,
    epoch_current}]`` -- every refused (fenced) write, ``epoch_current`` null
    when the lane was free;
  - ``history``: ``[{epoch, lane, workspace, owner, session, claimed_at,
    ended_at, end_reason}]`` -- every ownership ever granted;
  - ``stats``: ``{key: count}`` over :data:`lanemon.store.sql.backend.STATS_KEYS`,
    with ``claims`` (and the ``board_*`` counts once the store has a board);
    ``stale_releases`` (int, also in ``stats``);
  - ``sessions``: ``[{session, pid, host, name, started, last_seen, info}]``
    -- ``last_seen`` the session's last heartbeat, ``info`` the JSON object it
    says about itself (``SqlStore.set_info``; an agent's role, lanes, queues,
    jobs running, lanes held).

* ``reset`` drops the tables after asking ``[y/N]`` on a terminal; without a
  terminal it needs ``--yes``.

Bad input (:class:`BadInput` -> ``lanemon: error: ...``, exit status 2, no
traceback): a malformed URL, an unreachable server, a refused login, a
read-only SQLite file, a file that is not SQLite, a database of another schema
or another schema version, a store that does not exist on ``submit``/``dump``/
``reset``. A refused command writes nothing: the arguments are checked before
the store is opened, a store that is not there is not created (only ``init``
creates one), and every write is one transaction. No message holds a password.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import math
import os
import sys
from typing import Any
from urllib.parse import unquote, urlsplit

from lanemon.store.url import StoreError, StoreUrl, parse

__all__ = ["ENV_STORE", "MAX_COUNT", "add_parser", "cmd_store", "dump_json", "dump_text"]

#: the environment variable ``--store`` defaults to
ENV_STORE = "LANEMON_STORE"
#: the most jobs one ``submit`` queues (the window's burst control has the same bound)
MAX_COUNT = 100_000
#: the longest simulated job in seconds and CPU job in ms (the window's job form's bounds)
MAX_SECONDS = 600.0
MAX_CPU_MS = 60_000.0
QUEUES = ("reservations", "cafe")


class _Refused(Exception):
    """Raised inside the commands; ``cmd_store`` turns it into the CLI's ``BadInput``."""


# --- argument types -----------------------------------------------------------------

def _seconds(text: str) -> float:
    return _number(text, "seconds", 0.0, MAX_SECONDS)


def _cpu_ms(text: str) -> float:
    return _number(text, "CPU milliseconds", 1.0, MAX_CPU_MS)


def _number(text: str, unit: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{text} {unit} is out of range ({low:g} to {high:,g})")
    return value


def _count(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of jobs") from None
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{value:,} jobs is out of range (1 to {MAX_COUNT:,})")
    return value


def _workspaces(text: str) -> list[str]:
    names = [w.strip() for w in text.split(",")]
    from lanemon.lanes.names import workspace_problem

    for ws in names:
        if not ws:
            raise argparse.ArgumentTypeError(f"{text!r}: an empty workspace name in the list")
        problem = workspace_problem(ws)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
    return names


def add_parser(sub: Any, parser_class: type) -> None:
    """Add ``store`` and its four commands to the ``lanemon`` subparsers ``sub``."""
    store = sub.add_parser("store", help="init, fill, show or reset a SQLite / PostgreSQL store")
    cmds = store.add_subparsers(dest="store_command", parser_class=parser_class, metavar="COMMAND")
    cmds.required = True
    where = f"the store: sqlite:///path/file.db or postgresql://user@host/db (default: ${ENV_STORE})"

    i = cmds.add_parser("init", help="make the lanemon tables (idempotent)")
    i.add_argument("--store", help=where)

    s = cmds.add_parser("submit", help="queue jobs (one, or a burst with --count)")
    s.add_argument("--store", help=where)
    s.add_argument("--workspace", type=_workspaces, required=True, metavar="W[,W2...]",
                   help="the job's workspace; a comma list is cycled over the --count jobs")
    s.add_argument("--queue", choices=QUEUES, default="reservations", help="default reservations")
    how = s.add_mutually_exclusive_group(required=True)
    how.add_argument("--seconds", type=_seconds, help=f"a simulated job of this many seconds (0 to {MAX_SECONDS:g})")
    how.add_argument("--cpu-ms", type=_cpu_ms, help=f"a CPU job of this many ms (1 to {MAX_CPU_MS:,g})")
    s.add_argument("--fail", action="store_true", help="the simulated job fails at its end")
    s.add_argument("--count", type=_count, default=1, help=f"how many jobs (1 to {MAX_COUNT:,}, default 1)")

    d = cmds.add_parser("dump", help="print lanes, jobs, refused writes and counts")
    d.add_argument("--store", help=where)
    d.add_argument("--json", action="store_true", help="one JSON object (see lanemon.store.cli)")

    r = cmds.add_parser("reset", help="drop every lanemon table of the store")
    r.add_argument("--store", help=where)
    r.add_argument("--yes", action="store_true", help="do not ask")


# --- the commands -------------------------------------------------------------------

def cmd_store(args: argparse.Namespace, bad_input: type[Exception]) -> int:
    """Run ``lanemon store COMMAND``; a refusal is raised as ``bad_input(one line)``."""
    text = args.store if args.store is not None else os.environ.get(ENV_STORE)
    try:
        if text is None or not text.strip():
            raise _Refused(f"no store given: pass --store URL or set {ENV_STORE} "
                           "(sqlite:///path/file.db or postgresql://user@host/db)")
        url = parse(text)
        if url.engine == "memory":
            raise _Refused("memory: is the window's in-process store, there is nothing to "
                           f"{args.store_command} from here: use sqlite:///path/file.db or postgresql://...")
        command = _COMMANDS[args.store_command]
        if args.store_command == "submit" and args.fail and args.cpu_ms is not None:
            raise _Refused("--fail is for simulated jobs (--seconds): a CPU job runs to its end")
        if args.store_command == "reset" and not args.yes and not sys.stdin.isatty():
            raise _Refused(f"reset drops every lanemon table of {url.redacted()}: "
                           "pass --yes (no terminal to ask on)")
        if args.store_command == "reset" and not args.yes and not _confirmed(url):
            print("nothing dropped")
            return 0
        return asyncio.run(command(url, args))
    except (_Refused, StoreError) as exc:
        raise bad_input(_scrub(str(exc), text)) from None
    except BrokenPipeError:  # `lanemon store dump | head`: the reader left; say nothing more
        _quiet_stdout()
        return 1
    except OSError as exc:  # a socket or file error a backend did not word itself
        raise bad_input(_scrub(f"store {_shown(text)}: {exc}", text)) from None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (captured): nothing to flush
        pass


def _shown(text: str | None) -> str:
    from lanemon.store.url import redact
    return redact(text or "")


def _scrub(message: str, text: str | None) -> str:
    """``message`` on one line, with the URL's password (if any) replaced by ``***``."""
    message = " ".join(message.split())
    password = None
    try:
        password = urlsplit(text or "").password
    except ValueError:
        pass
    for secret in {password, unquote(password or "")} - {None, ""}:
        message = message.replace(secret, "***")
    return message


async def _open(url: StoreUrl, *, create: bool, older_ok: bool = False):
    from lanemon.store.sql import open_sql_store
    return await open_sql_store(url, create=create, name="lanemon-cli", older_ok=older_ok)


async def _init(url: StoreUrl, args: argparse.Namespace) -> int:
    from lanemon.store.sql.backend import SCHEMA_VERSION

    try:  # a lanemon store already? (refusals that init cannot fix are raised again below)
        store = await _open(url, create=False)
    except StoreError:
        store = None
    if store is not None:
        await store.close()
        print(f"{url.redacted()} is already a lanemon store, schema v{SCHEMA_VERSION}")
        return 0
    store = await _open(url, create=True)
    await store.close()
    print(f"created schema v{SCHEMA_VERSION} in {url.redacted()}")
    return 0


async def _submit(url: StoreUrl, args: argparse.Namespace) -> int:
    from lanemon.store.sql.backend import JobSpec

    names = args.workspace
    simulated = args.seconds is not None
    specs = [JobSpec(workspace=names[i % len(names)], queue=args.queue,
                     seconds=args.seconds if simulated else 0.0,
                     cpu_ms=0.0 if simulated else args.cpu_ms, fail=args.fail)
             for i in range(args.count)]
    store = await _open(url, create=False)
    try:
        ids = await store.submit(specs)
    finally:
        await store.close()
    sys.stdout.write("".join(f"{i}\n" for i in ids))
    sys.stdout.flush()
    what = f"{args.seconds:g} s simulated{', failing' if args.fail else ''}" if simulated else f"{args.cpu_ms:g} CPU ms"
    print(f"lanemon: queued {len(ids):,} job{'s' if len(ids) != 1 else ''} ({what}) in {args.queue} "
          f"of {url.redacted()}", file=sys.stderr)
    return 0


async def _dump(url: StoreUrl, args: argparse.Namespace) -> int:
    store = await _open(url, create=False)
    try:
        data = await store.dump()
    finally:
        await store.close()
    if args.json:
        print(json.dumps(dump_json(url, data), indent=2))
    else:
        print(dump_text(url, data))
    return 0


async def _reset_question(url: StoreUrl) -> str:
    """What ``reset`` asks before dropping (opening the store first: a store that reset
    would refuse is refused before anything is asked)."""
    from lanemon.store.sql.backend import SCHEMA_VERSION

    store = await _open(url, create=False, older_ok=True)
    try:
        version = store.backend.schema_version
        if version != SCHEMA_VERSION:
            return f"drop every lanemon table of {url.redacted()} (an older store, schema v{version})? [y/N] "
        data = await store.dump()
    finally:
        await store.close()
    return (f"drop every lanemon table of {url.redacted()} ({len(data['jobs']):,} jobs, "
            f"{len(data['lanes']):,} held lanes)? [y/N] ")


def _confirmed(url: StoreUrl) -> bool:
    """Ask on the terminal, outside any event loop; only y/yes agrees."""
    question = asyncio.run(_reset_question(url))
    try:
        answer = input(question)
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


async def _reset(url: StoreUrl, args: argparse.Namespace) -> int:
    store = await _open(url, create=False, older_ok=True)
    try:
        await store.reset()
    finally:
        await store.close()
    print(f"dropped the lanemon tables of {url.redacted()} (lanemon store init makes them again)")
    return 0


_COMMANDS = {"init": _init, "submit": _submit, "dump": _dump, "reset": _reset}


# --- the dump's two forms ---------------------------------------------------------------

def dump_json(url: StoreUrl, data: dict[str, Any]) -> dict[str, Any]:
    """The ``dump --json`` object (shape in the module docstring)."""
    from lanemon.store.sql.backend import SCHEMA_VERSION

    keys = ("now", "lanes", "jobs", "ledger", "history", "stats", "stale_releases", "sessions")
    return {"store": url.redacted(), "schema": SCHEMA_VERSION, **{k: data[k] for k in keys}}


def _clock(t: float | None) -> str:
    if t is None:
        return "-"
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%H:%M:%S.%f")[:-3]


def _table(title: str, header: tuple[str, ...], rows: list[tuple], empty: str) -> str:
    if not rows:
        return f"{title}: {empty}"
    cells = [tuple("-" if v is None else str(v) for v in row) for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    return "\n".join([f"{title} ({len(rows):,}):", "  " + line(header),
                      *("  " + line(c) for c in cells)])


def dump_text(url: StoreUrl, data: dict[str, Any]) -> str:
    """The ``dump`` tables for a terminal (times: the store's clock, UTC)."""
    now = data["now"]
    parts = [f"store {url.redacted()}  (store clock {_dt.datetime.fromtimestamp(now, _dt.UTC):%Y-%m-%d} "
             f"{_clock(now)} UTC; times below are UTC)"]
    parts.append(_table("lanes", ("lane", "workspace", "owner", "epoch", "since", "lease left"),
                        [(r["lane"], r["workspace"], r["owner"], r["epoch"], _clock(r["since"]),
                          f"{r['lease_until'] - now:.1f} s") for r in data["lanes"]],
                        "none held"))
    parts.append(_table("jobs", ("id", "workspace", "queue", "state", "work", "attempts", "start", "end",
                                 "owner", "epoch", "run", "error"),
                        [(j["id"], j["workspace"], j["queue"], j["state"], _work(j), j["attempts"],
                          _clock(j["start"]), _clock(j["end"]), j["owner"], j["epoch"], j["run_id"], j["error"])
                         for j in data["jobs"]],
                        "none"))
    parts.append(_table("refused writes (ledger)",
                        ("at", "writer", "job", "state", "lane", "workspace", "epoch held", "current"),
                        [(_clock(r["at"]), r["writer"], r["job"], r["state"], r["lane"], r["workspace"],
                          r["epoch_held"], "free" if r["epoch_current"] is None else r["epoch_current"])
                         for r in data["ledger"]],
                        "none"))
    stats = data["stats"]
    parts.append("counts: " + ", ".join(f"{k} {stats[k]:,}" for k in sorted(stats)))
    parts.append(f"stale releases: {data['stale_releases']:,}")
    return "\n\n".join(parts)


def _work(job: dict[str, Any]) -> str:
    if job["cpu_ms"]:
        return f"{job['cpu_ms']:g} CPU ms"
    return f"{job['seconds']:g} s" + (" fail" if job["fail"] else "")
