"""Recording and replay in the window (issue 18): a thin layer over ``lanemon.replay``.

- ``mode``    File -> Record and File -> Open recording..., the replay itself
              (``ReplayMode``, kept as ``window.replay``): what the views are handed
              at each position, playing, stepping, the moments, the race explained.
- ``panel``   the replay bar, the recorded heartbeat, the moments list and "what
              happened": widgets only, in the heartbeat chart's place during a replay.
- ``record``  a recording of the window's counters, lanes and heartbeat
              (``RecordingSession``).

The views draw what they are handed (``CountersView`` / ``LanesView.show_replay``);
every rule about recordings (the format, rebuilding the state at an event, the
moments, the explanation) is in ``lanemon.replay``.
"""
