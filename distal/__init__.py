"""distal: the distributed tensor algebra compiler, in Python, on Legate."""

from distal import _layout

_layout.install()

from distal.errors import (
    DistalError,
    FormatError,
    MachineError,
    NotationError,
    NotSupportedYet,
    ParseError,
    ReductionError,
    RuntimeFailure,
    ScheduleError,
    ShapeError,
    SynthesisError,
    TypeNotationError,
)
from distal.format.machine import Grid, Machine
from distal.sizes import MachineDim, Param

__all__ = [
    "DistalError",
    "FormatError",
    "Grid",
    "Machine",
    "MachineDim",
    "MachineError",
    "NotSupportedYet",
    "NotationError",
    "Param",
    "ParseError",
    "ReductionError",
    "RuntimeFailure",
    "ScheduleError",
    "ShapeError",
    "SynthesisError",
    "TypeNotationError",
]
