"""Device groups (Table 2) and the state-matrix semantics (Figure 8, Figure 4)."""

from __future__ import annotations

import pytest

from distal.errors import ReductionError
from distal.reduction import (
    CollectiveKind,
    Form,
    ReductionStep,
    SynthesisHierarchy,
    check_program,
    groups,
    parse_program,
)
from distal.reduction.semantics import apply_collective, final_state, initial_state

# Figure 2a as a synthesis hierarchy: GPUs A0..A3, B0..B3 (server 0), C0..D3 (server 1).
TABLE2 = SynthesisHierarchy(("rack", "server", "CPU", "GPU"), (1, 2, 2, 4), (0, 1, 2, 3))
NAMES = [f"{c}{i}" for c in "ABCD" for i in range(4)]


def named(grps: tuple[tuple[int, ...], ...]) -> list[list[str]]:
    return [[NAMES[d] for d in g] for g in grps]


@pytest.mark.parametrize(
    ("slice_", "form", "expected"),
    [
        ("CPU", Form("InsideGroup"), [["A0", "A1", "A2", "A3"], ["B0", "B1", "B2", "B3"],
                                      ["C0", "C1", "C2", "C3"], ["D0", "D1", "D2", "D3"]]),
        ("CPU", Form("Parallel", "server"), [["A0", "B0"], ["A1", "B1"], ["A2", "B2"], ["A3", "B3"],
                                             ["C0", "D0"], ["C1", "D1"], ["C2", "D2"], ["C3", "D3"]]),
        ("CPU", Form("Parallel", "rack"), [["A0", "B0", "C0", "D0"], ["A1", "B1", "C1", "D1"],
                                           ["A2", "B2", "C2", "D2"], ["A3", "B3", "C3", "D3"]]),
        ("CPU", Form("Master", "rack"), [["A0", "B0", "C0", "D0"]]),
        ("server", Form("InsideGroup"), [NAMES[:8], NAMES[8:]]),
        ("server", Form("Parallel", "rack"), [["A0", "C0"], ["A1", "C1"], ["A2", "C2"], ["A3", "C3"],
                                              ["B0", "D0"], ["B1", "D1"], ["B2", "D2"], ["B3", "D3"]]),
        ("rack", Form("InsideGroup"), [NAMES]),
    ],
)
def test_table2_groups(slice_: str, form: Form, expected: list[list[str]]) -> None:
    got = named(groups(TABLE2, ReductionStep(slice_, form, CollectiveKind.ALL_REDUCE)))
    assert sorted(got) == sorted(expected)


def test_figure8_examples() -> None:
    # 4 devices, the reduction between devices 0 and 1 only.
    s = initial_state(4)
    ar = apply_collective(CollectiveKind.ALL_REDUCE, [s[0], s[1]])
    assert ar == ((0b11,) * 4, (0b11,) * 4)
    rs = apply_collective(CollectiveKind.REDUCE_SCATTER, [s[0], s[1]])
    assert rs == ((3, 3, 0, 0), (0, 0, 3, 3))
    assert apply_collective(CollectiveKind.ALL_GATHER, list(rs)) == ((3, 3, 3, 3),) * 2
    red = apply_collective(CollectiveKind.REDUCE, [s[0], s[1]])
    assert red == ((3, 3, 3, 3), (0, 0, 0, 0))
    assert apply_collective(CollectiveKind.BROADCAST, list(red)) == ((3, 3, 3, 3),) * 2
    # Broadcast must add information; AllGather needs disjoint rows of one size.
    assert apply_collective(CollectiveKind.BROADCAST, [(3,) * 4, (3,) * 4]) == "the broadcast adds no information"
    assert apply_collective(CollectiveKind.BROADCAST, [s[0], s[1]]) == "the root holds less than another device"
    partly = [(3,) * 4, (3,) * 4, (1,) * 4]
    assert apply_collective(CollectiveKind.BROADCAST, partly) == ((3,) * 4,) * 3
    assert apply_collective(CollectiveKind.BROADCAST, partly, strict_broadcast=True) == (
        "a receiver already holds the broadcast data"
    )
    assert apply_collective(CollectiveKind.ALL_GATHER, [s[0], s[1]]) == "devices hold overlapping chunks"
    assert apply_collective(CollectiveKind.ALL_GATHER, [(3, 0, 0, 0), (0, 3, 3, 0)]) == (
        "devices hold different numbers of chunks"
    )
    three = [s[0], s[1], s[2]]
    assert apply_collective(CollectiveKind.REDUCE_SCATTER, three) == "4 chunks do not scatter over 3 devices"
    assert apply_collective(CollectiveKind.ALL_REDUCE, [(0,) * 4, (0,) * 4]) == "devices hold no data"
    assert apply_collective(CollectiveKind.ALL_GATHER, [(0,) * 4, (0,) * 4]) == "devices hold no data"


# Figure 2d placement, reduction along the parameter-sharding axis [1 2 1 2]:
# the synthesis hierarchy is [(root, 1), (server, 2), (GPU, 2)]; {A0, A1} is
# (server, InsideGroup) and {A0, C0} is (server, Parallel(root)).
FIG2D = SynthesisHierarchy(("server", "GPU"), (2, 2), (1, 3))


def test_figure4a_reduces_data_that_should_not_be_reduced() -> None:
    prog = parse_program("(server, InsideGroup, ReduceScatter) ; (server, InsideGroup, AllReduce)")
    with pytest.raises(ReductionError) as info:
        check_program(FIG2D, prog)
    assert info.value.message == (
        "expected step 2 (server, InsideGroup, AllReduce) to be semantically valid on "
        "[(root, 1), (server, 2), (GPU, 2)], but found devices hold different chunks in group [0, 1]"
    )


def test_figure4b_reduces_the_same_data_twice() -> None:
    prog = parse_program("(server, Parallel(root), AllReduce) ; (server, Parallel(root), AllReduce)")
    with pytest.raises(ReductionError) as info:
        check_program(FIG2D, prog)
    assert info.value.message == (
        "expected step 2 (server, Parallel(root), AllReduce) to be semantically valid on "
        "[(root, 1), (server, 2), (GPU, 2)], but found a chunk would be summed twice in group [0, 2]"
    )


def test_common_programs_are_valid() -> None:
    for text in [
        "(server, InsideGroup, Reduce) ; (server, Master(root), AllReduce) ; "
        "(server, InsideGroup, Broadcast)",
        "(server, InsideGroup, ReduceScatter) ; (server, Parallel(root), AllReduce) ; "
        "(server, InsideGroup, AllGather)",
        "(server, InsideGroup, AllReduce) ; (server, Parallel(root), AllReduce)",
        "(root, InsideGroup, AllReduce)",
    ]:
        check_program(FIG2D, parse_program(text))
    assert final_state(2) == ((3, 3), (3, 3))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(rack, InsideGroup, AllReduce)",
         "expected a slice level of ['root', 'server', 'GPU'], but found 'rack'"),
        ("(GPU, Parallel(CPU), AllReduce)",
         "expected a form level of ['root', 'server', 'GPU'], but found 'CPU'"),
        ("(server, Parallel(GPU), AllReduce)",
         "expected the form level to be an ancestor of slice server, but found GPU"),
        ("(server, Master(server), AllReduce)",
         "expected the form level to be an ancestor of slice server, but found server"),
        ("(server, InsideGroup, AllReduce)",
         "expected the program to end with every chunk summed over all 4 devices, "
         "but found a partial reduction"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ReductionError) as info:
        check_program(FIG2D, parse_program(text))
    assert info.value.message == message
