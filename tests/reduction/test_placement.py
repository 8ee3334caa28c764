"""Parallelism matrices, synthesis hierarchies, layouts."""

from __future__ import annotations

import math

import pytest

from distal.errors import ReductionError
from distal.reduction import (
    NIC,
    Level,
    Placement,
    SynthesisHierarchy,
    System,
    a100_system,
    enumerate_placements,
    layout_from_groups,
    v100_system,
)

FIG2 = System((Level("rack", 1, NIC), Level("server", 2, NIC), Level("CPU", 2, NIC), Level("GPU", 4, NIC)))


def test_figure2_matrices_are_enumerated() -> None:
    mats = {p.matrix for p in enumerate_placements(FIG2, [4, 4], [1])}
    assert ((1, 2, 2, 1), (1, 1, 1, 4)) in mats
    assert ((1, 2, 1, 2), (1, 1, 2, 2)) in mats
    assert ((1, 1, 2, 2), (1, 2, 1, 2)) in mats
    for m in mats:
        assert tuple(math.prod(r) for r in m) == (4, 4)
        assert tuple(math.prod(col) for col in zip(*m)) == (1, 2, 2, 4)


@pytest.mark.parametrize(
    ("system", "axes", "count"),
    [(a100_system(2), [32], 1), (a100_system(2), [2, 16], 2), (a100_system(4), [8, 8], 3),
     (a100_system(4), [16, 2, 2], 4), (a100_system(4), [8, 2, 4], 5), (v100_system(4), [8, 2, 2], 4)],
)
def test_placement_counts_match_the_appendix(system: System, axes: list[int], count: int) -> None:
    assert len(enumerate_placements(system, axes, [0])) == count


def test_collapsed_hierarchy_of_table1() -> None:
    # Table 1: reduction on axes 0 and 2 of a 3x3 matrix collapses per level.
    sys3 = System((Level("a", 7, NIC), Level("b", 32, NIC), Level("c", 243, NIC)))
    p = Placement(sys3, ((1, 2, 3), (1, 2, 3), (7, 8, 27)), (0, 2))
    h = p.hierarchy()
    assert h.sizes == (7, 16, 81) and h.names == ("a", "b", "c")
    fig2d = Placement(FIG2, ((1, 1, 2, 2), (1, 2, 1, 2)), (1,))
    assert str(fig2d.hierarchy()) == "[(root, 1), (server, 2), (GPU, 2)]"


def test_layout_replicas_cover_the_system() -> None:
    p = Placement(FIG2, ((1, 1, 2, 2), (1, 2, 1, 2)), (1,))
    lay = p.layout()
    assert len(lay.replicas) == 4 and sorted(lay.devices) == list(range(16))
    # Within a level, axis 0 is major: GPU index = 2 * batch digit + shard digit.
    assert lay.replicas[0] == (0, 1, 8, 9)
    for rep in lay.replicas:
        coords = [FIG2.coords(d) for d in rep]
        assert len({c[1] for c in coords}) == 2  # spans both servers


def test_layout_from_groups_regular_and_flat() -> None:
    s = a100_system(2)
    lay = layout_from_groups(s, [[17, 1, 16, 0], [2, 3, 18, 19]])
    assert lay.hierarchy.sizes == (2, 2) and lay.replicas[0] == (0, 1, 16, 17)
    flat = layout_from_groups(s, [[0, 1, 17]])
    assert flat.hierarchy.sizes == (3,) and flat.hierarchy.names == ("gpu",)
    single = layout_from_groups(s, [[5]])
    assert single.hierarchy.size == 1


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: enumerate_placements(a100_system(2), [4, 4], [0]),
            "expected parallelism axes multiplying to the 32 devices of [(node, 2), (gpu, 16)], but found "
            "[4, 4] (product 16)",
        ),
        (
            lambda: enumerate_placements(a100_system(2), [0, 32], [0]),
            "expected positive parallelism axes, but found (0, 32)",
        ),
        (
            lambda: enumerate_placements(a100_system(2), [2, 16], [2]),
            "expected reduction axes in [0, 2), but found 2",
        ),
        (
            lambda: enumerate_placements(a100_system(2), [2, 16], []),
            "expected at least one reduction axis, but found none",
        ),
        (
            lambda: enumerate_placements(a100_system(2), [2, 16], [0, 0]),
            "expected distinct reduction axes, but found (0, 0)",
        ),
    ],
)
def test_errors(build: object, message: str) -> None:
    with pytest.raises(ReductionError) as info:
        build()  # type: ignore[operator]
    assert info.value.message == message


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Placement(a100_system(2), ((2, 4), (1, 2)), (0,)),
            "expected column 1 of the parallelism matrix to multiply to 16, but found 8",
        ),
        (
            lambda: Placement(a100_system(2), ((2,),), (0,)),
            "expected a parallelism matrix with 2 columns per row, but found ((2,),)",
        ),
        (
            lambda: SynthesisHierarchy(("root",), (2,), (0,)),
            "expected distinct level names other than 'root', but found ['root']",
        ),
        (lambda: SynthesisHierarchy(("a",), (0,), (0,)), "expected a positive size for level a, but found 0"),
        (
            lambda: SynthesisHierarchy(("a",), (2, 2), (0,)),
            "expected one size and one system level per name, but found 1 names, 2 sizes, 1 levels",
        ),
        (lambda: layout_from_groups(a100_system(2), []), "expected non-empty device groups, but found []"),
        (
            lambda: layout_from_groups(a100_system(2), [[0, 40]]),
            "expected device ids in [0, 32), but found 40",
        ),
        (
            lambda: layout_from_groups(a100_system(2), [[0, 1], [1, 2]]),
            "expected disjoint device groups, but found [(0, 1), (1, 2)]",
        ),
        (
            lambda: layout_from_groups(a100_system(2), [[0, 1], [2]]),
            "expected device groups of one size, but found sizes [1, 2]",
        ),
    ],
)
def test_more_errors(build: object, message: str) -> None:
    with pytest.raises(ReductionError) as info:
        build()  # type: ignore[operator]
    assert info.value.message == message
