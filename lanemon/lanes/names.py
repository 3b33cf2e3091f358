"""Workspace names: the one rule every place that takes one applies (Qt-free).

A workspace name is 1 to ``MAX_WORKSPACE_NAME`` characters of letters, digits and
``- _ . : @ /`` (no spaces): it is shown in tables and on the timeline, typed in the
Lanes tab's form, given to ``lanemon store submit --workspace`` and written in talk scripts.
``workspace_problem`` says, in one line, why a name is not one (``None`` when it is).
"""

from __future__ import annotations

import re

__all__ = ["MAX_WORKSPACE_NAME", "workspace_problem"]

#: characters of a workspace name, at most (a longer one took over the timeline's labels)
MAX_WORKSPACE_NAME = 40
_OK = re.compile(r"^[\w.\-:@/]+$")


def workspace_problem(name: str) -> str | None:
    """Why ``name`` is not a workspace name (one line, no full stop), or ``None`` when it is."""
    if not name:
        return "an empty workspace name"
    if len(name) > MAX_WORKSPACE_NAME:
        return f"workspace {name[:12]!r}...: longer than {MAX_WORKSPACE_NAME} characters"
    if not _OK.match(name):
        return f"{name!r} is not a workspace name: use letters, digits and - _ . : @ / without spaces"
    return None
