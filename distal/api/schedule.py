"""The user's schedule: `dt.Schedule`, the scheduling commands with compile, evaluate and auto.

`ScheduleBase` (`distal.schedule.commands`) holds the commands; every one
returns a schedule of its receiver's class, so a `Schedule` stays one
through any chain. This class adds what calls down into the layers below:
`compile()` (`distal.lower.compile_schedule`, returning the user's `dt.Plan`),
`evaluate()` (compile and run, or the NumPy reference executor) and
`auto()` (the auto search with the algorithm library,
`distal.kernels.auto_schedule`).

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> type(A.schedule().reorder([k, i, j])).__name__
'Schedule'
"""

from __future__ import annotations

from typing import Any

import distal.kernels as kernels
from distal.api._threads import legate_section
from distal.api.plan import Plan
from distal.errors import ScheduleError
from distal.lower import compile_schedule
from distal.machine.grid import Grid, Machine
from distal.notation.tensor_base import TensorBase
from distal.reference import run_reference
from distal.schedule.commands import ScheduleBase

__all__ = ["Schedule"]


class Schedule(ScheduleBase):
    """A statement in concrete index notation with its scheduling relations, as the user holds it.

    The commands are `ScheduleBase`'s (its fields, printing and equality too); `compile`, `evaluate` and
    `auto` are this class's.
    """

    __slots__ = ()

    # -- choosing a schedule -------------------------------------------------------

    def auto(self, machine: Machine | Grid | None = None, *, memory: int | None = None,
             model: Any = None) -> Schedule:
        """The schedule of this statement that distal's time model predicts fastest (`distal.search`).

        Called on a statement's default schedule; returns an ordinary
        Schedule (printable, replayable, and yours to change) over `machine`
        (default: every processor the running Legate has), giving tensors
        without a format the formats it chose. explain() of its plan lists
        the candidates with their predicted time, bytes moved and peak memory.
        """
        with legate_section():
            chosen: Schedule = kernels.auto_schedule(self, machine, memory=memory, model=model)
            return chosen

    # -- running -----------------------------------------------------------------

    def compile(self, *, rotation: str | None = None, reduction: str | None = None, **bindings: int) -> Plan:
        """Lower to a plan (a task graph as plain data); `bindings` bind dt.Param sizes.

        `rotation` ("boxes" or "points") says how rotated loops launch;
        `reduction` ("auto", "synthesized" or "legate") how distributed
        reductions run (see docs/lowering.md).
        """
        with legate_section():
            return Plan.of(compile_schedule(self, rotation=rotation, reduction=reduction, **bindings))

    def evaluate(
        self, backend: str = "legate", *, rotation: str | None = None, reduction: str | None = None, **bindings: int
    ) -> TensorBase:
        """Run the schedule and return the output tensor, which now holds the result.

        backend="legate" compiles and runs on Legate; backend="reference" runs
        the NumPy reference executor in this process.
        """
        with legate_section():
            if backend == "reference":
                self.check_bindings(bindings)
                run_reference(self, bindings)
                return self.output
            if backend == "legate":
                self.compile(rotation=rotation, reduction=reduction, **bindings).run()
                return self.output
            raise ScheduleError(f"expected backend 'legate' or 'reference', but found {backend!r}")
