"""Fig. 10: low-level collectives on device assignments, and Lemma 6.3 (lowering)."""

from __future__ import annotations

import random

import pytest

from distal.errors import TypeNotationError
from distal.redist import DistType, Mesh
from distal.redist.lowlevel import DeviceAssignment
from distal.redist.testing import random_problem

# on {a: 8} the paper's a0, a1, a2 (minor to major) are factor axes 2, 1, 0
A0, A1, A2 = 2, 1, 0


def test_example_6_8_sequences() -> None:
    m = Mesh(a=8)
    start = DeviceAssignment.of(m, DistType.parse("[1{a}8, 8]"))
    target = DeviceAssignment.of(m, DistType.parse("[8, 1{a}8]"))
    # sequence (10): move a2, then a1, then a0; each but the last is not minor-most
    s = start.alltoall(0, 1, (A2,))
    assert s.type_str() == "[2{a:(2)4}8, 4{a:(1)2}8]"  # [2{a0,a1}8, 4{a2}8]
    s = s.alltoall(0, 1, (A1,)).alltoall(0, 1, (A0,))
    assert s.type_str() == "[8, 1{a}8]"  # [8, 1{a0,a1,a2}8] ...
    assert not s.equivalent(target)  # ... but phi3 != phi: the final allpermute is needed
    assert s.allpermute(DistType.parse("[8, 1{a}8]")).equivalent(target)
    # Example 7.1: one multi-axis alltoall needs no permutation
    assert start.alltoall(0, 1, (A0, A1, A2)).equivalent(target)


def _cases(seed: int, count: int) -> list[tuple[Mesh, DistType, int, tuple[int, ...]]]:
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        mesh, src, _ = random_problem(rng, sizes=(2, 3, 4), max_rank=3, elements=(1, 2000))
        lists = src.factor_lists(mesh)
        dims = [i for i, lst in enumerate(lists) if lst]
        if not dims:
            continue
        i = rng.choice(dims)
        k = rng.randrange(len(lists[i]))
        n = rng.randrange(1, len(lists[i]) - k + 1)
        out.append((mesh, src, i, lists[i][k : k + n]))
    return out


@pytest.mark.parametrize(("mesh", "t", "dim", "run"), _cases(3, 40))
def test_relabelling_moves_no_data_and_gathers_contiguous_blocks(
    mesh: Mesh, t: DistType, dim: int, run: tuple[int, ...]
) -> None:
    a = DeviceAssignment.of(mesh, t)
    moved = a.relabel_only(dim, run)
    assert moved.equivalent(a)
    # Lemma 6.3: the low-level allgather lands in the weak class of the Fig. 8 result
    b = a.allgather(dim, run)
    lists = list(t.factor_lists(mesh))
    lists[dim] = tuple(f for f in lists[dim] if f not in run)
    fig8 = DistType.from_factor_lists(mesh, lists, t.global_type)
    assert sorted(b.tiles().values()) == sorted(DeviceAssignment.of(mesh, fig8).tiles().values())
    # and it is a real collective: each group's old tiles are the blocks of the new tile
    old, new = a.tiles(), b.tiles()
    c = a.local(dim)
    for group in moved.groups(run):
        base = new[group[0]]
        assert all(new[d] == base for d in group)
        for k, d in enumerate(group):
            want = tuple(o + (k * c if i == dim else 0) for i, o in enumerate(base))
            assert old[d] == want


def test_low_level_errors() -> None:
    a = DeviceAssignment.of(Mesh(x=4), DistType.parse("[1{x}4, 2]"))
    with pytest.raises(TypeNotationError) as e:
        a.alltoall(0, 1, (1, 0))
    assert "expected the local size of dimension 1 divisible by 4, but found [1{x}4, 2]" in str(e.value)
    with pytest.raises(TypeNotationError) as e:
        a.relabel_only(1, (0,))
    assert "expected axes (0,) next to each other in dimension 1, but found [1{x}4, 2]" in str(e.value)
    with pytest.raises(TypeNotationError) as e:
        a.dynslice(1, (0,))
    assert "expected free axes dividing dimension 1, but found [1{x}4, 2]" in str(e.value)
    with pytest.raises(TypeNotationError) as e:
        a.allpermute(DistType.parse("[4, 2]"))
    assert "expected allpermute between equal local types, but found [1{x}4, 2] and [4, 2]" in str(e.value)
