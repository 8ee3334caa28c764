"""distal: the distributed tensor algebra compiler, in Python, on Legate.

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (3, 3)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> print(A.schedule())
∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)
"""

from typing import TYPE_CHECKING

import distal.kernels as kernels
from distal import leaf
from distal.api import Plan, Schedule, Tensor
from distal.api.einsum import einsum, einsum_plan
from distal.errors import (
    DistalError,
    DistalFallbackWarning,
    DistalPerformanceWarning,
    DtypeError,
    FormatError,
    MachineError,
    NotationError,
    NotSupportedYet,
    OutOfMemory,
    ParseError,
    ReductionError,
    RuntimeFailure,
    ScheduleError,
    ShapeError,
    SynthesisError,
    TypeNotationError,
)
from distal.format import Distribution, Format
from distal.machine import Grid, Machine
from distal.notation import Assignment, IndexVar, Sum, TensorVar, index_vars, parse
from distal.notation.functions import abs, conj, exp, sqrt  # dt.sqrt(B[i, j]): unary functions (Call nodes)
from distal.sizes import MachineDim, Param

if TYPE_CHECKING:
    from distal import reduction
    from distal.redist import CollectiveProgram, DistType, Mesh, synthesize
    from distal.reduction import System, plan_reduction

    __version__: str

__all__ = [
    "Assignment",
    "CollectiveProgram",
    "DistType",
    "DistalError",
    "DistalFallbackWarning",
    "DistalPerformanceWarning",
    "Distribution",
    "DtypeError",
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
    "OutOfMemory",
    "Param",
    "ParseError",
    "Plan",
    "ReductionError",
    "RuntimeFailure",
    "Schedule",
    "ScheduleError",
    "ShapeError",
    "Sum",
    "SynthesisError",
    "System",
    "Tensor",
    "TensorVar",
    "TypeNotationError",
    "abs",
    "conj",
    "einsum",
    "einsum_plan",
    "exp",
    "index_vars",
    "kernels",
    "leaf",
    "parse",
    "plan_reduction",
    "reduction",
    "sqrt",
    "synthesize",
]


# Where no NVIDIA driver is installed, load distal's stand-in for it and
# configure Legate now, so that `import cupynumeric` (which starts Legate)
# works in this process before or after distal's own start (README). The
# runtime's public hooks are `distal.runtime.X` (e.g. `ensure_started`,
# `observed`); the facade does not re-export that package.
from distal.runtime import prepare_at_import as _prepare_at_import

_prepare_at_import()

# Loaded on first use, to keep `import distal` fast: the synthesizers are
# their own worlds, and the version reads package metadata. Each is a plain
# (downward) import in `_lazy`.


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("distal")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def _lazy(name: str) -> object:
    """The lazily loaded public name `name` of the facade; AttributeError for any other."""
    if name == "__version__":
        return _version()
    if name == "reduction":
        import distal.reduction

        return distal.reduction
    if name in ("CollectiveProgram", "DistType", "Mesh", "synthesize"):
        import distal.redist

        return getattr(distal.redist, name)
    if name in ("System", "plan_reduction"):
        import distal.reduction

        return getattr(distal.reduction, name)
    raise AttributeError(f"module 'distal' has no attribute {name!r}")


def __getattr__(name: str) -> object:
    value = _lazy(name)
    globals()[name] = value
    return value
