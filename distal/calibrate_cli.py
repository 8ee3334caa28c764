"""`python -m distal.calibrate_cli`: measure this machine for the time model, above the library it measures.

Calibration (`distal.model.calibrate`) times the leaf kernels in-process, and
the runtime's fixed costs (per plan run, per launch, per task) by running
tiny plans of the algorithm library on Legate in a child process. That child
is this module (`--fixed-costs-child`): it builds plans through the public
facade and `distal.kernels`, which sit above the time model, so it is an
entry point run as its own process, never imported by the library.

Without arguments it does what `python -m distal.model.calibrate` does:
measures again, caches the result and prints the model (`calibrate_main`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

__all__ = ["FIXED_COSTS_CHILD", "calibrate_main", "fixed_cost_rows"]

#: The argument that makes this module the fixed-costs child of `distal.model.calibrate.measure_fixed_costs`.
FIXED_COSTS_CHILD = "--fixed-costs-child"


def fixed_cost_rows(repeats: int = 25) -> list[list[float]]:
    """In a process running Legate: (launches, points, fastest seconds) of tiny TTV and SUMMA plans."""
    import distal as dt
    from distal import kernels
    from distal.model.calibrate import fastest_of

    rng = np.random.default_rng(0)
    rows: list[list[float]] = []

    def timed(plan: Any, out: Any) -> float:
        def once() -> None:
            plan.run()
            out.to_numpy()

        return fastest_of(once, repeats)

    for g in (1, 2, 4, 8):
        out = dt.Tensor("O", (8, 8))
        ops = [out, dt.Tensor.from_array("I0", rng.random((8, 8, 8))), dt.Tensor.from_array("I1", rng.random(8))]
        plan = kernels.build("ttv", kernels.machine("ttv", g), *ops).compile()
        rows.append([len(list(plan.launches())), sum(len(list(ln.points())) for _, ln in plan.launches()),
                     timed(plan, out)])
    for chunk in (8, 4, 2, 1):
        out = dt.Tensor("A", (8, 8))
        ins = [dt.Tensor.from_array(x, rng.random((8, 8))) for x in "BC"]
        plan = kernels.build("summa", dt.Machine(dt.Grid(1, 1)), out, *ins, chunk=chunk).compile()
        rows.append([len(list(plan.launches())), sum(len(list(ln.points())) for _, ln in plan.launches()),
                     timed(plan, out)])
    return rows


def calibrate_main(argv: list[str] | None = None) -> int:
    """Measure this machine again, cache it and print the model; with `--fixed-costs-child`, be that child
    (print the rows of `fixed_cost_rows` as one JSON line)."""
    args = sys.argv[1:] if argv is None else argv
    if args == [FIXED_COSTS_CHILD]:
        print(json.dumps(fixed_cost_rows()))
        return 0
    from distal.model.calibrate import main

    return main(args)


if __name__ == "__main__":
    raise SystemExit(calibrate_main())
