"""The probe's wire format: round trips, refusals, trimming to fit, and garbage never escaping."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanemon.probe import wire
from lanemon.probe.wire import MAX_DATAGRAM, MAX_FRAMES, MAX_STACKS, Block, Refused, Summary, decode, encode


def _summary(**kw):
    base = dict(period_ms=10.0, ticks=10, p50=0.5, p99=1.5, max=2.0, window_ms=100.0,
                name="svc", pid=123, host="h", seq=7)
    base.update(kw)
    return Summary(**base)


def _block(**kw):
    base = dict(duration_ms=201.5, ago_ms=203.0, task="Task-1", stack=("a.py:3 f", "a.py:9 main"),
                folded=((("a.py:3 f", "a.py:9 main"), 30), (("a.py:4 g", "a.py:9 main"), 2)), samples=32,
                name="svc", pid=123, host="h", seq=8)
    base.update(kw)
    return Block(**base)


def test_round_trip():
    for item in (_summary(), _block(), _block(task=None, folded=(), stack=())):
        assert decode(encode(item)) == item


def _raw(item, **changes):
    d = wire.as_dict(item)
    d.update(changes)
    return json.dumps(d).encode()


@pytest.mark.parametrize(("data", "reason"), [
    (b"x" * (MAX_DATAGRAM + 1), "too_big"),
    (b"{not json", "not_json"),
    (b"\xff\xfe", "not_json"),
    (b"[1, 2]", "not_object"),
    (b'{"v": 1, "kind": "summary", "p50": NaN}', "not_json"),
    (b"[" * 30000, "not_json"),
])
def test_refuses_bytes(data, reason):
    with pytest.raises(Refused) as exc:
        decode(data)
    assert exc.value.reason == reason


@pytest.mark.parametrize(("changes", "reason"), [
    ({"v": 2}, "version"),
    ({"v": True}, "version"),
    ({"kind": "gossip"}, "kind"),
    ({"pid": "123"}, "bad_field"),
    ({"pid": True}, "bad_field"),
    ({"pid": -1}, "out_of_range"),
    ({"seq": -5}, "out_of_range"),
    ({"name": "n" * 81}, "out_of_range"),
    ({"host": 5}, "bad_field"),
    ({"p99": -1.0}, "out_of_range"),
    ({"p99": 1e300}, "out_of_range"),
    ({"period_ms": 0}, "out_of_range"),
    ({"ticks": 1.5}, "bad_field"),
])
def test_refuses_summary_fields(changes, reason):
    with pytest.raises(Refused) as exc:
        decode(_raw(_summary(), **changes))
    assert exc.value.reason == reason


@pytest.mark.parametrize(("changes", "reason"), [
    ({"duration_ms": -3}, "out_of_range"),
    ({"ago_ms": "soon"}, "bad_field"),
    ({"task": 5}, "bad_field"),
    ({"stack": "a.py:1 f"}, "bad_field"),
    ({"stack": ["f"] * (MAX_FRAMES + 1)}, "out_of_range"),
    ({"folded": [[["f"], 0]]}, "out_of_range"),
    ({"folded": [[["f"]]]}, "bad_field"),
    ({"folded": [[["f"], 1]] * (MAX_STACKS + 1)}, "out_of_range"),
    ({"folded": {"f": 1}}, "bad_field"),
    ({"samples": None}, "bad_field"),
])
def test_refuses_block_fields(changes, reason):
    with pytest.raises(Refused) as exc:
        decode(_raw(_block(), **changes))
    assert exc.value.reason == reason


def test_missing_field_refused():
    d = wire.as_dict(_summary())
    del d["ticks"]
    with pytest.raises(Refused):
        decode(json.dumps(d).encode())


def test_a_huge_block_is_trimmed_to_fit_fewest_samples_first():
    frames = tuple(f"/a/very/long/path/to/some/module_{i:03d}.py:{i} function_{i}" + "x" * 150
                   for i in range(MAX_FRAMES))
    folded = tuple(((f"s{k}",) + frames[1:], 100 - k) for k in range(40))
    block = _block(stack=frames + ("beyond",) * 5, folded=folded, samples=sum(c for _, c in folded))
    data = encode(block)
    assert len(data) <= MAX_DATAGRAM
    back = decode(data)
    counts = [c for _, c in back.folded]
    assert counts == sorted(counts, reverse=True)
    assert 0 < len(back.folded) < MAX_STACKS          # trimmed, and the biggest kept
    assert back.folded[0][1] == 100
    assert back.stack == frames                       # the stall's stack kept whole (<= MAX_FRAMES)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_garbage_bytes_only_ever_refused(data):
    """Any bytes: a report, or ``Refused`` (any other exception fails the test)."""
    try:
        got = decode(data)
    except Refused as refused:
        assert refused.reason, "a refusal says why, in a word to count it by"
    else:
        assert type(got) in (Summary, Block)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["summary", "block"]), st.dictionaries(
    st.sampled_from(["v", "kind", "name", "pid", "host", "seq", "period_ms", "ticks", "p50", "p99", "max",
                     "window_ms", "duration_ms", "ago_ms", "task", "stack", "folded", "samples"]), _json))
def test_mangled_reports_only_ever_refused_or_valid(kind, changes):
    base = _summary() if kind == "summary" else _block()
    try:
        item = decode(_raw(base, **changes))
    except Refused:
        return
    assert decode(encode(item)) == item
