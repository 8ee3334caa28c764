"""A task that fails on one rank only: every rank must get a clear error (a DistalError), none may hang.

    mpirun -n 2 python tests/multirank/failing.py

A kernel raises at the last launch point of a launch over one point per rank, so only the rank that
runs that point sees the exception in its own process. Each rank records what its fence raised, then
whether distal still computes afterwards (a small einsum).
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import numpy as np
from _rank import Rank, main_guard, relative_error

import distal as dt


def run(rank: Rank) -> None:
    from distal import runtime as rt

    ranks = rank.ranks
    a = rt.zeros((4 * ranks,), tile=(4,))

    def planted(point: tuple[int, ...], tile: Any) -> None:
        if point[0] == ranks - 1:
            raise ValueError(f"planted failure at point {point} in process {os.getpid()}")
        tile[...] = 1.0

    key = rt.register_kernel(planted, "planted")
    rt.index_launch(key, (ranks,), [rt.Arg(a, rt.Privilege.WRITE, (4,))])
    failure: dict[str, Any] = {"raised": None}
    try:
        rt.fence()
        rt.to_numpy(a)
    except dt.DistalError as exc:
        failure = {"raised": type(exc).__name__, "message": str(exc)[:2000]}
    except Exception as exc:  # not distal's error: recorded as such, the driver fails on it
        failure = {"raised": f"not a DistalError: {type(exc).__name__}", "message": traceback.format_exc(limit=6)}
    rank.record["failure"] = failure
    print(f"[rank {rank.rank}/{ranks}] the planted failure raised: {failure}", flush=True)
    b = np.arange(12.0).reshape(3, 4)
    rank.run("einsum after the failure", lambda: relative_error(
        dt.einsum("ij->j", b, machine=dt.Machine(dt.Grid(ranks))).to_numpy(), b.sum(axis=0)))


if __name__ == "__main__":
    raise SystemExit(main_guard(run, "failing"))
