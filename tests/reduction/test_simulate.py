"""The simulator against the paper's results 3 and 5, and its cost model."""

from __future__ import annotations

import pytest

from distal.errors import ReductionError
from distal.reduction import (
    a100_system,
    allreduce_program,
    enumerate_placements,
    layout_from_groups,
    lower_to_devices,
    parse_program,
    rank,
    simulated_seconds,
    v100_system,
)

# A sample of the appendix's axes (the bench runs all of them).
CASES = [
    (a100_system(2), [32], [0]), (a100_system(2), [4, 8], [0]), (a100_system(2), [8, 4], [1]),
    (a100_system(4), [16, 4], [0]), (a100_system(4), [4, 2, 8], [0, 2]),
    (v100_system(2), [4, 4], [1]), (v100_system(4), [2, 16], [1]), (v100_system(4), [8, 2, 2], [0, 2]),
]


def placements() -> list[object]:
    return [p for s, axes, red in CASES for p in enumerate_placements(s, axes, red)]


def crosses_nodes(p: object) -> bool:
    return p.hierarchy().system_levels[0] == 0  # type: ignore[attr-defined]


def test_result3_allreduce_inside_a_node_is_best() -> None:
    inside = [p for p in placements() if not crosses_nodes(p)]
    assert inside
    for p in inside:
        best = rank(p, algorithm="ring")[0]  # type: ignore[arg-type]
        assert best.program == allreduce_program(p.hierarchy())  # type: ignore[attr-defined]


def test_result5_cross_node_best_beats_allreduce_mostly() -> None:
    cross = [p for p in placements() if crosses_nodes(p)]
    wins = 0
    for p in cross:
        ranked = rank(p, algorithm="ring")  # type: ignore[arg-type]
        ar = next(r for r in ranked if r.program == allreduce_program(p.hierarchy()))  # type: ignore[attr-defined]
        assert ranked[0].seconds <= ar.seconds
        wins += ranked[0].seconds < ar.seconds * 0.99
    assert wins > len(cross) / 2


def test_inside_node_placement_beats_cross_node_placement() -> None:
    # F1 vs F2 of Table 4: reduction axis inside a node is ~100x faster.
    f1, f2 = sorted(enumerate_placements(a100_system(2), [8, 4], [0]), key=lambda p: p.matrix[0][0])
    assert rank(f2)[0].seconds > 50 * rank(f1)[0].seconds


def test_ring_cost_of_a_flat_allreduce() -> None:
    lay = layout_from_groups(a100_system(2), [list(range(32))])
    low = lower_to_devices(parse_program("(root, InsideGroup, AllReduce)"), lay)
    n = 2.0**30
    # The ring crosses each NIC once: 2(p-1)/p * n bytes at 8 GB/s, plus 62 hops of 10 us.
    expected = 2 * 31 / 32 * n / 8e9 + 62 * 10e-6
    assert simulated_seconds(low, n) == pytest.approx(expected)


def test_concurrent_groups_share_the_nic() -> None:
    s = a100_system(2)
    one = lower_to_devices(parse_program("(root, InsideGroup, AllReduce)"), layout_from_groups(s, [[0, 16]]))
    many = lower_to_devices(parse_program("(root, InsideGroup, AllReduce)"),
                 layout_from_groups(s, [[i, 16 + i] for i in range(16)]))
    assert simulated_seconds(many, 1e9) == pytest.approx(16 * simulated_seconds(one, 1e9), rel=1e-3)


def test_tree_beats_ring_on_latency() -> None:
    lay = layout_from_groups(a100_system(4), [list(range(64))])
    low = lower_to_devices(parse_program("(root, InsideGroup, AllReduce)"), lay)
    assert simulated_seconds(low, 1e3, "tree") < simulated_seconds(low, 1e3, "ring")


def test_errors() -> None:
    lay = layout_from_groups(a100_system(2), [[0, 1]])
    low = lower_to_devices(parse_program("(root, InsideGroup, AllReduce)"), lay)
    with pytest.raises(ReductionError) as info:
        simulated_seconds(low, 0)
    assert info.value.message == "expected a positive number of bytes per device, but found 0"
    with pytest.raises(ReductionError) as info:
        simulated_seconds(low, 1e6, "butterfly")
    assert info.value.message == "expected an algorithm of ['ring', 'tree'], but found 'butterfly'"
