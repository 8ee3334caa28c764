"""Plans as data: launch domains, tilings, projections, privileges, explain, debug logging."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import distal as dt
from distal.format.format import Format
from distal.lower import lower
from distal.lower.numpy_exec import run_numpy
from distal.lower.task_graph import Privilege, Proj

i, j, k, io, jo, ko, ii, ji, ki, kos = dt.index_vars("i j k io jo ko ii ji ki kos")


def _matmul(n: int, m: dt.Machine, specs: tuple[str, str, str] = ("xy -> xy",) * 3
            ) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(0)
    A = dt.Tensor("A", (n, n), Format(specs[0], m))
    B = dt.Tensor.from_array("B", rng.standard_normal((n, n)), Format(specs[1], m))
    C = dt.Tensor.from_array("C", rng.standard_normal((n, n)), Format(specs[2], m))
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def _summa(n: int = 8, chunk: int = 2) -> tuple[dt.Schedule, dt.Tensor, dt.Tensor, dt.Tensor]:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _matmul(n, m)
    s = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, chunk)
         .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
         .substitute([ii, ji, ki], dt.leaf.GEMM))
    return s, A, B, C


def test_summa_is_a_sequence_of_2d_launches_over_ko() -> None:
    plan = _summa(8, 2)[0].compile()
    (group,) = plan.groups
    assert group.vars == (io, jo, ko) and group.distributed == 2
    assert len(group.launches) == 4
    for step, launch in enumerate(group.launches):
        assert launch.lower == (0, 0, step) and launch.upper == (2, 2, step + 1)
        a, b, c = launch.operands
        assert (a.privilege, a.tile, a.projection) == (Privilege.READ_WRITE, (4, 4), (Proj(0), Proj(1)))
        # the step is a launch dimension of extent one: its color is a constant per launch
        assert (b.privilege, b.tile, b.projection) == (Privilege.READ, (4, 2), (Proj(0), Proj(None, 0, step)))
        assert (c.tile, c.projection) == ((2, 4), (Proj(None, 0, step), Proj(1)))


def test_extents_that_do_not_divide_give_clipped_and_empty_tiles() -> None:
    m = dt.Machine(dt.Grid(4))
    x = dt.Tensor.from_array("x", np.arange(9.0))
    y = dt.Tensor("y", (9,))
    y[i] = x[i] * 2
    plan = y.schedule().distribute([i], [io], [ii], m).compile()
    (launch,) = plan.groups[0].launches
    # blocks of 3: the fourth processor's block is empty, so its point is not launched (issue 27)
    assert (launch.lower, launch.upper) == ((0,), (3,))
    assert launch.operands[0].tile == (3,) and launch.operands[0].colors == (3,)
    assert [launch.operands[0].box((p,), (9,)) for p in range(3)] == [((0, 3),), ((3, 6),), ((6, 9),)]
    plan.run(backend="numpy")
    np.testing.assert_array_equal(y.to_numpy(), np.arange(9.0) * 2)


def test_johnson_reduces_into_the_output() -> None:
    m = dt.Machine(dt.Grid(2, 2, 2))
    A, _, _ = _matmul(6, m, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"))
    plan = A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m).compile()
    (launch,) = plan.groups[0].launches
    assert launch.shape == (2, 2, 2)
    assert launch.operands[0].privilege is Privilege.REDUCE_ADD
    assert launch.operands[1].projection == (Proj(0), Proj(2))


@pytest.mark.parametrize("rotation", ["points", "boxes"])
def test_cannon_rotation(rotation: str) -> None:
    m = dt.Machine(dt.Grid(3, 3))
    A, B, C = _matmul(9, m)
    s = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).divide(k, ko, ki, m.x)
         .reorder([ko, ii, ji, ki]).rotate(ko, [io, jo], kos).communicate(A, jo)
         .communicate([B, C], kos).substitute([ii, ji, ki], dt.leaf.GEMM))
    plan = lower(s, rotation=rotation)
    launches = plan.groups[0].launches
    if rotation == "points":
        assert len(launches) == 27 and all(x.pinned and x.volume == 1 for x in launches)
    else:
        assert not any(x.pinned for x in launches) and sum(x.volume for x in launches) == 27
    for launch in launches:  # B's tile at (io, jo, kos) is (io, (io + jo + kos) mod 3)
        for p in launch.points():
            assert launch.operands[1].color(p) == (p[0], (p[0] + p[1] + p[2]) % 3)
    run_numpy(plan)  # lower() gives the plan as data (PlanBase): run by the NumPy executor
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_no_distributed_loop_is_one_point_with_whole_tensors() -> None:
    A, _, _ = _matmul(5, dt.Machine(dt.Grid(2, 2)))
    plan = A.schedule().compile()
    (launch,) = plan.groups[0].launches
    assert launch.volume == 1 and all(op.tile is None for op in launch.operands)
    assert launch.operands[0].privilege is Privilege.READ_WRITE


def test_untileable_access_falls_back_to_the_whole_tensor_and_says_so() -> None:
    x = dt.Tensor.from_array("x", np.arange(10.0))
    y = dt.Tensor("y", (10,))
    y[i] = x[i] * 3
    # distributing the inner loop of a split: point ii touches i = ii, ii+3, ii+6, ii+9,
    # whose bounding boxes [ii, 10) overlap: no tiling gives each point its box
    s = y.schedule().split(i, io, ii, 3).distribute([ii])
    plan = s.compile()
    assert any("not tiled" in n or "whole" in n for n in plan.stats()["notes"])
    plan.run(backend="numpy")
    np.testing.assert_array_equal(y.to_numpy(), np.arange(10.0) * 3)


def test_explain_reports_bytes_received_per_processor_and_peak_memory() -> None:
    plan = _summa(8, 4)[0].compile()
    data = plan.stats()
    assert data["launch_count"] == 2
    # Each step a processor needs a 4x4 block of B and one of C; over the two steps it holds
    # one of the two B blocks of its row and one of the two C blocks of its column, so it
    # receives 2 blocks of 16 doubles. (0,0) gets both at step 1, (0,1) one at each step.
    assert data["received_bytes"] == {p: 2 * 16 * 8 for p in ("(0,0)", "(0,1)", "(1,0)", "(1,1)")}
    assert data["total_received_bytes"] == 4 * 256
    held = 3 * 16 * 8  # its tile of A, B and C
    assert data["peak_bytes"] == {"(0,0)": held + 256, "(0,1)": held + 128, "(1,0)": held + 128,
                                  "(1,1)": held + 256}
    text = plan.explain()
    assert "launch over (io, jo), sequential steps (ko)" in text
    assert "peak memory" in text and "tile [4, 4]" in text


def test_symbolic_sizes_are_bound_at_compile_time() -> None:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _matmul(10, m)
    s = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, dt.Param("c"))
    s = s.reorder([ko, ii, ji, ki]).communicate([B, C], ko)
    assert s.compile(c=5).launch_count() == 2
    assert "ko = ceiling(10/c) = 2" in str(s.compile(c=5))
    assert s.compile(c=2).launch_count() == 5
    s.compile(c=3).run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_debug_logs_the_ir_after_each_pass(monkeypatch: pytest.MonkeyPatch,
                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("DISTAL_DEBUG", "1")
    with caplog.at_level(logging.DEBUG, logger="distal.lower"):
        _summa()[0].compile()
    text = caplog.text
    for name in ("bind", "nest", "tiling", "task_body", "plan"):
        assert f"after {name}:" in text


def test_printing_a_plan_is_readable() -> None:
    text = str(_summa()[0].compile())
    assert text.splitlines()[0].startswith("plan for ∀io ∀jo ∀ko")
    assert "A: read_write, tile [4, 4] of [2, 2] at (p0, p1)" in text
