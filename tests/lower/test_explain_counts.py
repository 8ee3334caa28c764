"""plan.stats() against hand counts: SUMMA, Cannon and Johnson, tensors with and without formats (issue 15 item 3).

The model (distal/lower/analysis.py): a tensor with a format is held by the
processors its format places tiles on; a tensor without one lives in one
global store that no processor holds. A processor receives what a launch
reads that it does not hold: not under its format, not fetched for the
previous launch (communicate at an outer loop fetches once), not written by
itself. An output of '=' starts at zero where it is used.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

i, j, k, l = dt.index_vars("i j k l")
io, jo, ko, ii, ji, ki, kos = dt.index_vars("io jo ko ii ji ki kos")
F64 = 8
PROCS_2x2 = ("(0,0)", "(0,1)", "(1,0)", "(1,1)")


def _tensors(n: int, formats: tuple[str, str, str] | None, m: dt.Machine) -> tuple[dt.Tensor, ...]:
    if formats is None:
        return tuple(dt.Tensor(x, (n, n)) for x in "ABC")
    return tuple(dt.Tensor(x, (n, n), dt.Format(f, m)) for x, f in zip("ABC", formats))


def _summa(n: int, chunk: int, formatted: bool, op: str = "=") -> dt.Schedule:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _tensors(n, ("xy -> xy",) * 3 if formatted else None, m)
    dt.parse(f"A(i,j) {op} B(i,k) * C(k,j)", A=A, B=B, C=C)
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
            .split(k, ko, ki, chunk).reorder([ko, ii, ji, ki])
            .communicate(A, jo).communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


def test_summa_without_formats_fetches_the_output_tile_once() -> None:
    # n = 12 on 2x2, k in 4 chunks of 3: each processor reads, per chunk, a 6x3 block of B
    # and a 3x6 block of C from the global stores; A's 6x6 tile starts at zero where it is used.
    data = _summa(12, 3, formatted=False).compile().stats()
    per_proc = 4 * (6 * 3 + 3 * 6) * F64  # 1152 B
    assert data["received_bytes"] == dict.fromkeys(PROCS_2x2, per_proc)
    assert data["total_received_bytes"] == 4 * per_proc
    # at any step it holds its A tile, one B block and one C block
    assert data["peak_bytes"] == dict.fromkeys(PROCS_2x2, (36 + 18 + 18) * F64)
    assert data["placement"]["per_tensor"] == {}
    assert data["global_store_bytes"] == {"A": 144 * F64, "B": 144 * F64, "C": 144 * F64}


def test_summa_without_formats_plus_equals_reads_the_output_tile_once_not_per_step() -> None:
    # '+=': A's tile (6x6) is needed with its values; communicate(A, jo) fetches it once,
    # before the first chunk, not again at each of the 4 chunks.
    data = _summa(12, 3, formatted=False, op="+=").compile().stats()
    assert data["received_bytes"] == dict.fromkeys(PROCS_2x2, 6 * 6 * F64 + 4 * (6 * 3 + 3 * 6) * F64)


def test_the_tutorial_summa_without_formats() -> None:
    # n = 1000 on 2x2, k by 250: 4 chunks of a 500x250 B block and a 250x500 C block
    # = 8,000,000 B per processor (7.6 MiB); it used to count A's 500x500 tile at every chunk (15.3 MiB).
    data = _summa(1000, 250, formatted=False).compile().stats()
    assert data["received_bytes"]["(0,1)"] == 4 * (500 * 250 + 250 * 500) * F64 == 8_000_000


def test_summa_with_formats() -> None:
    # xy -> xy: (x,y) holds the 6x6 blocks (x,y) of A, B, C. Chunks 0,1 of k lie in block 0,
    # chunks 2,3 in block 1: B(x, chunk) is remote for the 2 chunks outside block y,
    # C(chunk, y) for the 2 outside block x: 4 blocks of 18 elements.
    data = _summa(12, 3, formatted=True).compile().stats()
    assert data["received_bytes"] == dict.fromkeys(PROCS_2x2, 4 * 18 * F64)
    placed = 3 * 36 * F64
    assert data["placement"]["per_processor"] == dict.fromkeys(PROCS_2x2, placed)
    assert data["placement"]["per_tensor"]["B"] == dict.fromkeys(PROCS_2x2, 36 * F64)
    # (0,0) and (1,1) receive a B and a C block at the same chunks, (0,1) and (1,0) one at a time
    assert data["peak_bytes"] == {"(0,0)": placed + 36 * F64, "(0,1)": placed + 18 * F64,
                                  "(1,0)": placed + 18 * F64, "(1,1)": placed + 36 * F64}
    assert data["global_store_bytes"] == {}


def _cannon(g: int, n: int, formatted: bool) -> dt.Schedule:
    m = dt.Machine(dt.Grid(g, g))
    A, B, C = _tensors(n, ("xy -> xy",) * 3 if formatted else None, m)
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
            .divide(k, ko, ki, m.x).reorder([ko, ii, ji, ki])
            .rotate(ko, [io, jo], kos)
            .communicate(A, jo).communicate([B, C], kos)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


@pytest.mark.parametrize("formatted", [False, True])
def test_cannon(formatted: bool) -> None:
    g, n = 3, 9
    tile = (n // g) ** 2  # 9 elements
    data = _cannon(g, n, formatted).compile().stats()
    procs = [f"({x},{y})" for x in range(g) for y in range(g)]
    if formatted:
        # each of the g steps needs one B and one C tile; one step uses its own B tile and one
        # its own C tile: 2 * (g - 1) tiles received
        expect = 2 * (g - 1) * tile * F64
    else:
        # every B and C tile comes from the global stores: 2 per step, g steps; A starts at zero
        expect = 2 * g * tile * F64
    assert data["received_bytes"] == dict.fromkeys(procs, expect)
    assert data["total_received_bytes"] == g * g * expect


def _johnson(c: int, n: int, formatted: bool) -> dt.Schedule:
    m = dt.Machine(dt.Grid(c, c, c))
    A, B, C = _tensors(n, ("xy -> xy0", "xz -> x0z", "zy -> 0yz") if formatted else None, m)
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .communicate([A, B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM))


@pytest.mark.parametrize("formatted", [False, True])
def test_johnson(formatted: bool) -> None:
    c, n = 2, 8
    tile = (n // c) ** 2 * F64  # 128 B
    data = _johnson(c, n, formatted).compile().stats()
    for x in range(c):
        for y in range(c):
            for z in range(c):
                key = f"({x},{y},{z})"
                if formatted:
                    # B(x,z) lives on y = 0, C(z,y) on x = 0; A(x,y) on z = 0, the others send their partial
                    assert data["received_bytes"][key] == tile * ((y != 0) + (x != 0))
                    assert data["reduced_bytes"][key] == tile * (z != 0)
                    # placement: B and C tiles on their faces, A on z = 0
                    assert data["placement"]["per_processor"][key] == tile * ((y == 0) + (x == 0) + (z == 0))
                else:
                    # both input tiles from the global stores; every partial goes to A's global store
                    assert data["received_bytes"][key] == 2 * tile
                    assert data["reduced_bytes"][key] == tile
                    assert data["placement"]["per_processor"][key] == 0


def test_broadcast_format_is_placed_on_every_processor_along_it_and_read_locally() -> None:
    # B in "xy -> x*" on 2x2: row block x of B (4x8) on both processors of row x
    m = dt.Machine(dt.Grid(2, 2))
    n = 8
    A = dt.Tensor("A", (n, n), dt.Format("xy -> xy", m))
    B = dt.Tensor("B", (n, n), dt.Format("xy -> x*", m))
    A[i, j] = B[i, j] * 2
    data = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile().stats()
    assert data["placement"]["per_tensor"]["B"] == dict.fromkeys(PROCS_2x2, 4 * 8 * F64)
    assert data["placement"]["total_bytes"] == 4 * 32 * F64 + n * n * F64
    assert data["total_received_bytes"] == 0
    assert "placement (before the launches" in A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile().explain()


def test_an_output_tile_written_away_from_its_owner_is_returned() -> None:
    # A in "xy -> x0" (row blocks on column y = 0), computed on all 4 processors: (x,1) writes
    # A's 4x4 block (x,1), which lives on (x,0), and sends it there
    m = dt.Machine(dt.Grid(2, 2))
    n = 8
    A = dt.Tensor("A", (n, n), dt.Format("xy -> x0", m))
    B = dt.Tensor("B", (n, n), dt.Format("xy -> xy", m))
    A[i, j] = B[i, j]
    data = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile().stats()
    assert data["returned_bytes"] == {"(0,0)": 0, "(0,1)": 16 * F64, "(1,0)": 0, "(1,1)": 16 * F64}
    assert data["total_received_bytes"] == 0


def test_a_launch_whose_points_receive_far_more_than_they_write_is_flagged() -> None:
    # A(i) = B(j,k) * C(i) over 8 processors: every point needs all of B (256x256 doubles,
    # 512 KiB) and writes 32 elements of A
    n = 256
    m = dt.Machine(dt.Grid(8))
    A, C = dt.Tensor("A", (n,)), dt.Tensor("C", (n,))
    B = dt.Tensor("B", (n, n))
    A[i] = B[j, k] * C[i]
    plan = A.schedule().distribute([i], [io], [ii], m).compile()
    data = plan.stats()
    (launch,) = data["launches"]
    per_point = (n * n + n // 8) * F64  # all of B and its block of C
    assert launch["point_received_bytes"] == {"max": per_point, "mean": per_point}
    assert launch["received_total"] == 8 * per_point
    assert launch["written_bytes"] == n * F64
    assert launch["warning"] is not None and data["warnings"] == [launch["warning"]]
    text = plan.explain()
    assert "warning: launch 0: its 8 point(s) receive 4.0 MiB (512.2 KiB per point on average" in text
    # a launch that writes as much as it reads is not flagged
    assert _summa(1000, 250, formatted=False).compile().stats()["warnings"] == []


def test_stats_are_exact_for_a_random_small_plan_against_a_brute_force_count() -> None:
    # brute force: element sets per processor, launch by launch, for SUMMA with '+=' and formats
    sched = _summa(6, 2, formatted=True, op="+=")
    plan = sched.compile()
    data = plan.stats()
    held = {}
    for name in "ABC":
        t = next(x for x in plan.tensors if x.name == name)
        fmt = t.tensor.format
        for p in plan.machine.coords():
            held[(name, tuple(p))] = {c for c in np.ndindex(6, 6) if tuple(p) in fmt.processors(c, (6, 6))}
    got = dict.fromkeys(PROCS_2x2, 0)
    cache: dict[tuple[str, tuple[int, ...]], set[tuple[int, ...]]] = {}
    for group, launch in plan.launches():
        used: dict[tuple[str, tuple[int, ...]], set[tuple[int, ...]]] = {}
        for point in launch.points():
            proc = plan.processor_of(group, point)
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                cells = set(np.ndindex(*(hi - lo for lo, hi in box)))
                cells = {tuple(c + lo for c, (lo, _) in zip(cell, box)) for cell in cells}
                have = held[(info.name, proc)] | cache.get((info.name, proc), set())
                got["(" + ",".join(map(str, proc)) + ")"] += len(cells - have) * F64
                used.setdefault((info.name, proc), set()).update(cells)
        cache = used
    assert data["received_bytes"] == got


@pytest.mark.parametrize("formatted", [False, True])
def test_counts_follow_each_tensors_own_communicate_loop(formatted: bool) -> None:
    # SUMMA n = 12 on 2x2, k in 4 chunks of 3, but B communicated at jo: each processor fetches
    # its whole 6x12 row block of B before the first chunk and keeps it; C still per chunk.
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _tensors(12, ("xy -> xy",) * 3 if formatted else None, m)
    A[i, j] = B[i, k] * C[k, j]
    plan = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
            .split(k, ko, ki, 3).reorder([ko, ii, ji, ki])
            .communicate([A, B], jo).communicate(C, ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM)).compile()
    b_tiles = {tuple(op.tile or ()) for _, launch in plan.launches() for op in launch.operands
               if plan.tensors[op.tensor].name == "B"}
    assert b_tiles == {(6, 12)}
    data = plan.stats()
    per_launch = [item["received_bytes"].get("(0,0)", 0) for item in data["launches"]]
    if formatted:
        # (0,0) holds B's block (0,0) and C's blocks (0,0): at launch 0 it fetches B's block (0,1)
        # (36 elements); chunks 2 and 3 of C (rows 6..12) are remote: 18 elements each
        assert per_launch == [36 * F64, 0, 18 * F64, 18 * F64]
    else:
        # everything from the global stores: B's row block (72) and C's chunk 0 (18), then one C chunk
        assert per_launch == [(72 + 18) * F64, 18 * F64, 18 * F64, 18 * F64]
    # and its peak beyond what its formats place on it: without formats A's tile, B's row block and
    # one C chunk; with formats B's block (0,1) and a remote C chunk (A's tile is its own)
    placed = data["placement"]["per_processor"]["(0,0)"]
    extra = (36 + 18) if formatted else (36 + 72 + 18)
    assert data["peak_bytes"]["(0,0)"] == placed + extra * F64


def test_explain_says_what_run_will_check_against_memory() -> None:
    # SUMMA n = 1000 without formats: 3 stores of 8,000,000 B (22.9 MiB); a processor's peak is A's
    # 500x500 tile and a 500x250 block of B and of C: 4,000,000 B (3.8 MiB); the need is the larger,
    # plus 10% and 16 MiB: 24,000,000 * 1.1 + 16 MiB = 43,177,216 B (41.2 MiB)
    text = _summa(1000, 250, formatted=False).compile().explain()
    assert "memory checked by run(): stores 22.9 MiB, processor (0,0) at its peak 3.8 MiB; need 41.2 MiB" in text
