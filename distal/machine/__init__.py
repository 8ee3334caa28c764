"""The one machine description: grids of processors with named dimensions, processor kinds, and links."""

from distal.machine.grid import KINDS, MEMORY_KINDS, PROCESSOR_KINDS, Grid, Machine, ProcessorKind, processor_kind
from distal.machine.links import LINKS, Link, LinkError

__all__ = ["KINDS", "LINKS", "MEMORY_KINDS", "PROCESSOR_KINDS", "Grid", "Link", "LinkError", "Machine",
           "ProcessorKind", "processor_kind"]
