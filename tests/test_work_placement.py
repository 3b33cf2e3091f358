"""place(): the seed rule, its refusals, and the machine-derived threshold."""

from types import SimpleNamespace

import pytest

from lanemon.work import decide, place, threshold_from_startup

TABLE = [
    # cpu_ms, shared_state, threshold, expected
    (0, False, 50, "loop"),
    (1, False, 50, "loop"),
    (1, True, 50, "loop"),
    (1.0001, False, 50, "slice"),
    (1.0001, True, 50, "slice"),
    (49.9, False, 50, "slice"),
    (50, False, 50, "worker"),
    (50, True, 50, "slice"),
    (500, True, 50, "slice"),
    (500, False, 50, "worker"),
    (8, False, 7.5, "worker"),
    (8, False, 8.5, "slice"),
]


@pytest.mark.parametrize("cpu_ms, shared, threshold, expected", TABLE)
def test_place_table(cpu_ms, shared, threshold, expected):
    assert place({"cpu_ms": cpu_ms, "shared_state": shared}, threshold) == expected
    assert place(SimpleNamespace(cpu_ms=cpu_ms, shared_state=shared), threshold) == expected


def test_default_threshold_is_50_ms_and_shared_state_defaults_false():
    assert place({"cpu_ms": 50}) == "worker"
    assert place({"cpu_ms": 49}) == "slice"


def test_decide_names_the_rule_branch():
    assert "shared state" in decide({"cpu_ms": 80, "shared_state": True}).rule
    assert "threshold" in decide({"cpu_ms": 80}).rule
    assert "too short" in decide({"cpu_ms": 0.5}).rule


@pytest.mark.parametrize("job", [{}, {"shared_state": True}, SimpleNamespace()])
def test_missing_cpu_ms_raises(job):
    with pytest.raises(ValueError, match="measure"):
        place(job)


@pytest.mark.parametrize("value, error", [
    (None, ValueError), (True, TypeError), (False, TypeError), ("12", TypeError),
    (float("nan"), ValueError), (float("inf"), ValueError), (-1, ValueError), ([3], TypeError),
])
def test_bad_cpu_ms_raises(value, error):
    with pytest.raises(error):
        place({"cpu_ms": value})


@pytest.mark.parametrize("threshold", [0, -5, float("nan"), True, "50"])
def test_bad_threshold_raises(threshold):
    with pytest.raises((TypeError, ValueError)):
        place({"cpu_ms": 10}, threshold)


def test_threshold_follows_measured_startup():
    assert threshold_from_startup(37.24) == 37.2
    assert threshold_from_startup(0.2) == 1.0  # never below the loop limit
    # A job of exactly the start-up cost goes to a worker; just below, sliced.
    t = threshold_from_startup(20.0)
    assert place({"cpu_ms": 20.0}, t) == "worker"
    assert place({"cpu_ms": 19.9}, t) == "slice"
