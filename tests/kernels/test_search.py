"""Schedule.auto for any statement (distal.kernels.search): what it considers, what it returns, and that the
schedules it builds compute the statement (NumPy plan executor; Legate runs are in test_einsum*.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal import kernels, model, search
from distal.machine.ranks import RANK_LINK
from distal.model.hardware import LEAF_KINDS
from tests._strategies import einsum_oracle, statements

TWO = dt.Machine(dt.Grid(2))


def _contraction(n: int = 24) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(0)
    a, b, c, d, i, j = dt.index_vars("a b c d i j")
    T = dt.Tensor.from_array("T", rng.standard_normal((n, n, n, n)))
    V = dt.Tensor.from_array("V", rng.standard_normal((n, n, n, n)))
    R = dt.Tensor("R", (n, n, n, n))
    R[a, b, c, d] = T[a, b, i, j] * V[c, d, i, j]
    return R, T, V


def test_auto_returns_an_ordinary_schedule_that_replays() -> None:
    R, T, V = _contraction()
    sched = R.schedule().auto(TWO)
    assert sched.trace and sched.trace[0].name == "distribute"
    names = {v.name: v for v in sched.provenance.variables()}
    replayed = eval(sched.trace_text(), {"dt": dt, "R": R, "T": T, "V": V, **names})
    assert replayed == sched
    assert str(sched).startswith("∀")  # concrete index notation with its relations


def test_auto_distributes_the_four_index_contraction_over_every_processor() -> None:
    R, T, V = _contraction()
    plan = R.schedule().auto(TWO).compile()
    assert plan.machine is not None and plan.machine.size == 2
    assert plan.predict(processors=2).idle == 0
    plan.run(backend="numpy")
    want = np.einsum("abij,cdij->abcd", T.to_numpy(), V.to_numpy())
    np.testing.assert_allclose(R.to_numpy(), want, rtol=1e-10, atol=1e-10)
    # its tiles are one GEMM each, as explain says
    leaf = next(line for line in str(plan).splitlines() if "leaf:" in line)
    assert "GEMM [288x576] @ [576x576]" in leaf and "copying" not in leaf


def test_auto_gives_formats_only_to_tensors_without_one() -> None:
    R, T, V = _contraction()
    keep = dt.Format("abcd -> *", TWO)
    V.set_format(keep)
    R.schedule().auto(TWO)
    assert V.format == keep
    assert T.format is not None and R.format is not None  # auto's choice: tiles where they are computed


def test_auto_says_why_processors_are_idle_on_a_tiny_statement() -> None:
    i = dt.index_vars("i")[0]
    x, y = dt.Tensor("x", (5,)), dt.Tensor("y", (5,))
    z = dt.Tensor("z", ())
    z[()] = x[i] * y[i]
    sched = z.schedule().auto(TWO)
    assert not sched.trace
    assert "1 of 2 processors idle: the work is too small to pay for spreading it" in sched.notes[0]


def test_explain_lists_the_candidates_with_time_bytes_and_peak() -> None:
    R, _, _ = _contraction()
    text = R.schedule().auto(TWO).compile().explain()
    considered = [line for line in text.splitlines() if "auto: considered" in line]
    assert len(considered) >= 4
    assert all("predicted" in line and "moves" in line and "peak" in line for line in considered)
    assert any("one task on one processor" in line for line in considered)


def test_auto_considers_the_library_for_a_matrix_product() -> None:
    i, j, k = dt.index_vars("i j k")
    A, B, C = (dt.Tensor(n, (64, 64)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    found = kernels.options(A.schedule(), dt.Machine(dt.Grid(4)))
    kinds = {o.kind for o in found}
    assert {"one task", "distributed", "library"} <= kinds
    assert any(o.algorithm == "summa" for o in found) and any(o.grid == (2, 2) for o in found)


def test_build_auto_schedules_a_statement_outside_the_library() -> None:
    R, T, V = _contraction(8)
    sched = kernels.build("auto", TWO, R, T, V)
    assert sched.notes[0].startswith("auto: chose")
    sched.compile().run(backend="numpy")
    np.testing.assert_allclose(R.to_numpy(), np.einsum("abij,cdij->abcd", T.to_numpy(), V.to_numpy()),
                               rtol=1e-10, atol=1e-10)


def test_tiles_over_the_memory_bound_are_fetched_in_steps_of_a_summed_variable() -> None:
    i, j, k = dt.index_vars("i j k")
    A, B, C = (dt.Tensor(n, (64, 64)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    found = kernels.options(A.schedule(), TWO, memory=53_000)
    stepped = [o for o in found if o.split is not None]
    assert stepped and any(o.fits for o in stepped)
    sched = A.schedule().auto(TWO, memory=53_000)
    assert any(c.name == "communicate" for c in sched.trace) and "fits" not in sched.notes[0]
    plan = sched.compile()
    assert plan.predict(processors=2).peak_bytes <= 53_000


def test_only_einsum_considers_running_eagerly_and_a_command_runs_on_legate_again() -> None:
    i = dt.index_vars("i")[0]
    x, y = dt.Tensor("x", (5,)), dt.Tensor("y", (5,))
    z = dt.Tensor("z", ())
    z[()] = x[i] * y[i]
    assert all(o.kind != "eager" for o in kernels.options(z.schedule(), TWO))
    eager = kernels.auto_schedule(z.schedule(), TWO, eager=True)
    assert eager.eager and eager.compile().eager
    io, ii = dt.index_vars("io ii")
    assert eager.divide(i, io, ii, 2).eager == ""


def test_auto_uses_the_model_it_is_given() -> None:
    R, _, _ = _contraction(8)
    here = model.this_machine()
    slow_leaves = replace(here, processor=replace(here.processor, flops=dict.fromkeys(LEAF_KINDS, 1e6), curves={},
                                                  streaming={}))
    slow_tasks = replace(here, task_seconds=10.0, launch_seconds=10.0)

    def best(m: model.MachineModel) -> str:
        found = kernels.options(R.schedule(), TWO, model=m)
        return min((o for o in found if o.fits), key=lambda o: (o.seconds, o.idle)).kind

    assert best(slow_leaves) == "distributed"  # slow leaves: spreading the work pays
    assert best(slow_tasks) == "one task"  # slow tasks: one is cheapest


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
@given(data=st.data())
def test_auto_on_random_statements_equals_einsum(data: st.DataObject) -> None:
    drawn = data.draw(statements(max_extent=9))
    machine = dt.Machine(dt.Grid(data.draw(st.sampled_from([2, 3, 4]))))
    sched = drawn.output.schedule().auto(machine)
    drawn.reset()
    sched.compile().run(backend="numpy")
    want = einsum_oracle(drawn.assignment, drawn.inputs, drawn.output_init)
    got = drawn.output.to_numpy()
    tol = 1e-3 if got.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0.0))))


@pytest.mark.parametrize("machine", [dt.Machine(dt.Grid(2)), dt.Machine(dt.Grid(2, 2)), dt.Machine(dt.Grid(8)),
                                     dt.Machine(dt.Grid(2), dt.Grid(2)), dt.Machine(dt.Grid(3), dt.Grid(1))])
def test_every_candidate_auto_considers_computes_the_statement(machine: dt.Machine) -> None:
    rng = np.random.default_rng(2)
    i, j, k, l = dt.index_vars("i j k l")
    X = dt.Tensor.from_array("X", rng.standard_normal((6, 7, 5)))
    U = dt.Tensor.from_array("U", rng.standard_normal((7, 9)))
    Y = dt.Tensor("Y", (6, 9, 5))
    Y[i, l, k] = X[i, j, k] * U[j, l]
    want = np.einsum("ijk,jl->ilk", X.to_numpy(), U.to_numpy())
    for option in kernels.options(Y.schedule(), machine):
        if option.kind == "library":
            continue
        sched = kernels.realise(option, Y.schedule(), machine, formats=False)
        sched.compile().run(backend="numpy")
        np.testing.assert_allclose(Y.to_numpy(), want, rtol=1e-10, atol=1e-10, err_msg=option.what)


def _batched(m: dt.Machine) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    """A[b,i,k] = B[b,i,j] * C[b,j,k] with B and C placed as a user who split the batch over the nodes would:
    b over the nodes, B's rows (C replicated) over each node's processors."""
    rng = np.random.default_rng(5)
    b, i, j, k = dt.index_vars("b i j k")
    B = dt.Tensor.from_array("B", rng.standard_normal((4, 256, 192)), dt.Format(["bij -> b", "bij -> i"], m))
    C = dt.Tensor.from_array("C", rng.standard_normal((4, 192, 160)), dt.Format(["bjk -> b", "bjk -> *"], m))
    A = dt.Tensor("A", (4, 256, 160))
    A[b, i, k] = B[b, i, j] * C[b, j, k]
    return A, B, C


def _between_nodes(plan: dt.Plan) -> int:
    return plan.stats()["traffic"].split().between_nodes


def test_auto_on_two_levels_keeps_the_traffic_inside_each_node_where_nodes_are_processes() -> None:
    """On Machine(Grid(2), Grid(2)) priced as two ranks (a node is a process: tiles cross between nodes over the
    link between ranks, inside one at the memory's bandwidth), auto distributes the batch over the nodes, where
    B and C already are: nothing crosses between nodes. The shared-memory model of one process reads every
    placed tile in place, so it ties that plan with one distributing i over the nodes, whose plan moves
    B's tiles between nodes, and prefers the other (listed first): the choice comes from pricing the ranks."""
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    one = model.this_machine().with_(name="one-process")  # another name: timed on the machine's 4 processors
    ranks = one.across_ranks(2, 2, RANK_LINK)  # this_machine() on 2 ranks of 2 processors
    A, B, C = _batched(m)
    found = {o.what: o for o in kernels.options(A.schedule(), m, model=ranks)}
    keep = "b distributed over the nodes Grid(2), i over each node's Grid(2)"
    cross = "i distributed over the nodes Grid(2), b over each node's Grid(2)"
    assert keep in found and cross in found, sorted(found)
    assert found[keep].inner and found[keep].vars[0].name == "b"
    # what each of the two plans moves between nodes, as its plan's traffic table counts it
    plans = {what: kernels.realise(found[what], _batched(m)[0].schedule(), m).compile() for what in (keep, cross)}
    assert _between_nodes(plans[keep]) == 0
    assert _between_nodes(plans[cross]) > 0
    # one process's model: the two tie
    flat = {o.what: o for o in kernels.options(A.schedule(), m, model=one)}
    assert flat[keep].seconds == pytest.approx(flat[cross].seconds, rel=1e-6)
    # the ranks' model: the traffic between nodes costs the link between ranks, and auto keeps it inside
    assert found[cross].seconds > found[keep].seconds
    sched = A.schedule().auto(m, model=ranks)
    assert "auto: chose " + keep in "\n".join(sched.notes)
    plan = sched.compile()
    assert plan.machine == m and _between_nodes(plan) == 0
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), np.einsum("bij,bjk->bik", B.to_numpy(), C.to_numpy()), rtol=1e-10,
                               atol=1e-10)


def test_auto_on_a_one_level_machine_considers_flat_grids_only() -> None:
    R, _, _ = _contraction(8)
    assert all(not o.inner for o in kernels.options(R.schedule(), dt.Machine(dt.Grid(2, 2))))


@pytest.mark.filterwarnings("error::distal.DistalPerformanceWarning")  # no candidate leaves a processor idle
@pytest.mark.parametrize("machine", [dt.Machine(dt.Grid(2), dt.Grid(2)), dt.Machine(dt.Grid(2), dt.Grid(1))])
def test_two_level_candidates_with_their_formats_compute_and_count_their_plans_bytes(machine: dt.Machine) -> None:
    """Every two-level candidate, built with its formats (one distribution per level) on fresh tensors: equal to
    einsum, and the bytes its note gives are its realised plan's (issue 34's one byte count)."""
    rng = np.random.default_rng(3)
    x, u = rng.standard_normal((6, 7, 5)), rng.standard_normal((7, 9))
    i, j, k, l = dt.index_vars("i j k l")

    def statement() -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
        X, U, Y = dt.Tensor.from_array("X", x), dt.Tensor.from_array("U", u), dt.Tensor("Y", (6, 9, 5))
        Y[i, l, k] = X[i, j, k] * U[j, l]
        return Y, X, U

    found = [o for o in kernels.options(statement()[0].schedule(), machine) if o.inner]
    assert found
    for option in found:
        Y, X, _ = statement()
        plan = kernels.realise(option, Y.schedule(), machine).compile()
        assert plan.machine == machine and X.format is not None and X.format.machine == machine, option.what
        assert search.moved_bytes(plan) == option.comm_bytes, option.what
        plan.run(backend="numpy")
        np.testing.assert_allclose(Y.to_numpy(), np.einsum("ijk,jl->ilk", x, u), rtol=1e-10, atol=1e-10,
                                   err_msg=option.what)


def test_before_legate_starts_the_default_machine_is_the_launchers_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under mpirun -n 2 with --cpus 3 per rank, before Legate starts: the ranks, then each rank's processors; auto
    times its candidates on all 6 (the run's processors)."""
    from distal.search import auto

    monkeypatch.setattr(auto.rt, "is_started", lambda: False)
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 3 --sysmem 512")
    m = search.default_machine()
    assert m == dt.Machine(dt.Grid(2), dt.Grid(3))
    assert search.timing_processors(m, model.this_machine()) == 6
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE")
    assert search.default_machine() == dt.Machine(dt.Grid(3))
