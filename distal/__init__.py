"""distal: the distributed tensor algebra compiler, in Python, on Legate.

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (3, 3)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> print(A.schedule())
∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)
"""

from importlib.metadata import PackageNotFoundError, version

from distal import leaf, reduction
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
from distal.redist import DistType, Mesh, Program, synthesize
from distal.reduction import System, plan_reduction
from distal.schedule import Schedule
from distal.sizes import MachineDim, Param

try:
    __version__ = version("distal")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Assignment",
    "DistType",
    "DistalError",
    "Distribution",
    "Format",
    "FormatError",
    "Grid",
    "IndexVar",
    "Machine",
    "MachineDim",
    "MachineError",
    "Mesh",
    "NotSupportedYet",
    "NotationError",
    "Param",
    "ParseError",
    "Program",
    "ReductionError",
    "RuntimeFailure",
    "Schedule",
    "ScheduleError",
    "ShapeError",
    "Sum",
    "SynthesisError",
    "System",
    "Tensor",
    "TypeNotationError",
    "index_vars",
    "kernels",
    "leaf",
    "parse",
    "plan_reduction",
    "reduction",
    "runtime",
    "synthesize",
]


def __getattr__(name: str) -> object:
    # distal.kernels and distal.runtime load on first use: the runtime imports
    # Legate, which plain compiler use never needs.
    if name in ("kernels", "runtime"):
        import importlib

        return importlib.import_module(f"distal.{name}")
    raise AttributeError(f"module 'distal' has no attribute {name!r}")
