"""The NumPy executor: every synthesized program sums exactly like one step."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distal.errors import ReductionError
from distal.reduction import (
    NIC,
    NVSWITCH_A100,
    Level,
    System,
    a100_system,
    enumerate_placements,
    execute,
    layout_from_groups,
    parse_program,
    synthesize_programs,
)


def reference(groups: tuple[tuple[int, ...], ...], values: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    out = dict(values)
    for g in groups:
        total = sum(values[d] for d in g)
        for d in g:
            out[d] = total
    return out


def test_every_program_of_a_placement_sums_exactly() -> None:
    system = System((Level("node", 2, NIC), Level("gpu", 4, NVSWITCH_A100)))
    (p,) = [q for q in enumerate_placements(system, [4, 2], [0]) if q.matrix == ((2, 2), (1, 2))]
    lay = p.layout()
    rng = np.random.default_rng(0)
    values = {d: rng.integers(-1000, 1000, size=(13, 3)) for d in range(system.size)}
    expected = reference(lay.groups(), values)
    for prog in synthesize_programs(p.hierarchy()).programs:
        got = execute(prog, p, values)
        for d in range(system.size):
            np.testing.assert_array_equal(got[d], expected[d])
            assert got[d].dtype == values[d].dtype


@st.composite
def cases(draw: st.DrawFn) -> tuple[object, int, int]:
    cards = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3)
                 .filter(lambda c: math.prod(c) <= 24))
    system = System(tuple(Level(f"l{i}", c, NIC) for i, c in enumerate(cards)))
    n = system.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    a0 = draw(st.sampled_from(divisors))
    axes = [a0, n // a0]
    red = draw(st.sampled_from([[0], [1], [0, 1]]))
    placements = enumerate_placements(system, axes, red)
    p = draw(st.sampled_from(placements))
    progs = synthesize_programs(p.hierarchy(), 4).programs
    idx = draw(st.integers(0, len(progs) - 1))
    length = draw(st.integers(1, 9))
    return (p, idx, length)


@settings(max_examples=40, deadline=None)
@given(cases())
def test_random_placements_and_programs(case: tuple[object, int, int]) -> None:
    p, idx, length = case
    prog = synthesize_programs(p.hierarchy(), 4).programs[idx]  # type: ignore[attr-defined]
    n = p.system.size  # type: ignore[attr-defined]
    values = {d: np.arange(length, dtype=np.int64) * (d + 1) + d for d in range(n)}
    got = execute(prog, p, values)  # type: ignore[arg-type]
    expected = reference(p.layout().groups(), values)  # type: ignore[attr-defined]
    for d in range(n):
        np.testing.assert_array_equal(got[d], expected[d])


def test_devices_outside_the_layout_pass_through() -> None:
    lay = layout_from_groups(a100_system(2), [[0, 16]])
    values = {0: np.ones(4), 16: np.ones(4), 3: np.zeros(4)}
    out = execute(parse_program("(root, InsideGroup, Reduce) ; (root, InsideGroup, Broadcast)"), lay, values)
    assert out[16].tolist() == [2.0] * 4 and out[3] is values[3]


def test_errors() -> None:
    lay = layout_from_groups(a100_system(2), [[0, 16]])
    prog = parse_program("(root, InsideGroup, AllReduce)")
    cases = [
        (
            lambda: execute(prog, lay, {0: np.ones(2)}),
            "expected values for every device of the reduction, but found none for [16]",
        ),
        (
            lambda: execute(prog, lay, {0: np.ones(2), 16: np.ones(3)}),
            "expected one array shape on all devices, but found [(2,), (3,)]",
        ),
        (
            lambda: execute(prog, lay, {0: np.float64(1), 16: np.float64(2)}),
            "expected arrays with at least one dimension, but found scalars",
        ),
        (lambda: execute(prog, "lay", {}), "expected a Placement or a DeviceLayout, but found 'lay'"),
    ]
    for build, message in cases:
        with pytest.raises(ReductionError) as info:
            build()  # type: ignore[no-untyped-call]
        assert info.value.message == message
