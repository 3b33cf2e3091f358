"""The one event hub (lanemon.events) as the counters and the lanes use it."""

import logging

import pytest

from lanemon import events as hub_module
from lanemon.counters import Board, ManualClock
from lanemon.counters import events as ev
from lanemon.lanes import events as lanes_events


def test_both_domains_deliver_through_the_one_hub():
    assert ev.EventHub is hub_module.EventHub
    assert issubclass(lanes_events.EventHub, hub_module.EventHub)
    board = Board(2, clock=ManualClock())
    assert isinstance(board.events, hub_module.EventHub)


def test_a_raising_counters_subscriber_is_counted_and_delivery_continues(caplog):
    caplog.set_level(logging.ERROR, logger="lanemon.events")
    board = Board(3, clock=ManualClock())
    seen = []

    def bad(event):
        raise RuntimeError("boom")

    board.events.subscribe(bad)
    board.events.subscribe(seen.append)  # after the broken one: still called
    assert board.claim(0, "S", "A") is not None
    assert board.claim(1, "S", "B") is not None
    assert [e.kind for e in seen] == [ev.CLAIMED, ev.CLAIMED]
    assert board.events.subscriber_errors == 2
    assert isinstance(board.events.last_error, RuntimeError)
    # the first failure is logged with its traceback, later ones only counted
    logged = [r for r in caplog.records if r.name == "lanemon.events"]
    assert len(logged) == 1 and logged[0].exc_info is not None


def test_a_lanes_subscriber_failure_follows_the_same_policy(caplog):
    caplog.set_level(logging.ERROR, logger="lanemon.events")
    hub = lanes_events.EventHub(clock=lambda: 1.0)
    got = []
    hub.subscribe(lambda e: 1 / 0)
    hub.subscribe(got.append)
    hub.emit("saved", "A")
    hub.emit("saved", "B")
    assert [e.workspace for e in got] == ["A", "B"]
    assert hub.subscriber_errors == 2 and isinstance(hub.last_error, ZeroDivisionError)
    assert len([r for r in caplog.records if r.name == "lanemon.events"]) == 1


def test_active_says_whether_anyone_listens_and_an_idle_hub_is_kept():
    hub = hub_module.EventHub()
    assert hub.active is False
    kept = hub or "replaced"  # no __bool__: a hub nobody listens to yet is still a hub
    assert kept is hub
    first = hub.subscribe(print)
    second = hub.subscribe(print)
    assert hub.active
    first()
    first()  # harmless twice, and removes only its own subscription
    assert hub.active
    second()
    assert hub.active is False


def test_unsubscribing_inside_a_callback_takes_effect_from_the_next_event():
    hub = hub_module.EventHub()
    calls = []
    unsubscribers = []

    def once(event):
        calls.append(("once", event))
        unsubscribers[0]()

    unsubscribers.append(hub.subscribe(once))
    hub.subscribe(lambda e: calls.append(("other", e)))
    hub.publish(1)
    hub.publish(2)
    assert calls == [("once", 1), ("other", 1), ("other", 2)]


def test_counter_events_are_named_immutable_records():
    clock = ManualClock()
    board = Board(2, clock=clock)
    seen = []
    board.events.subscribe(seen.append)
    claim = board.claim(1, "S1", "A", ttl=2.0)
    (event,) = seen
    assert (event.kind, event.counter, event.owner, event.customer, event.epoch) == (
        ev.CLAIMED, 1, "S1", "A", claim.epoch)
    with pytest.raises(AttributeError):
        event.kind = "changed"  # immutable
    with pytest.raises(TypeError):
        event[0]  # read by name, never by index
