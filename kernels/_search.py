"""`Schedule.auto`: a schedule for any statement, chosen by distal's time model (work in progress)."""

from __future__ import annotations

from typing import Any

from distal.errors import NotSupportedYet
from distal.format.machine import Grid, Machine
from distal.schedule import Schedule

__all__ = ["auto_schedule"]


def auto_schedule(schedule: Schedule, machine: Machine | Grid | None = None, *, memory: int | None = None,
                  model: Any = None) -> Schedule:
    """The schedule of `schedule`'s statement predicted fastest on `machine`."""
    raise NotSupportedYet("Schedule.auto is being built")
