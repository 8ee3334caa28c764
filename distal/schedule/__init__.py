"""The scheduling language: its commands, as `ScheduleBase` (`dt.Schedule` derives from it in `distal.api`)."""

from distal.schedule.commands import PARALLEL_UNITS, ScheduleBase
from distal.schedule.provenance import Provenance

__all__ = ["PARALLEL_UNITS", "Provenance", "ScheduleBase"]
