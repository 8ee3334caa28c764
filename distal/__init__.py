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
from distal.format import Distribution, Format, Grid, Machine
from distal.notation import Assignment, IndexVar, Sum, Tensor, index_vars, parse
from distal.schedule import Schedule
from distal.sizes import MachineDim, Param

__all__ = [
    "Assignment",
    "DistalError",
    "Distribution",
    "Format",
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
    "kernels",
    "leaf",
    "parse",
    "runtime",
]


def __getattr__(name: str) -> object:
    # distal.kernels and distal.runtime load on first use: the runtime imports
    # Legate, which plain compiler use never needs.
    if name in ("kernels", "runtime"):
        import importlib

        return importlib.import_module(f"distal.{name}")
    raise AttributeError(f"module 'distal' has no attribute {name!r}")
