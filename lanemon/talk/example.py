"""The example talk (``lanemon talk --example`` prints it): the seeds' story in 12 steps.

A CPU job blocks the loop -> slice it -> move it to a worker -> where does a job
belong -> two queues, one lane -> a claim is not a lock. It passes ``--check``
(``tests/test_talk_script.py``) and runs from PageDown presses under Xvfb
(``tests/test_real_window.py``).
"""

EXAMPLE = '''\
# lanemon talk: why the window froze, and what a claim is.
# Run it:    lanemon --talk example.toml      (F5 presenter mode, PageDown next step)
# Check it:  lanemon --talk example.toml --check
format = 1
title = "Event loops, lanes and claims"

[[step]]
title = "The heartbeat"
text = """A timer asks the loop for a tick every 10 ms.
The line is how late each tick came: flat means the window answers."""
do = [ { tab = "runs" } ]

[[step]]
title = "A CPU job blocks the loop"
text = """400 ms of hashing, run whole on the event loop.
No tick fires until it ends: one tick arrives 400 ms late."""
do = [ { run = "whole", cpu_ms = 400 } ]
wait = "run"

[[step]]
title = "Slice it"
text = """The same job in 8 ms slices, yielding to the loop between them.
The ticks keep coming; the answer is the same."""
do = [ { run = "sliced", cpu_ms = 400 } ]
wait = "run"

[[step]]
title = "Move it to a worker"
text = """A pre-started worker process computes it; the loop only waits for the answer.
Arguments and result go by copy."""
do = [ { run = "worker", cpu_ms = 400, worker = "warm" } ]
wait = "run"

[[step]]
title = "Where does a job belong?"
text = """Up to 1 ms: the loop. Touches shared state: slice it.
Past the worker threshold measured on this machine: a worker."""
do = [ { tab = "placement" } ]

[[step]]
title = "Two queues, one lane"
text = """Reservations and cafe delivery share one lane per workspace.
ws-01's cafe job waits for its reservation; ws-02 runs beside them."""
do = [
  { tab = "lanes" },
  { lanes = "add", workspace = "ws-01", queue = "reservations", seconds = 4 },
  { lanes = "add", workspace = "ws-01", queue = "cafe", seconds = 2 },
  { lanes = "add", workspace = "ws-02", queue = "cafe", seconds = 2 },
]

[[step]]
title = "Release only after the final save"
text = """ws-03's final save is held open: its lane stays claimed,
so its next job waits in either queue while other workspaces go on."""
do = [
  { lanes = "add", workspace = "ws-03", queue = "reservations", seconds = 1.5 },
  { lanes = "hold", workspace = "ws-03" },
  { lanes = "add", workspace = "ws-03", queue = "cafe", seconds = 1.5 },
  { lanes = "burst", jobs = 12, workspaces = 4, queue = "cafe", seconds = 1 },
]

[[step]]
title = "The save goes on, the lane comes free"
text = "The record is saved first, the lane released after: ws-03's cafe job starts."
do = [ { lanes = "release", workspace = "ws-03" } ]

[[step]]
title = "Counters: a lock around choosing"
text = """Eight staff seat customers at counters. The short lock covers only the choice:
two staff can pick the same free counter. Red: given to two customers."""
do = [ { tab = "counters" }, { counters = "start", strategy = "short_lock" } ]
undo = [ { counters = "stop" } ]

[[step]]
title = "A claim is not a lock"
text = """A claim is stored state (owner, token, TTL) that takes the counter out of the candidates.
No red, and the staff still work side by side."""
do = [ { counters = "start", strategy = "claim" } ]
undo = [ { counters = "stop" } ]

[[step]]
title = "Short lock, long lock, claim"
text = """The same seeded customers under all three: the short lock double-assigns,
the long lock is correct but serial, the claim is correct and parallel."""
do = [ { counters = "stop" }, { counters = "compare" } ]
wait = "compare"

[[step]]
title = "Questions?"
text = """Slice or move what blocks the loop; one lane per workspace, released after the save;
claim, do not lock, when several processes choose."""
'''
