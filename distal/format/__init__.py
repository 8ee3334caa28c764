"""The format language: tensor distribution notation over the machines of `distal.machine` (paper section 3)."""

from distal.format.distribution import BROADCAST, Distribution
from distal.format.format import Format

__all__ = ["BROADCAST", "Distribution", "Format"]
