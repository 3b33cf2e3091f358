"""The probe inside this test's own loop: the listener, errors kept from the program, stopping."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

import lanemon.probe
from lanemon.probe.book import ProbeBook
from lanemon.probe.listen import ListenError, bound_address, listen
from lanemon.probe.wire import DEFAULT_ADDRESS


async def until(condition, within_s=20.0):
    end = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < end, "condition not reached"
        await asyncio.sleep(0.01)


def stall_in_here(ms):
    time.sleep(ms / 1000.0)


@pytest.mark.asyncio
async def test_listen_hears_a_probe_and_its_block():
    book = ProbeBook()
    transport = await listen(book, "127.0.0.1:0")
    try:
        async with lanemon.probe.watch(name="me", address=bound_address(transport)) as probe:
            await until(lambda: book.programs() and book.lag(book.programs()[0].key))
            stall_in_here(120)
            await until(lambda: book.blocks(("me", probe.pid, probe.host)))
        (view,) = book.programs()
        (b,) = book.blocks(view.key)
        assert 100 <= b.duration_ms <= 400
        assert any(f.endswith(" stall_in_here") for f in b.stack)
        assert b.task is not None                     # pytest-asyncio runs the test in a task
        assert view.blocks_last_minute == 1 and view.p99_now is not None
    finally:
        transport.close()
    assert not any(t.name == "lanemon-watchdog" for t in threading.enumerate())


@pytest.mark.asyncio
async def test_nothing_is_sent_after_stop():
    book = ProbeBook()
    transport = await listen(book, "127.0.0.1:0")
    try:
        probe = lanemon.probe.start(address=bound_address(transport), period_ms=1)
        await until(lambda: book.accepted >= 3)
        await probe.stop()
        sent = probe.sent
        await until(lambda: book.accepted == sent)    # all that was sent has arrived
        marker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(5):                             # the loop runs on: many periods, then a marker
            await asyncio.sleep(0.01)
        marker.sendto(b"marker", transport.get_extra_info("sockname"))
        marker.close()
        await until(lambda: book.dropped.get("not_json") == 1)
        assert book.accepted == sent == probe.sent and probe.stopped
        probe.stop_now()                               # idempotent
    finally:
        transport.close()


@pytest.mark.asyncio
async def test_a_probe_started_again_in_the_same_program_is_heard():
    book = ProbeBook()
    transport = await listen(book, "127.0.0.1:0")
    try:
        sent = 0
        for _ in range(2):
            probe = lanemon.probe.start(name="again", address=bound_address(transport), period_ms=1)
            await until(lambda probe=probe: probe.sent >= 2)
            await probe.stop()
            sent += probe.sent
        await until(lambda: book.accepted + sum(book.dropped.values()) == sent)
        assert book.dropped == {} and book.accepted == sent
    finally:
        transport.close()


@pytest.mark.asyncio
async def test_send_errors_are_counted_never_raised():
    probe = lanemon.probe.start(address="127.0.0.1:0", period_ms=1)   # port 0: every send fails
    try:
        await until(lambda: probe.send_errors >= 3)
        assert probe.sent == 0
    finally:
        await probe.stop()


@pytest.mark.asyncio
async def test_listen_refuses_a_taken_port_and_a_bad_address():
    book = ProbeBook()
    transport = await listen(book, "127.0.0.1:0")
    try:
        with pytest.raises(ListenError, match="cannot listen on"):
            await listen(book, bound_address(transport))
        with pytest.raises(ListenError, match="host:port"):
            await listen(book, "localhost")
    finally:
        transport.close()
    assert DEFAULT_ADDRESS.startswith("127.0.0.1:")


def test_start_needs_a_running_loop_and_sane_arguments():
    with pytest.raises(RuntimeError):
        lanemon.probe.start()

    async def bad(**kw):
        lanemon.probe.start(**kw)

    for kw in ({"period_ms": 0}, {"block_ms": -1}, {"period_ms": True}, {"address": "nowhere"}):
        with pytest.raises(ValueError):
            asyncio.run(bad(**kw))
