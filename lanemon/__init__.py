"""lanemon: make event-loop responsiveness and scheduling contention visible.

The package is split so that the domains never import Qt:

- ``lanemon.work``     the CPU job: whole, sliced, in a worker; placement rule.
- ``lanemon.lanes``    project lanes and the two reservation queues.
- ``lanemon.counters`` counter claims versus locks.
- ``lanemon.ui``       the window: reads the domains' snapshots and draws them.

Importing ``lanemon`` itself is cheap and Qt-free (worker processes import it).
"""

__version__ = "0.1.0"
