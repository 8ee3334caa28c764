"""The format language: machines and tensor distribution notation (paper section 3)."""

from distal.format.distribution import BROADCAST, Distribution
from distal.format.format import Format
from distal.format.machine import MEMORY_KINDS, PROCESSOR_KINDS, Grid, Machine

__all__ = [
    "BROADCAST",
    "MEMORY_KINDS",
    "PROCESSOR_KINDS",
    "Distribution",
    "Format",
    "Grid",
    "Machine",
]
