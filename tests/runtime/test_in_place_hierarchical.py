"""Plans read their operands' tiles from the placed blocks where a tile lies in one block (issue 11, item 1):
sub-blocks of a block (Solomonik's B and C, a split communicated tile) and the leaf blocks of hierarchical
formats; only tiles that span several blocks are gathered into a second store."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.api.plan import Plan
from distal.format.layout import layout
from distal.lower.in_place import element_block, gathered
from distal.runtime import _placed
from distal.runtime._tensor_storage import FormatStore

pytestmark = pytest.mark.legate

M22 = dt.Machine(dt.Grid(2, 2))
MH22 = dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))


@pytest.fixture(scope="module", autouse=True)
def legate() -> rt.MachineInfo:
    return rt.ensure_started()


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _gathered(plan: Plan) -> list[str]:
    """The names of the plan's placed tensors that running it gathers (`distal.lower.in_place.gathered`)."""
    return [info.tensor.name for n, info in enumerate(plan.tensors)
            if info.tensor.format is not None
            and gathered(plan, n, layout(info.tensor.format, info.shape))]


def _matmul_operands(name: str, machine: dt.Machine, n: int) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor,
                                                                       np.ndarray, np.ndarray]:
    """A, B, C placed in the algorithm's own formats on ``machine`` (nothing for build to move)."""
    from distal.kernels._algorithms import ALGORITHMS

    alg = ALGORITHMS[name]
    b, c = _data((n, n), n), _data((n, n), n + 1)
    A = dt.Tensor("A", (n, n), alg.format_of(0, machine))
    B = dt.Tensor.from_array("B", b, alg.format_of(1, machine))
    C = dt.Tensor.from_array("C", c, alg.format_of(2, machine))
    return A, B, C, b, c


@pytest.mark.parametrize("n", [8, 12, 7])
def test_solomonik_reads_b_and_c_in_their_blocks(moves: list[str], n: int) -> None:
    """Solomonik's B and C tiles are k-slabs of the blocks on the face z = 0 ("xy -> xy0"): sub-blocks."""
    machine = dt.kernels.machine("solomonik", 8)
    A, B, C, b, c = _matmul_operands("solomonik", machine, n)
    plan = dt.kernels.build("solomonik", machine, A, B, C).compile()
    assert _gathered(plan) == []
    moves.clear()
    plan.run()
    assert moves == []
    assert isinstance(A.storage, FormatStore) and A.storage.format == A.format
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ik,kj->ij", b, c), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [8, 16])
def test_hierarchical_summa_reads_and_writes_the_leaf_blocks(moves: list[str], n: int) -> None:
    """On a 2x2 grid of 2x2 nodes, with k chunks of the leaf tile, every tile of A, B and C is a leaf block."""
    A, B, C, b, c = _matmul_operands("summa", MH22, n)
    plan = dt.kernels.build("summa", MH22, A, B, C, chunk=n // 4).compile()
    assert _gathered(plan) == []
    moves.clear()
    plan.run()
    assert moves == []
    assert isinstance(A.storage, FormatStore) and A.storage.format == A.format
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ik,kj->ij", b, c), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("accumulate", [True, False])
def test_a_split_communicated_tile_is_a_sub_block(moves: list[str], accumulate: bool) -> None:
    """B's tile is communicated at the inner loop of a split of its block's columns: half a block per step,
    read and written in place (the output's sub-blocks too; with `=` the first step's launch zeroes the
    new blocks)."""
    i, j = dt.index_vars("i j")
    io, jo, ii, ji, jio, jii = dt.index_vars("io jo ii ji jio jii")
    a0, b = _data((8, 8), 1), _data((8, 8), 2)
    A = dt.Tensor.from_array("A", a0, dt.Format("xy -> xy", M22))
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy", M22))
    if accumulate:
        A[i, j] += B[i, j] * 2  # type: ignore[misc]
    else:
        A[i, j] = B[i, j] * 2
        a0 = np.zeros_like(a0)
    plan = (A.schedule().distribute([i, j], [io, jo], [ii, ji], M22).split(ji, jio, jii, 2)
            .reorder([io, jo, jio, ii, jii]).communicate([A, B], jio).compile())
    tiles = {plan.tensors[op.tensor].tensor.name: op.tile for _, launch in plan.launches() for op in launch.operands}
    assert tiles == {"A": (4, 2), "B": (4, 2)}  # half of a (4, 4) block
    assert _gathered(plan) == []
    moves.clear()
    plan.run()
    assert moves == []
    np.testing.assert_allclose(A.to_numpy(), a0 + 2 * b, rtol=1e-12)


@pytest.mark.parametrize(("name", "n"), [("summa", 8), ("summa", 16), ("cannon", 8), ("cannon", 12), ("pumma", 12)])
def test_tiles_spanning_several_leaf_blocks_are_read_from_the_block_store(moves: list[str], name: str,
                                                                         n: int) -> None:
    """Hierarchical SUMMA, Cannon and PUMMA take k in chunks of a node's tile: B's and C's tiles span a node's
    leaf blocks, a box of the block store that one launch point takes whole; the kernel assembles the tile."""
    A, B, C, b, c = _matmul_operands(name, MH22, n)
    plan = dt.kernels.build(name, MH22, A, B, C).compile()
    spans = {plan.tensors[op.tensor].tensor.name: op.tile for _, launch in plan.launches() for op in launch.operands}
    assert spans["B"][1] > -(-n // 4)  # wider than a leaf block
    assert _gathered(plan) == []
    moves.clear()
    plan.run()
    assert moves == []
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ik,kj->ij", b, c), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(8, 4), (7, 5)])
def test_a_hierarchical_broadcast_output_is_written_in_place_then_replicated(moves: list[str],
                                                                             shape: tuple[int, int]) -> None:
    """A's format broadcasts over each node's processors: the plan writes copy 0 of every node's block in
    place, and `replicate` copies it to the node's other processor."""
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    mh = dt.Machine(dt.Grid(2, 2), dt.Grid(2))
    b = _data(shape, 3)
    B = dt.Tensor.from_array("B", b, dt.Format(["xy -> xy", "xy -> x"], mh))
    A = dt.Tensor("A", shape, dt.Format(["xy -> xy", "xy -> *"], mh))
    A[i, j] = B[i, j] * 2 - 1
    plan = A.schedule().distribute([i, j], [io, jo], [ii, ji], M22).compile()
    assert _gathered(plan) == []  # B's node tile spans its two leaf blocks (one box); A's tile is A's block
    moves.clear()
    plan.run()
    assert moves == []
    held = A.storage
    assert isinstance(held, FormatStore) and held.format == A.format
    blocks = held.device_blocks()
    assert len(blocks) == 8
    for (x, y, z), block in blocks.items():
        assert np.array_equal(block, blocks[(x, y, 1 - z)])
    np.testing.assert_allclose(A.to_numpy(), b * 2 - 1, rtol=1e-12)


def test_sub_blocks_whose_blocks_are_not_affine_in_the_point_are_gathered(moves: list[str]) -> None:
    """A 4x4 launch over 2x2 blocks: point (p, q) needs block (p // 2, q // 2), which no Legate projection
    expresses, so both tensors take the gathered way (and the answer is still numpy's)."""
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    b = _data((8, 8), 4)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy", M22))
    A = dt.Tensor("A", (8, 8), dt.Format("xy -> xy", M22))
    A[i, j] = B[i, j] + 1
    plan = A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(4, 4))).compile()
    assert _gathered(plan) == ["A", "B"]
    moves.clear()
    plan.run()
    assert "gather" in moves and "to_numpy" not in moves and "from_numpy" not in moves
    np.testing.assert_allclose(A.to_numpy(), b + 1, rtol=1e-12)


@pytest.mark.parametrize(("shape", "accumulate"), [((8, 4), False), ((7, 3), False), ((7, 3), True)])
def test_a_written_tile_spanning_several_blocks_is_put_back_into_them(moves: list[str], shape: tuple[int, int],
                                                                      accumulate: bool) -> None:
    """Rows over Grid(4) written by a plan on Grid(2): each point's tile is two row blocks, assembled for the
    kernel and put back into the blocks after it (7 rows: the last point's second block holds one row)."""
    i, j = dt.index_vars("i j")
    io, ii = dt.index_vars("io ii")
    m4 = dt.Machine(dt.Grid(4))
    a0, b = _data(shape, 5), _data(shape, 6)
    A = dt.Tensor.from_array("A", a0, dt.Format("xy -> x", m4))
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> x", m4))
    if accumulate:
        A[i, j] += B[i, j] * 3  # type: ignore[misc]
    else:
        A[i, j] = B[i, j] * 3
        a0 = np.zeros_like(a0)
    plan = A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).compile()
    assert _gathered(plan) == []
    moves.clear()
    plan.run()
    assert moves == []
    held = A.storage
    assert isinstance(held, FormatStore) and held.format == A.format
    np.testing.assert_allclose(A.to_numpy(), a0 + 3 * b, rtol=1e-12)


@pytest.mark.parametrize(("spec", "machine", "shape"), [
    (["xy -> xy", "xy -> xy"], MH22, (5, 7)), (["xy -> xy", "xy -> x"], dt.Machine(dt.Grid(2, 2), dt.Grid(2)), (7, 3)),
    ("xy -> x", dt.Machine(dt.Grid(4)), (7, 2)), (["xy -> xy", "xy -> yx"], MH22, (9, 6)),
])
def test_the_pieces_of_a_spanning_tile_are_where_each_element_is_held(spec: object, machine: dt.Machine,
                                                                      shape: tuple[int, int]) -> None:
    """Every element of a box lands, through `_pieces`, at its own block (relative to the box's first) and
    its own place in that block (as `_split` gives them), hierarchical edges that do not divide included."""
    lay = layout(dt.Format(spec, machine), shape)  # type: ignore[arg-type]
    names = [name for name, _ in lay.axes]
    for lo0 in range(shape[0]):
        for hi0 in range(lo0 + 1, shape[0] + 1):
            box = ((lo0, hi0), (1, shape[1]))
            seen: dict[tuple[int, int], tuple[tuple[int, ...], tuple[int, int]]] = {}
            for lead, in_block, in_tile in _placed._pieces(lay, box):
                for a in range(in_tile[0].start, in_tile[0].stop):
                    for b in range(in_tile[1].start, in_tile[1].stop):
                        seen[(a, b)] = (lead, (in_block[0].start + a - in_tile[0].start,
                                               in_block[1].start + b - in_tile[1].start))
            assert len(seen) == (hi0 - lo0) * (shape[1] - 1)
            first = [element_block(lay, d, lo)[0] for d, (lo, _) in enumerate(box)]
            for (a, b), (lead, place) in seen.items():
                (ca, ra), (cb, rb) = element_block(lay, 0, lo0 + a), element_block(lay, 1, 1 + b)
                want = {**{k: v - first[0][k] for k, v in ca.items()}, **{k: v - first[1][k] for k, v in cb.items()}}
                assert lead == tuple(want.get(name, 0) for name in names) and place == (ra, rb)
