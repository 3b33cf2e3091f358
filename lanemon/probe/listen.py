"""Listening for probes: ``listen(book, address)`` and ``lanemon probe listen|demo`` (Qt-free).

``listen`` binds a UDP endpoint on the running loop and feeds every datagram to a ``ProbeBook``.
It binds 127.0.0.1 unless given another address explicitly; a port that is taken or an address
that cannot be bound is ``ListenError`` (one line).

``lanemon probe listen [--address A] [--seconds S] [--json]`` prints what it receives: a line per
summary and per block report, or with ``--json`` one JSON object per line (the report's wire
fields plus ``"t"``, the listener's monotonic clock at arrival). It says where it listens on
stderr, runs for ``S`` seconds (or until Ctrl-C), then prints what it dropped, by reason, on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from lanemon.probe import parse_address
from lanemon.probe.book import Key, ProbeBook
from lanemon.probe.wire import DEFAULT_ADDRESS, Block, Summary, as_dict


class ListenError(Exception):
    """The listener could not bind (one line: the address and why)."""


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, book: ProbeBook) -> None:
        self.book = book

    def datagram_received(self, data: bytes, addr) -> None:
        self.book.feed(data, addr)

    def error_received(self, exc: Exception) -> None:  # ICMP noise on UDP: nothing to do
        pass


async def listen(book: ProbeBook, address: str = DEFAULT_ADDRESS) -> asyncio.DatagramTransport:
    """A UDP endpoint on ``address`` feeding ``book``; close the transport to stop listening."""
    try:
        host, port = parse_address(address)
    except ValueError as exc:
        raise ListenError(str(exc)) from None
    loop = asyncio.get_running_loop()
    try:
        transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(book), local_addr=(host, port))
    except OSError as exc:
        raise ListenError(f"cannot listen on {address}: {exc.strerror or exc}") from None
    return transport


def bound_address(transport: asyncio.DatagramTransport) -> str:
    """``host:port`` a transport listens on (the real port when 0 was asked)."""
    host, port = transport.get_extra_info("sockname")[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --- the command line ----------------------------------------------------------------------

def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 7 * 24 * 3600:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 and at most a week of seconds")
    return value


def add_parser(sub: Any, parser_class: type) -> None:
    """Add ``probe listen`` and ``probe demo`` to the ``lanemon`` subparsers ``sub``."""
    probe = sub.add_parser("probe", help="hear probes of asyncio programs, or run a demo program with one")
    cmds = probe.add_subparsers(dest="probe_command", parser_class=parser_class, metavar="COMMAND")
    cmds.required = True
    li = cmds.add_parser("listen", help="print the summaries and block reports probes send")
    li.add_argument("--address", default=DEFAULT_ADDRESS,
                    help=f"host:port to listen on (default {DEFAULT_ADDRESS}; another host only when given)")
    li.add_argument("--seconds", type=_seconds, help="stop after this many seconds (default: until Ctrl-C)")
    li.add_argument("--json", action="store_true", help="one JSON object per line")
    de = cmds.add_parser("demo", help="an asyncio echo server with a probe, blocking its loop on purpose")
    de.add_argument("--address", default=DEFAULT_ADDRESS, help=f"where its probe sends (default {DEFAULT_ADDRESS})")
    de.add_argument("--seconds", type=_seconds, help="stop after this many seconds (default: until Ctrl-C)")
    de.add_argument("--every", type=_seconds, default=3.0, help="seconds between blocks (default 3)")


def describe(key: Key, item: Summary | Block) -> str:
    """One human line (a block: a few lines) for a received report."""
    who = f"{key[0]} (pid {key[1]} on {key[2]})"
    if isinstance(item, Summary):
        return (f"{who}: lag p50 {item.p50:.2f} p99 {item.p99:.2f} max {item.max:.2f} ms "
                f"over {item.ticks} ticks")
    lines = [f"{who}: BLOCKED {item.duration_ms:.1f} ms in task {item.task or '-'}, "
             f"{item.samples} samples; where the time went:"]
    for frames, count in item.folded[:5]:
        lines.append(f"  {count:5d}  {frames[0] if frames else '?'}")
    return "\n".join(lines)


def cmd_probe(args: argparse.Namespace, bad_input: type[Exception]) -> int:
    """Run ``lanemon probe listen|demo``; a refusal is raised as ``bad_input(one line)``."""
    if args.probe_command == "demo":
        from lanemon.probe.demo import run_demo

        try:
            parse_address(args.address)
        except ValueError as exc:
            raise bad_input(str(exc)) from None
        return run_demo(args.address, seconds=args.seconds, every_s=args.every)
    return _listen(args, bad_input)


def _listen(args: argparse.Namespace, bad_input: type[Exception]) -> int:
    def show(key: Key, item: Summary | Block) -> None:
        if args.json:
            d = as_dict(item)
            d["t"] = round(time.monotonic(), 6)
            print(json.dumps(d), flush=True)
        else:
            print(describe(key, item), flush=True)

    book = ProbeBook(on_item=show)

    async def go() -> None:
        transport = await listen(book, args.address)
        print(f"listening on {bound_address(transport)}", file=sys.stderr, flush=True)
        try:
            if args.seconds is None:
                await asyncio.Event().wait()
            else:
                await asyncio.sleep(args.seconds)
        finally:
            transport.close()

    try:
        asyncio.run(go())
    except ListenError as exc:
        raise bad_input(str(exc)) from None
    except KeyboardInterrupt:
        pass
    dropped = ", ".join(f"{reason} {n}" for reason, n in sorted(book.dropped.items())) or "none"
    print(f"received {book.accepted}, dropped: {dropped}", file=sys.stderr, flush=True)
    return 0
