"""The algorithm library: SUMMA, Cannon, PUMMA, Johnson, Solomonik 2.5D, COSMA, TTV,
inner product, TTM and MTTKRP as formats plus schedules (paper Figure 9, section 7.2).

It imports the auto search (`distal.search`; never the other way) and hands
it its algorithms as candidates (`options`, `auto_schedule`, `realise`), and
sits below the objects users hold (`distal.api`): it works on the `TensorBase`
and `ScheduleBase` objects it is given (a user's `dt.Tensor` gives its own
`dt.Schedule`, so `build` returns one).

>>> import distal as dt
>>> dt.kernels.names()[:3]
['summa', 'cannon', 'pumma']
>>> dt.kernels.machine("johnson", 8)
Machine(Grid(2, 2, 2))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from distal.errors import MachineError
from distal.machine.grid import Machine
from distal.notation.tensor_base import TensorBase
from distal.schedule.commands import ScheduleBase
from distal.search import Option

from ._algorithms import ALGORITHMS, Algorithm
from ._auto import LIBRARY, Candidate, auto_schedule, build_auto, candidates, machine_auto, options, realise
from ._library import build_named, describe, machine_named, names

__all__ = ["ALGORITHMS", "LIBRARY", "Algorithm", "Candidate", "Option", "auto_schedule", "build", "candidates",
           "describe", "machine", "names", "options", "realise"]


def machine(name: str, nprocs: int, shape: Sequence[int] | None = None, **params: Any) -> Machine:
    """A machine suited to the algorithm on `nprocs` processors; every processor gets work.

    What it picks, and why:

    - SUMMA, Cannon, PUMMA, TTV: the most square 2-D grid gx x gy = nprocs
      (gx >= gy; a prime count gives nprocs x 1).
    - Johnson: a c x c x c cube, c the smallest side with c**3 >= nprocs
      (`johnson_side`; `side=` overrides). On a non-cube count the cube is
      over-decomposed as in paper 7.1.2: its points are bound block-wise to the
      real processors (`Machine.bind`), one or two each, so none is idle, where
      the largest cube that fits would leave processors idle (1x1x1 on 2 to 7).
    - Solomonik 2.5D: q x q x c with q*q*c == nprocs, c <= q, most layers
      (`c=` sets the layers); otherwise over-decomposed to the fewest points
      q*q*c >= nprocs, bound block-wise. With `memory=` bytes per processor
      and `shape`, c fits it (`solomonik_bytes`): the most layers of an exact
      grid that fits, else the fewest over-decomposed points that fit (as
      DISTAL chose c on Lassen, paper 7.1.2).
    - COSMA: gx*gy*gz == nprocs minimising the words each processor moves for
      `shape` (m, n, k); with `memory=` only grids whose tiles fit
      (`cosma_bytes`; when none fits, the one needing least memory). Its
      sequential steps over k come from `build("cosma", ..., memory=bytes per
      processor)` (the fewest that fit).
    - innerprod: a 1-D grid of nprocs (i distributed), or with `nodes=`
      Machine(Grid(nodes), Grid(nprocs // nodes)), a two-level machine whose
      reduction is synthesized, within the node first (paper 7.2.2). TTM: a
      1-D grid of nprocs. MTTKRP: the most cubic gx*gy*gz == nprocs.
    - "auto": the machine of the algorithm `build("auto", ...)` would choose
      for `shape` (matmul (m, n, k)) on nprocs processors, by predicted time
      (`distal.model`; `model=` picks the machine model).

    A machine with more points than processors is what `bind(nprocs)` maps
    block-wise at run time; `plan.predict(model, processors=nprocs)` times it so.
    """
    if isinstance(name, str) and name.lower() == "auto":
        if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
            raise MachineError(f"expected a positive processor count, but found {nprocs!r}")
        return machine_auto(nprocs, shape, **params)
    return machine_named(name, nprocs, shape, **params)


def build(name: str, machine: Machine, *operands: TensorBase, **params: Any) -> ScheduleBase:
    """The algorithm's schedule of its statement over `operands` (output first).

    Sets the output's statement (e.g. A(i,j) = B(i,k) * C(k,j) for the
    matmul algorithms), gives every operand the algorithm's format on
    `machine` (operands in another format are redistributed first; the
    schedule's notes and explain() say so), and returns the schedule: the
    output's own (a `dt.Schedule` for a `dt.Tensor`) with the algorithm's
    commands. `name` "auto" chooses the algorithm by predicted time (`build_auto`).
    """
    if isinstance(name, str) and name.lower() == "auto":
        return build_auto(machine, *operands, **params)
    return build_named(name, machine, *operands, **params)
