"""distal: the distributed tensor algebra compiler, in Python, on Legate.

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (3, 3)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> print(A.schedule())
∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)
"""

from distal import _layout

_layout.install()

from distal import leaf
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
from distal.notation import Assignment, IndexVar, Sum, Tensor, index_vars, parse
from distal.schedule import Schedule
from distal.sizes import MachineDim, Param

__all__ = [
    "Assignment",
    "DistalError",
    "FormatError",
    "Grid",
    "IndexVar",
    "Machine",
    "MachineDim",
    "MachineError",
    "NotSupportedYet",
    "NotationError",
    "Param",
    "ParseError",
    "ReductionError",
    "RuntimeFailure",
    "Schedule",
    "ScheduleError",
    "ShapeError",
    "Sum",
    "SynthesisError",
    "Tensor",
    "TypeNotationError",
    "index_vars",
    "leaf",
    "parse",
]
