"""Agents: headless lanemon processes working a shared store (Qt-free, numpy-free at import).

``lanemon agent --store URL [--role lanes|staff] ...`` (see :mod:`lanemon.cli`):

- role ``lanes`` -- :mod:`lanemon.agents.agent`: one instance of the app's
  reservation scheduler, taking the jobs queued in the store;
- role ``staff`` -- ``lanemon.agents.staff.run_staff``: the bank counters of
  seed 001 worked from the store's counter board.

:mod:`lanemon.agents.audit` checks a store's dump for what the agents must
never do (overlapping runs of one workspace, a job ending twice, a refused
write missing from the ledger).
"""
