"""``lanemon bench counters``: short lock, long lock and claim on one workload.

The same seeded workload (``SimConfig`` defaults) runs under each strategy on
virtual time -- guide and service times cost no wall time and the figures
are reproducible to the last digit -- then once more with faults (staff
members abandoning guides for longer than the claim TTL). Printed side by
side: served, double assignments, throughput, p99 wait, lock wait, counters
idle while staff waited for the lock; and the claim / long-lock throughput
ratio.

Invariants (``AssertionError`` if broken): long lock and claim never
double-assign; every customer is served.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from lanemon.counters import LABELS, SimConfig, Tallies, compare

FAULTS = dict(abandon_rate=0.05, abandon_time=2.0)


def _describe(config: SimConfig) -> str:
    arrivals = "all at t=0" if config.arrival_rate is None else f"arriving at {config.arrival_rate:g}/s (Poisson)"
    faults = (
        f"{config.abandon_rate:.0%} of guides abandoned for {config.abandon_time:g} s"
        if config.abandon_rate
        else "none"
    )
    return (
        f"seed {config.seed}, {config.staff} staff, {config.counters} counters, "
        f"{config.customers} customers {arrivals}; guide {config.guide_time * 1000:g} ms, "
        f"service {config.service_time:g} s (each drawn in 0.5-1.5x), choose {config.choose_time * 1000:g} ms, "
        f"claim TTL {config.ttl:g} s; faults: {faults}"
    )


def _table(out: Callable[[str], None], results: dict[str, Tallies]) -> None:
    out(f"  {'strategy':<11} {'served':>6} {'double':>7} {'throughput/s':>13} {'p99 wait s':>11} "
        f"{'lock wait s':>12} {'idle ctr-s':>11} {'expired':>8} {'retries':>8}")
    for name, t in results.items():
        out(f"  {LABELS[name]:<11} {t.served:>6} {t.double_assignments:>7} {t.throughput:>13.2f} "
            f"{t.wait_p99:>11.2f} {t.lock_wait:>12.2f} {t.idle_counter_seconds:>11.2f} "
            f"{t.claims_expired:>8} {t.retries:>8}")


def _section(out: Callable[[str], None], title: str, config: SimConfig) -> dict:
    started = time.perf_counter()
    results = compare(config)
    wall_ms = (time.perf_counter() - started) * 1000
    ratio = results["claim"].throughput / results["long_lock"].throughput
    out(f"{title}")
    out(f"  measured: {_describe(config)}")
    out(f"  on virtual time (simulation seconds); the three runs took {wall_ms:.0f} ms of wall time")
    _table(out, results)
    out(f"  claim / long lock throughput: {ratio:.1f}x   "
        f"(short lock double assignments: {results['short_lock'].double_assignments}; "
        f"long lock and claim: {results['long_lock'].double_assignments}, "
        f"{results['claim'].double_assignments})")
    for name in ("long_lock", "claim"):
        assert results[name].double_assignments == 0, f"{name} double-assigned"
    for name, t in results.items():
        assert t.completed and t.served == config.customers, f"{name} did not serve everyone"
    return {
        "config": config.as_dict(),
        "strategies": {name: t.as_dict() for name, t in results.items()},
        "claim_over_long_lock_throughput": round(ratio, 3),
        "wall_ms": round(wall_ms, 1),
    }


def run(out: Callable[[str], None] = print) -> dict:
    config = SimConfig()
    out("counters: a claim is not a lock -- the same seeded workload under each strategy")
    out("  served: customers seated (on an occupied counter too); double: seated on a counter already")
    out("  assigned or claimed by someone else (counted by the board); idle ctr-s: counter-seconds a")
    out("  counter sat free while a staff member waited for the lock; goal: short lock > 0 double,")
    out("  long lock and claim 0, claim well ahead of long lock in throughput")
    plain = _section(out, "no faults:", config)
    faulty = _section(out, "with faults (claims outlive an abandoned guide only until their TTL):",
                      config.replace(**FAULTS))
    return {
        "measured_on": "virtual time (simulation seconds)",
        "no_faults": plain,
        "faults": faulty,
        "claim_over_long_lock_throughput": plain["claim_over_long_lock_throughput"],
    }
