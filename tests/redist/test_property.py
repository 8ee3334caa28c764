"""Property test over the paper's problem distribution (section 8).

Three mesh axes, arrays of rank 1 to 6, each axis replicated or splitting one
dimension in both types. For every problem: the simulated program ends with
exactly the target's tiles, every step stays within the height bound, and
the cost is at most that of the naive gather-then-slice program.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from distal.redist import AllPermute, CollectiveProgram, DistType, Mesh, synthesize
from distal.redist.simulate import offsets
from tests._strategies.redist import problems


@settings(max_examples=300, deadline=None, derandomize=True)
@given(problems())
def test_synthesized_programs_are_correct_bounded_and_cheap(
    problem: tuple[Mesh, DistType, DistType],
) -> None:
    mesh, src, dst = problem
    prog = synthesize(src, dst, mesh)
    naive = synthesize(src, dst, mesh, method="naive")
    assert prog.source == src and prog.target == dst
    assert DistType.parse(str(src)) == src and CollectiveProgram.parse(str(prog)) == prog
    assert prog.height <= prog.bound == max(src.local_size, dst.local_size)
    assert prog.cost <= naive.cost
    # at most one allpermute (Theorem 6.7), also where a dimension mixes primes (2 and 3)
    assert sum(isinstance(s, AllPermute) for s in prog.steps) <= 1
    a = np.arange(src.global_size).reshape(src.global_type)
    tiles = prog.simulate(a)
    assert set(tiles) == set(mesh.devices())
    for device, tile in tiles.items():
        off = offsets(dst, mesh, device)
        want = a[tuple(slice(o, o + n) for o, n in zip(off, dst.local_type))]
        np.testing.assert_array_equal(tile, want)
