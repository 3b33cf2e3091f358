"""Recording and replay (Qt-free, numpy-free): what the lanes and counters views saw,
written as JSON lines, and a replay that rebuilds the same snapshots at every event.

``Recorder`` writes a recording; ``open_recording`` reads one (``RecordingError`` for a
file that is not a readable recording); ``Replay`` steps through it (``seek``, the
snapshots after event k, the notable moments, a double assignment explained).
See ``lanemon.replay.format`` for the file format.
"""

from lanemon.replay.format import FORMAT, VERSION, Recording, RecordingError, open_recording
from lanemon.replay.recorder import Recorder
from lanemon.replay.replay import Explanation, Moment, Replay, ReplayEvent
from lanemon.replay.text import LONG_STALL_MS, MOMENT_KINDS, clock_text, counters_text, lanes_text

__all__ = [
    "FORMAT", "VERSION", "Recording", "RecordingError", "open_recording",
    "Recorder", "Replay", "ReplayEvent", "Moment", "Explanation",
    "LONG_STALL_MS", "MOMENT_KINDS", "clock_text", "counters_text", "lanes_text",
]
