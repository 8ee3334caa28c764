"""A held reduction's fold runs on the processor holding the output block it adds into (runtime/_reduce.fold_held).

Pinned to the processor holding the partial, the fold read and wrote the output block there: with several ranks
Legion copied the block to that rank and back (Johnson on Grid(1, 1, 2) over two ranks moved twice the bytes
explain() counts, tests/multirank/test_traffic.py). Here, in one process, the fold launches' processors are read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal import runtime as rt
from distal.runtime import _reduce

pytestmark = pytest.mark.legate


def test_the_fold_runs_where_the_output_block_is_held(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    if machine.cpus < 2:
        pytest.skip("needs two CPU processors (the partials of Grid(1, 1, 2) on two, the output block on one)")
    launched: list[tuple[tuple[int, ...], int]] = []
    real = _reduce.point_launch

    def spy(key: int, args: Any, point: tuple[int, ...], proc: int, target: str) -> None:
        launched.append((point, proc))
        real(key, args, point, proc, target)

    monkeypatch.setattr(_reduce, "point_launch", spy)
    n = 48
    rng = np.random.default_rng(7)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    m = dt.Machine(dt.Grid(1, 1, 2))
    probes = [dt.Tensor(f"{x}_fold_probe", (n, n)) for x in "ABC"]
    kernels.build("johnson", m, *probes)  # the library's formats: A's one block on (0, 0, 0)
    A, B, C = (dt.Tensor.from_array(f"{x}_fold", a, p.format) for x, a, p in zip("ABC", [np.zeros((n, n)), b, c],
                                                                                 probes))
    plan = kernels.build("johnson", m, A, B, C).compile()
    assert type(plan.reduction).__name__ == "HeldReduction", plan.reduction
    holder = m.bind(machine.cpus)[(0, 0, 0)]
    plan.run()
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12, atol=1e-12)
    assert [point for point, _ in launched] == [(0,), (1,)], launched  # one fold per processor holding a partial
    assert {proc for _, proc in launched} == {holder}, launched  # both on the block's holder
