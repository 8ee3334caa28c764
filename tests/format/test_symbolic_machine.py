"""Symbolic machines (paper Figure 2): `Grid(Param("gx"), Param("gy"))` prints, schedules and binds at compile."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

i, j, k, io, ii, jo, ji, ko, ki = dt.index_vars("i j k io ii jo ji ko ki")
gx, gy, chunk = dt.Param("gx"), dt.Param("gy"), dt.Param("chunkSize")


@pytest.fixture(scope="module")
def legate() -> object:
    """Legate, started once per process with distal's defaults."""
    from distal import runtime as rt

    return rt.ensure_started()


def figure2(n: int = 7) -> tuple[dt.Schedule, dt.Schedule, dt.Machine, dt.Tensor, dt.Tensor, dt.Tensor]:
    """Figure 2's program over Machine(Grid(gx, gy)), and the compound-distribute form of it."""
    m = dt.Machine(dt.Grid(gx, gy))
    f = dt.Format("xy -> xy", m)
    rng = np.random.default_rng(2)
    A = dt.Tensor("A", (n, n), f)
    B = dt.Tensor.from_array("B", rng.random((n, n)), f)
    C = dt.Tensor.from_array("C", rng.random((n, n)), f)
    A[i, j] = B[i, k] * C[k, j]
    fig2 = (A.schedule()
            .divide(i, io, ii, m.x).divide(j, jo, ji, m.y).reorder([io, jo, ii, ji])
            .distribute(io).distribute(jo)
            .split(k, ko, ki, chunk).reorder([io, jo, ko, ii, ji, ki])
            .communicate(A, jo).communicate([B, C], ko))
    compound = A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
    return fig2, compound, m, A, B, C


def test_symbolic_machines_print_with_their_parameter_names() -> None:
    fig2, compound, m, A, _, _ = figure2()
    assert repr(m) == "Machine(Grid(gx, gy))"
    assert m.params == ("gx", "gy")
    assert m.x.size == gx and str(m.x) == "m.x"
    assert repr(A.format) == "Format('xy -> xy', Machine(Grid(gx, gy)))"
    assert str(fig2).splitlines()[1].startswith("s.t. divide(i, io, ii, m.x), divide(j, jo, ji, m.y)")
    assert "distribute({io, jo}, Grid(gx, gy))" in str(compound)
    assert str(compound.provenance.extent_expr(ii)) == "ceiling(7/gx)"
    assert m.bound({"gx": 2, "gy": 3}) == dt.Machine(dt.Grid(2, 3))
    assert dt.Grid(gx, 2, kind="gpu").bound({"gx": 4}) == dt.Grid(4, 2, kind="gpu")
    assert A.format is not None and A.format.bound({"gx": 1, "gy": 3}) == dt.Format("xy -> xy", dt.Machine(dt.Grid(1, 3)))


@pytest.mark.parametrize(("sizes", "chunk_size"), [((2, 2), 2), ((1, 3), 3)])
def test_figure2_compiles_with_the_bound_machine_and_runs_on_the_reference_backend(
        sizes: tuple[int, int], chunk_size: int) -> None:
    fig2, compound, _, A, B, C = figure2()
    binds = {"gx": sizes[0], "gy": sizes[1]}
    for sched, extra in ((fig2, {"chunkSize": chunk_size}), (compound, {})):
        plan = sched.compile(**binds, **extra)
        assert plan.machine is not None and plan.machine.shape == sizes
        assert plan.groups[0].launches[0].upper[:2] == sizes
        A.set_array(np.zeros((7, 7)))
        sched.evaluate(backend="reference", **binds, **extra)
        np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)
        A.set_array(np.zeros((7, 7)))
        plan.run(backend="numpy")
        np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


@pytest.mark.legate
@pytest.mark.parametrize(("sizes", "chunk_size"), [((2, 2), 2), ((1, 3), 3)])
def test_figure2_runs_on_legate(legate: object, sizes: tuple[int, int], chunk_size: int) -> None:
    fig2, compound, _, A, B, C = figure2()
    binds = {"gx": sizes[0], "gy": sizes[1]}
    for sched, extra in ((fig2, {"chunkSize": chunk_size}), (compound, {})):
        A.set_array(np.zeros((7, 7)))
        sched.evaluate(**binds, **extra)
        np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_one_schedule_binds_to_different_machines() -> None:
    _, compound, _, _, _, _ = figure2()
    shapes = {compound.compile(gx=x, gy=y).machine.shape for x, y in ((1, 1), (2, 3), (3, 1))}
    assert shapes == {(1, 1), (2, 3), (3, 1)}


def test_a_schedule_over_a_symbolic_machine_replays_from_its_trace() -> None:
    _, compound, m, A, B, C = figure2()
    text = compound.trace_text()
    assert "dt.Machine(dt.Grid(dt.Param('gx'), dt.Param('gy')))" in text
    namespace = {"dt": dt, "A": A, "B": B, "C": C, "m": m}
    namespace.update({v.name: v for v in (i, j, io, ii, jo, ji)})
    assert eval(text, namespace) == compound
    named = dt.Grid(gx, 3, names="ab", kind="gpu")
    assert eval(dt.schedule.trace.python(named), {"dt": dt}) == named


def _figure9_summa(m: dt.Machine, n: int = 64) -> tuple[dt.Schedule, dt.Tensor, dt.Tensor, dt.Tensor]:
    """SUMMA as paper Figure 9 writes it: formats and distribute on the machine `m`."""
    f = dt.Format("xy -> xy", m)
    rng = np.random.default_rng(9)
    A = dt.Tensor("A", (n, n), f)
    B = dt.Tensor.from_array("B", rng.random((n, n)), f)
    C = dt.Tensor.from_array("C", rng.random((n, n)), f)
    A[i, j] = B[i, k] * C[k, j]
    s = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, n // 4)
         .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
         .substitute([ii, ji, ki], dt.leaf.GEMM))
    return s, A, B, C


def test_formats_on_a_symbolic_machine_place_data_on_the_machine_the_plan_binds() -> None:
    # issue 27 item 4: on main the symbolic formats placed nothing on the bound Grid(2, 2), so every
    # processor received 32768 B (all of its B row block and C column block) instead of 16384 B
    symbolic, *_ = _figure9_summa(dt.Machine(dt.Grid(gx, gy)))
    concrete, *_ = _figure9_summa(dt.Machine(dt.Grid(2, 2)))
    got, want = symbolic.compile(gx=2, gy=2).stats(), concrete.compile().stats()
    assert got["received_bytes"] == want["received_bytes"] == dict.fromkeys(
        ("(0,0)", "(0,1)", "(1,0)", "(1,1)"), 2 * 32 * 32 * 8)
    assert got["placement"] == want["placement"] and got["global_store_bytes"] == {}
    plan = symbolic.compile(gx=2, gy=2)
    assert [info.tensor.format for info in plan.tensors] == [dt.Format("xy -> xy", dt.Machine(dt.Grid(2, 2)))] * 3
    assert "does not place it" not in plan.explain()
    # the schedule itself keeps its symbolic formats; only its plans are bound
    assert all(v.format is not None and v.format.params == ("gx", "gy") for v in symbolic.tensors())
    assert symbolic.formats_bound({"gx": 1}) is symbolic  # gy unbound: nothing bound


@pytest.mark.legate
def test_figure9_with_symbolic_formats_runs_on_legate_placed_on_the_bound_machine(legate: object) -> None:
    sched, A, B, C = _figure9_summa(dt.Machine(dt.Grid(gx, gy)), n=12)
    for sizes in ((2, 2), (1, 3)):
        sched.evaluate(gx=sizes[0], gy=sizes[1])
        np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)
