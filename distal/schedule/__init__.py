"""The scheduling language."""

from distal.schedule.provenance import Provenance
from distal.schedule.schedule import PARALLEL_UNITS, Schedule

__all__ = ["PARALLEL_UNITS", "Provenance", "Schedule"]
