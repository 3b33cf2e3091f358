"""Talk scripts (Qt-free): a TOML file of steps a speaker walks through with a clicker.

``script`` reads and checks a talk (``load``, ``parse``: named immutable records, or
``TalkError`` naming the line); ``example.EXAMPLE`` is the ready talk that
``lanemon talk --example`` prints. The window plays a talk (``lanemon.ui.talk``).
"""

from lanemon.talk.example import EXAMPLE
from lanemon.talk.script import Step, Talk, TalkError, load, parse

__all__ = ["EXAMPLE", "Step", "Talk", "TalkError", "load", "parse"]
