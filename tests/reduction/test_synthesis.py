"""Syntax-guided enumeration: counts, order, the common optimal programs, speed."""

from __future__ import annotations

import pytest

from distal.errors import ReductionError
from distal.reduction import (
    SynthesisHierarchy,
    a100_system,
    candidate_steps,
    check_program,
    enumerate_placements,
    synthesize_programs,
    v100_system,
)

RAB = "(node, InsideGroup, Reduce) ; (node, Master(root), AllReduce) ; (node, InsideGroup, Broadcast)"
RSAG = ("(node, InsideGroup, ReduceScatter) ; (node, Parallel(root), AllReduce) ; "
        "(node, InsideGroup, AllGather)")


def two_level(a: int, b: int) -> SynthesisHierarchy:
    return SynthesisHierarchy(("node", "gpu"), (a, b), (0, 1))


def test_one_level_has_the_three_flat_programs() -> None:
    progs = synthesize_programs(SynthesisHierarchy(("gpu",), (16,), (1,))).programs
    assert [str(p) for p in progs] == [
        "(root, InsideGroup, AllReduce)",
        "(root, InsideGroup, ReduceScatter) ; (root, InsideGroup, AllGather)",
        "(root, InsideGroup, Reduce) ; (root, InsideGroup, Broadcast)",
    ]


@pytest.mark.parametrize(("a", "b"), [(2, 16), (4, 16), (2, 8), (4, 8), (2, 2)])
def test_two_level_count_does_not_depend_on_sizes(a: int, b: int) -> None:
    # The paper's count is 47 for every two-level hierarchy; see docs/reduction.md.
    assert len(synthesize_programs(two_level(a, b))) == 93


def test_both_common_optimal_programs_are_synthesized() -> None:
    shown = {str(p) for p in synthesize_programs(two_level(2, 16)).programs}
    assert RAB in shown and RSAG in shown


def test_programs_come_in_increasing_size_and_are_valid() -> None:
    synth = synthesize_programs(two_level(2, 4))
    sizes = [len(p) for p in synth.programs]
    assert sizes == sorted(sizes) and max(sizes) == 5 and sizes[0] == 1
    assert len({str(p) for p in synth.programs}) == len(synth)
    for p in synth.programs:
        check_program(synth.hierarchy, p)


def test_size_limit() -> None:
    h = two_level(2, 4)
    counts = [len(synthesize_programs(h, n)) for n in range(1, 6)]
    assert counts == sorted(counts) and counts[0] == 1 and counts[2] == 29


def test_candidate_steps_are_distinct_groups() -> None:
    steps = candidate_steps(two_level(2, 4))
    assert len({g for _, g in steps}) == len(steps) == 4


@pytest.mark.parametrize(
    ("system", "axes", "reduce"),
    [(a100_system(2), [32], [0]), (a100_system(4), [64], [0]), (a100_system(4), [8, 2, 4], [0, 2]),
     (a100_system(4), [2, 2, 16], [0, 2]), (v100_system(4), [8, 2, 2], [0, 2]), (v100_system(2), [16], [0])],
)
def test_synthesis_of_one_placement_finds_its_programs(system: object, axes: list[int], reduce: list[int]) -> None:
    # how long synthesis takes is measured by bench/reduction_synthesis.py, not here (no test depends on timing)
    for p in enumerate_placements(system, axes, reduce):  # type: ignore[arg-type]
        synth = synthesize_programs(p.hierarchy())
        assert len(synth) in (3, 93)


def test_errors() -> None:
    with pytest.raises(ReductionError) as info:
        synthesize_programs(two_level(2, 2), 0)
    assert info.value.message == "expected a positive program size limit, but found 0"


def test_strict_broadcast_reading() -> None:
    strict = synthesize_programs(two_level(2, 4), strict_broadcast=True)
    assert len(strict) == 61
    shown = {str(p) for p in strict.programs}
    assert RAB in shown and RSAG in shown
    assert len(synthesize_programs(SynthesisHierarchy(("gpu",), (4,), (1,)), strict_broadcast=True)) == 3
