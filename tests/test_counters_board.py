"""The counter board: claims, tokens, TTL (on a manual clock), double assignments."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanemon.counters import Board, CounterState, ManualClock, Outcome
from lanemon.counters import events as ev


def make(n=3, ttl=1.0):
    clock = ManualClock()
    board = Board(n, clock=clock, default_ttl=ttl)
    seen = []
    board.events.subscribe(seen.append)
    return board, clock, seen


def test_claim_takes_counter_out_of_candidates():
    board, _, _ = make()
    assert board.assignable() == [0, 1, 2]
    claim = board.claim(1, "S1", "A")
    assert claim is not None and claim.owner == "S1" and claim.customer == "A"
    assert board.assignable() == [0, 2]
    assert board.claim(1, "S2", "B") is None  # refused: live claim
    assert board.claim_refused == 1
    view = board.view(1)
    assert view.state is CounterState.CLAIMED and view.owner == "S1" and view.ttl_left == 1.0


def test_finalize_seats_customer_and_counter_stays_out():
    board, clock, seen = make()
    claim = board.claim(0, "S1", "A")
    clock.advance(0.5)
    assert board.finalize(claim.token) is Outcome.OK
    view = board.view(0)
    assert view.state is CounterState.ASSIGNED and view.customers == ("A",) and view.ttl_left is None
    assert board.assignable() == [1, 2]
    assert board.claim(0, "S2", "B") is None  # assigned counters cannot be claimed
    assert board.finalize(claim.token) is Outcome.STALE  # finalized once only
    assert board.vacate(0, "A")
    assert board.assignable() == [0, 1, 2]
    assert [e.kind for e in seen][:2] == [ev.CLAIMED, ev.FINALIZED]


def test_epochs_are_strictly_increasing_across_counters():
    board, clock, _ = make()
    epochs = []
    for i in range(3):
        epochs.append(board.claim(i, "S", "A").epoch)
    clock.advance(2)
    for i in range(3):
        epochs.append(board.claim(i, "S", "B").epoch)  # replaces expired claims
    assert epochs == sorted(set(epochs))


def test_expired_claim_cannot_be_finalized():
    board, clock, seen = make(ttl=1.0)
    claim = board.claim(0, "S1", "A")
    clock.advance(0.999)
    assert 0 not in board.assignable()
    clock.advance(0.001)  # exactly at expiry: dead
    assert 0 in board.assignable()
    assert board.view(0).state is CounterState.FREE
    assert board.view(0).expired_owner == "S1"
    assert board.finalize(claim.token) is Outcome.EXPIRED
    assert not board.finalize(claim.token)
    assert board.view(0).customers == ()
    assert board.expired == 1 and board.finalize_refused == 2
    expired = [e for e in seen if e.kind == ev.EXPIRED]
    assert len(expired) == 1 and expired[0].time == 1.0 and expired[0].owner == "S1"


def test_expired_claim_replaced_then_old_finalize_is_stale():
    board, clock, _ = make()
    old = board.claim(0, "S1", "A")
    clock.advance(1.5)
    new = board.claim(0, "S2", "B")
    assert new is not None and new.epoch > old.epoch
    assert board.finalize(old.token) is Outcome.STALE
    assert board.finalize(new) is Outcome.OK
    assert board.view(0).customers == ("B",)
    assert board.double_assignments == 0


def test_release_with_stale_token_changes_nothing():
    board, clock, seen = make()
    old = board.claim(0, "S1", "A")
    assert board.release(old.token) is True
    new = board.claim(0, "S2", "B")
    before = board.views()
    n_events = len(seen)
    assert board.release(old.token) is False  # late, repeated release
    assert board.release(old) is False
    assert board.views() == before
    assert board.current_claim(0) == new
    assert board.release_refused == 2
    assert [e.kind for e in seen[n_events:]] == [ev.RELEASE_REFUSED] * 2
    assert board.finalize(new.token) is Outcome.OK


def test_release_of_expired_current_claim_clears_record():
    board, clock, _ = make()
    claim = board.claim(0, "S1", "A")
    clock.advance(5)
    assert board.release(claim.token) is True
    assert board.current_claim(0) is None and board.view(0).expired_owner is None


def test_forced_expire():
    board, clock, _ = make(ttl=10)
    claim = board.claim(2, "S1", "A")
    assert board.expire(2) is True
    assert board.expire(2) is False
    assert board.finalize(claim.token) is Outcome.EXPIRED
    assert board.expired == 1
    assert 2 in board.assignable()


def test_blind_assign_counts_double_assignment():
    board, _, seen = make()
    assert board.assign(0, "A", "S1") is True
    assert board.assign(0, "B", "S2") is False  # given while already assigned
    assert board.double_assignments == 1
    view = board.view(0)
    assert view.customers == ("A", "B") and view.conflict
    claim = board.claim(1, "S3", "C")
    assert board.assign(1, "D", "S4") is False  # given while claimed by someone else
    assert board.double_assignments == 2
    assert board.finalize(claim) is Outcome.OK  # lands on an occupied counter: counted too
    assert board.double_assignments == 3
    assert sum(e.kind == ev.DOUBLE_ASSIGNMENT for e in seen) == 3
    # vacating one customer leaves the other seated
    board.vacate(0, "A")
    assert board.view(0).state is CounterState.ASSIGNED
    board.vacate(0, "B")
    assert board.view(0).state is CounterState.FREE


def test_refusals():
    board, _, _ = make()
    with pytest.raises(IndexError):
        board.claim(3, "S", "A")
    with pytest.raises(IndexError):
        board.view(-1)
    with pytest.raises(ValueError):
        board.claim(0, "S", "A", ttl=0)
    with pytest.raises(ValueError):
        Board(0, clock=lambda: 0.0)


def test_subscriber_errors_do_not_break_board_and_unsubscribe_works():
    board, _, seen = make()

    def bad(event):
        raise RuntimeError("boom")

    unsubscribe = board.events.subscribe(bad)
    assert board.claim(0, "S", "A") is not None
    unsubscribe()
    unsubscribe()
    board.claim(1, "S", "B")
    assert len(seen) == 2


ops = st.lists(
    st.tuples(
        st.sampled_from(["claim", "finalize", "release", "advance", "expire", "vacate"]),
        st.integers(0, 2),
        st.integers(0, 5),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_claims_alone_never_double_assign(operations):
    """Whatever the order of claims, finalizes, releases and time passing, a
    board used only through claims never seats two customers on one counter,
    epochs only grow, and refused operations change nothing."""
    board, clock, _ = make(ttl=1.0)
    tokens = []
    last_epoch = 0
    for op, counter, k in operations:
        before = board.views()
        if op == "claim":
            claim = board.claim(counter, f"S{k}", f"C{len(tokens)}")
            if claim is None:
                assert board.views() == before
            else:
                assert claim.epoch > last_epoch
                last_epoch = claim.epoch
                tokens.append(claim.token)
        elif op in ("finalize", "release") and tokens:
            token = tokens[k % len(tokens)]
            result = board.finalize(token) if op == "finalize" else board.release(token)
            if not result:
                assert board.views() == before
        elif op == "advance":
            clock.advance(k * 0.3)
        elif op == "expire":
            board.expire(counter)
        elif op == "vacate":
            for name in board.customers(counter):
                board.vacate(counter, name)
        views = board.views()
        # a view kept from before is exactly the one that would be built now
        now = board.now()
        assert views == tuple(board._build_view(i, c, now) for i, c in enumerate(board._counters))
        for view in views:
            assert len(view.customers) <= 1
            assert not (view.customers and view.state is not CounterState.ASSIGNED)
            assert (view.state is CounterState.FREE) == (view.id in board.assignable())
    assert board.double_assignments == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["claim", "finalize", "release", "advance", "expire", "vacate", "assign", "read"]),
    st.integers(0, 2), st.integers(0, 5)), max_size=60))
def test_views_kept_between_reads_are_the_ones_built_afresh(operations):
    """``views()`` hands back a counter's last view while nothing it shows changed; under any
    order of claims, blind assignments, vacating, expiry and time passing, what it returns is
    what a fresh build returns."""
    board, clock, _ = make(ttl=1.0)
    tokens = []
    for op, counter, k in operations:
        if op == "claim":
            claim = board.claim(counter, f"S{k}", f"C{len(tokens)}")
            if claim is not None:
                tokens.append(claim.token)
        elif op in ("finalize", "release") and tokens:
            token = tokens[k % len(tokens)]
            board.finalize(token) if op == "finalize" else board.release(token)
        elif op == "advance":
            clock.advance(k * 0.3)
        elif op == "expire":
            board.expire(counter)
        elif op == "vacate":
            for name in board.customers(counter)[:1]:
                board.vacate(counter, name)
        elif op == "assign":
            board.assign(counter, f"B{k}", f"S{k}")
        views = board.views()
        now = board.now()
        assert views == tuple(board._build_view(i, c, now) for i, c in enumerate(board._counters))
        assert [board.view(i) for i in range(len(board))] == list(views)
