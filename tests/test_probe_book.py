"""The listener's ProbeBook: storing, staleness, drops by reason, and garbage that never disturbs it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from lanemon.probe.book import ProbeBook
from lanemon.probe.wire import Block, Summary, as_dict, encode

ADDR = ("127.0.0.1", 40000)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def summary(seq, name="svc", pid=1, p99=1.0, host="h"):
    return encode(Summary(period_ms=10, ticks=10, p50=0.5, p99=p99, max=p99, window_ms=100,
                          name=name, pid=pid, host=host, seq=seq))


def block(seq, ago_ms=250.0, duration_ms=200.0, name="svc", pid=1):
    return encode(Block(duration_ms=duration_ms, ago_ms=ago_ms, task="t", stack=("a.py:1 f",),
                        folded=((("a.py:1 f",), 40),), samples=40, name=name, pid=pid, host="h", seq=seq))


def test_summaries_and_blocks_are_stored_per_program():
    clock = Clock()
    book = ProbeBook(clock=clock)
    assert book.feed(summary(0, p99=2.5), ADDR)
    clock.t += 0.1
    assert book.feed(block(1, ago_ms=250.0), ADDR)
    assert book.feed(summary(0, name="other", pid=2), ("127.0.0.1", 40001))
    (other, svc) = book.programs()
    assert (svc.name, svc.pid, svc.host, svc.p99_now, svc.blocks_last_minute) == ("svc", 1, "h", 2.5, 1)
    assert (other.index, svc.index) == (1, 0)
    assert [p.p99 for p in book.lag(svc.key)] == [2.5]
    (b,) = book.blocks(svc.key)
    assert b.t_start == clock.t - 0.25
    assert (b.duration_ms, b.task, b.stack, b.folded, b.samples, b.seq) == (200.0, "t", ("a.py:1 f",),
                                                                            ((("a.py:1 f",), 40),), 40, 1)


def test_stale_then_dropped_and_history_kept_for_keep_s():
    clock = Clock()
    book = ProbeBook(clock=clock, stale_s=5, drop_s=60, keep_s=20)
    book.feed(summary(0), ADDR)
    key = book.programs()[0].key
    clock.t += 10
    book.feed(summary(1, name="alive"), ADDR)
    v = book.version
    book.sweep()
    (alive, svc) = book.programs()
    assert svc.stale and svc.p99_now is None and not alive.stale
    clock.t += 15                                     # the first summary is now 25 s old
    book.sweep()
    assert book.lag(key) == () and book.version > v
    assert book.feed(summary(2), ADDR)                # heard again: not stale
    assert not book.programs()[1].stale
    clock.t += 61
    book.sweep()
    assert book.programs() == ()


def test_replayed_flood_and_too_many_programs_are_counted_and_dropped():
    clock = Clock()
    book = ProbeBook(clock=clock, rate=10, burst=5, max_programs=3)
    assert book.feed(summary(5), ADDR)
    assert not book.feed(summary(5), ADDR)
    assert not book.feed(summary(4), ADDR)
    assert book.dropped == {"replayed": 2}
    loud = ("127.0.0.1", 40002)
    results = [book.feed(summary(10 + i, name="loud", pid=9), loud) for i in range(20)]
    assert results[:5] == [True] * 5 and not any(results[5:])
    assert book.dropped["flood"] == 15
    assert book.feed(summary(6), ADDR)                # another sender is not held back
    clock.t += 1.0                                    # the bucket refills at `rate`
    assert book.feed(summary(100, name="loud", pid=9), loud)
    assert book.feed(summary(0, name="third", pid=3), ("127.0.0.1", 40003))
    assert not book.feed(summary(0, name="fourth", pid=4), ("127.0.0.1", 40004))
    assert book.dropped["too_many_programs"] == 1
    assert len(book.programs()) == 3


def test_a_garbage_flood_is_dropped_before_decoding_and_bounded_overall():
    clock = Clock()
    book = ProbeBook(clock=clock, rate=10, burst=5, total_rate=50)
    for _ in range(100):
        book.feed(b"{not json", ADDR)
    assert book.dropped == {"not_json": 5, "flood": 95}   # 5 decoded (the burst), the rest not
    for port in range(200):                           # many senders at once: the total bucket holds
        book.feed(summary(port, name="many"), ("127.0.0.1", 50000 + port))
    assert book.accepted == 45 and book.dropped["flood"] == 95 + 155
    clock.t += 10.0
    assert book.feed(summary(1000, name="many"), ("127.0.0.1", 50000))


def test_index_is_the_smallest_free_one_and_stable():
    clock = Clock()
    book = ProbeBook(clock=clock, stale_s=1, drop_s=2)
    book.feed(summary(0, name="a"), ADDR)
    book.feed(summary(0, name="b"), ADDR)
    clock.t += 1.5
    book.feed(summary(1, name="b"), ADDR)
    clock.t += 1.0                                    # a is dropped, b stays
    book.feed(summary(2, name="b"), ADDR)
    book.feed(summary(0, name="c"), ADDR)
    assert {p.name: p.index for p in book.programs()} == {"b": 1, "c": 0}


def test_on_item_sees_what_was_stored_only():
    seen = []
    book = ProbeBook(on_item=lambda key, item: seen.append((key, item.seq)))
    book.feed(summary(3), ADDR)
    book.feed(summary(3), ADDR)
    book.feed(b"junk", ADDR)
    assert seen == [(("svc", 1, "h"), 3)]
    assert book.dropped == {"replayed": 1, "not_json": 1}


_valid = st.builds(lambda s, n: summary(s, name=n), st.integers(0, 50), st.sampled_from(["a", "b"]))
_mangled = st.builds(lambda d, cut: json.dumps(d).encode()[:cut],
                     st.fixed_dictionaries({"v": st.sampled_from([1, 2, "1"]),
                                            "kind": st.sampled_from(["summary", "block", 3]),
                                            "name": st.text(max_size=90), "pid": st.integers(-2, 2**40),
                                            "host": st.text(max_size=3), "seq": st.integers(-1, 5)}),
                     st.integers(0, 400))
_any = st.one_of(st.binary(max_size=600), _valid, _mangled, st.just(b"x" * 40000),
                 st.builds(lambda s: json.dumps(as_dict(Block(duration_ms=1, ago_ms=1, task=None, stack=(), folded=(),
                                                              samples=0, seq=s))).encode(), st.integers(0, 9)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_any, st.sampled_from([ADDR, ("::1", 5, 0, 0), None, "weird"]), st.floats(0, 3)),
                max_size=40))
def test_garbage_never_raises_and_every_datagram_is_accounted_for(datagrams):
    clock = Clock()
    book = ProbeBook(clock=clock, stale_s=1, drop_s=2, keep_s=2)
    for data, addr, dt in datagrams:
        clock.t += dt
        assert isinstance(book.feed(data, addr), bool)
        book.programs()
    assert book.accepted + sum(book.dropped.values()) == len(datagrams)
    for view in book.programs():
        assert all(b.duration_ms >= 0 for b in book.blocks(view.key))
        assert len({p.index for p in book.programs()}) == len(book.programs())
