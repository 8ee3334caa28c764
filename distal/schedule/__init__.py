"""The scheduling language: its commands, as `ScheduleBase` (`dt.Schedule` derives from it in `distal.api`)."""

from distal.schedule.provenance import Provenance
from distal.schedule.schedule import PARALLEL_UNITS, ScheduleBase

__all__ = ["PARALLEL_UNITS", "Provenance", "ScheduleBase"]
