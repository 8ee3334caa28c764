"""The launches of one run of a plan, recorded to be submitted again (`_execute.run_plan`'s replay).

A `recording` block records every launch `_launch` submits inside it; a
store made inside (`_launch` compares `stores_made()` with `Recording.made`)
or a blocking fence (`_store.fence`) abandons it: such a run is not
replayed, and its launches' partitions must not keep stores alive that a
fence would free. Both the launch and the store modules read this one
state, which imports neither of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Recording", "abandon_recording", "current_recording", "recording"]


@dataclass(eq=False)
class Recording:
    """The launches submitted inside a `recording` block, for `_launch.replay`; None once abandoned (a store
    was made or a fence waited inside the block)."""

    made: int  # stores_made() when recording began
    launches: list[Any] | None  # `_launch.Recorded` submissions


_recording: Recording | None = None


@contextlib.contextmanager
def recording(made: int) -> Iterator[Recording]:
    """Record every launch submitted inside the block (``made``: `_store.stores_made()` now)."""
    global _recording
    before, _recording = _recording, Recording(made, [])
    try:
        yield _recording
    finally:
        _recording = before


def current_recording() -> Recording | None:
    """The recording launches go into now (None: none)."""
    return _recording


def abandon_recording() -> None:
    """Stop the current recording, if any, and drop what it holds (at a fence, or when a store is made)."""
    if _recording is not None:
        _recording.launches = None
