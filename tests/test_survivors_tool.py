"""The survivors tool's report by allocation site (``--trace``) and its arguments."""

from __future__ import annotations

import argparse
import tracemalloc

import pytest

from lanemon.ui.tools.survivors import _positive, traced


def _make(n: int) -> list:
    return [object() for _ in range(n)]          # the allocation site the report must name


def test_the_trace_report_groups_live_blocks_by_where_they_were_allocated():
    tracemalloc.start(3)
    try:
        kept = _make(5_000)
        dropped = _make(5_000)
        del dropped                              # freed: not in the report
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    lines = traced(snapshot, top=5, frames=1)
    assert lines[0].startswith("blocks allocated since the first burst and alive now:")
    site = f"test_survivors_tool.py:{_make.__code__.co_firstlineno + 1}"
    row = next(line for line in lines[1:] if line.endswith(site))
    count = int(row.split("blocks")[0].replace(",", ""))
    assert 5_000 <= count < 10_000               # the kept list's objects, not the freed ones
    assert len(kept) == 5_000


def test_burst_sizes_must_be_whole_numbers_of_at_least_one():
    assert _positive("20000") == 20_000
    for bad, said in (("0", "at least 1"), ("-3", "at least 1"), ("2.5", "whole number"), ("x", "whole number")):
        with pytest.raises(argparse.ArgumentTypeError, match=said):
            _positive(bad)
